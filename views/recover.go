package views

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"strings"

	"trueup/ledger"
	tsql "trueup/sql"
)

// Repair is one thing recovery found and settled.
type Repair struct {
	Target string `json:"target"`
	Table  string `json:"table"`
	What   string `json:"what"`
}

// Recover runs each service's recovery; call it on start-up, before serving.
func Recover(ctx context.Context, services ...*Service) ([]Repair, error) {
	var all []Repair
	var errs []error
	for _, s := range services {
		r, err := s.Recover(ctx)
		all = append(all, r...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return all, errors.Join(errs...)
}

// Recover makes the ledger agree with the engine after a crash. First a view a repoint that
// stopped part-way left missing is put back and helper views left behind are dropped
// (tidyViews). An intent without an outcome is settled by reading the views: all repointed →
// recorded done; none → abandoned; some (only possible where the engine repoints one view per
// statement) → the remaining views are repointed and the intent recorded done, finishing what was
// asked. The listener is told of done publishes it did not hear of (tellUntold). Then every logical table is adopted and
// repaired (its ledger live version is the one its view reads), and stale lock rows are removed.
// Tables held in this process are left alone.
func (s *Service) Recover(ctx context.Context) ([]Repair, error) {
	var errs []error
	// First the views themselves: one a repoint left missing is put back before anything is
	// settled from what the views read.
	out, err := s.tidyViews(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	// Publishes done before the crash are older than the intents it left: the listener hears of
	// them first.
	told, err := s.tellUntold(ctx)
	out = append(out, told...)
	if err != nil {
		errs = append(errs, err)
	}
	intents, err := s.pending(ctx)
	if err != nil {
		return out, errors.Join(append(errs, err)...)
	}
	unsettled := map[string]bool{}
	for _, p := range intents {
		// An intent that cannot be settled now keeps its lock rows: its tables stay refused
		// (a conflict naming the intent) until a later start-up settles it, and the ledger is
		// not repaired from their views (a half-done swap's nodes read different versions).
		r, err := s.recoverIntent(ctx, p)
		if err != nil {
			errs = append(errs, err)
			for _, t := range p.Tables() {
				unsettled[t] = true
			}
		}
		out = append(out, r...)
	}
	tables, err := List(ctx, s.target, s.engine)
	if err != nil {
		return out, errors.Join(append(errs, err)...)
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.Name
	}
	r, err := s.recoverNotes(ctx, names)
	out = append(out, r...)
	if err != nil {
		errs = append(errs, err)
	}
	for _, t := range tables {
		if unsettled[t.Name] {
			continue
		}
		_, unlock, err := s.lock([]string{t.Name}, actor, "recover")
		if err != nil {
			continue // being swapped right now in this process: not a crash
		}
		before, _ := s.store.List(ctx, s.target, t.Name)
		_, after, err := s.sync(ctx, t.Name, true)
		unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("views: recover %s: %w", t.Name, err))
			continue
		}
		out = append(out, diffStates(s.target, t.Name, before, after)...)
	}
	// Lock rows of intents that are settled are left by a crash during the outcome's own
	// transaction (impossible: it is one transaction) or by an older trueup; remove them.
	if _, err := s.ledger.DB().ExecContext(ctx, `DELETE FROM view_locks WHERE target = ?
		AND swap_id NOT IN (SELECT id FROM swaps WHERE state = ?)`, s.target, PublishIntent); err != nil {
		errs = append(errs, fmt.Errorf("views: clear stale locks: %w", err))
	}
	return out, errors.Join(errs...)
}

// tidyViews puts back the views a repoint that stopped part-way left missing (a RENAME on
// ClickHouse before 19.5 that moved <view> to <view>__old_<suffix> and stopped) and drops the
// helper views it left (tsql.ViewTidier). A view held in this process is left alone: its repoint
// is at work.
func (s *Service) tidyViews(ctx context.Context) ([]Repair, error) {
	t, ok := s.engine.(tsql.ViewTidier)
	if !ok {
		return nil, nil
	}
	left, err := t.LeftViews(ctx)
	if err != nil {
		return nil, fmt.Errorf("views: tidy: %w", err)
	}
	var out []Repair
	var errs []error
	for _, view := range left {
		_, unlock, err := s.lock([]string{view}, actor, "recover")
		if err != nil {
			continue
		}
		did, err := t.TidyViews(ctx, []string{view})
		unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("views: tidy %s: %w", view, err))
		}
		for _, d := range did {
			out = append(out, Repair{Target: s.target, Table: view, What: d})
		}
		if len(did) > 0 {
			s.ledger.Audit(ctx, ledger.Entry{Actor: actor, Action: "view.tidy", Target: view, Outcome: ledger.OutcomeOK,
				Params: map[string]any{"target": s.target}, Detail: strings.Join(did, "; ")})
		}
	}
	return out, errors.Join(errs...)
}

// recoverIntent settles one intent left without an outcome.
func (s *Service) recoverIntent(ctx context.Context, p Publish) ([]Repair, error) {
	h, unlock, err := s.lock(p.Tables(), actor, "recover")
	if err != nil {
		return nil, nil // its owner in this process is still working on it
	}
	defer unlock()
	h.swapID.Store(p.ID)
	if p.Kind == KindAdopt || p.Kind == KindUnadopt {
		settled, err := s.settleAdopt(ctx, p, nil)
		if err != nil {
			return nil, err
		}
		return []Repair{{Target: s.target, Table: p.Table, What: fmt.Sprintf("%s #%d (%s) recovered after a crash: %s %s", p.Kind, p.ID, p.Changes[0], settled.State, settled.Detail)}}, nil
	}
	if nr, ok := s.engine.(tsql.NodeRepointer); ok && s.engine.Info().Cluster != nil {
		return s.settleOnNodes(ctx, nr, p, false, actor, unlock) // node by node (cluster_swap.go)
	}
	at, err := s.actual(ctx, p.Changes)
	if err != nil {
		return nil, err
	}
	switch classify(p.Changes, at) {
	case allTo:
		p.State, p.Detail = PublishDone, "recovered after a crash: every view had been repointed"
	case allFrom:
		p.State, p.Detail = PublishAbandoned, "recovered after a crash: no view had been repointed"
	case mixed:
		var rest []tsql.ViewPoint
		for _, c := range p.Changes {
			if at[c.Table] != c.To {
				rest = append(rest, tsql.ViewPoint{View: c.Table, Table: Physical(c.Table, c.To)})
			}
		}
		if err := s.engine.RepointViews(ctx, rest); err != nil {
			// e.g. a version table dropped since: settle the intent rather than hold its tables
			// on every start-up; the ledger follows the views and an operator decides
			p.State, p.Detail = PublishAbandoned, fmt.Sprintf("recovered after a crash: some views had been repointed and the rest could not be (%v); the ledger follows the views", err)
			break
		}
		p.State, p.Detail = PublishDone, "recovered after a crash: some views had been repointed; the rest were repointed now"
	default:
		p.State, p.Detail = PublishAbandoned, fmt.Sprintf("recovered after a crash: the views read versions neither before nor after (%v); the ledger follows the views", at)
	}
	return s.settleRecovered(ctx, &p, unlock)
}

// settleRecovered settles p, a swap found half done, as p.State; one that is done is let go (its
// tables unlocked) and followed by what a finished swap brings (notes, notices).
func (s *Service) settleRecovered(ctx context.Context, p *Publish, unlock func()) ([]Repair, error) {
	out, err := s.settle(ctx, p, false, nil)
	if err != nil {
		return nil, err
	}
	if p.State == PublishDone {
		unlock()
		s.after(ctx, p)
	}
	return out, nil
}

// settle records p, found after a crash and settled as p.State, with the versions' states and an
// audit entry: over its intent, or (fresh) as a new row. gate is what the gate said when it is
// known (a note keeps it); otherwise an override's gate is read back from the versions' states.
func (s *Service) settle(ctx context.Context, p *Publish, fresh bool, gate []GateCheck) ([]Repair, error) {
	p.FinishedAt = s.ledger.Now()
	if p.OverrideBy != "" && gate == nil {
		// Only versions that needed the override carry it; an intent does not keep the gate, so
		// read it back from the states the versions were in.
		for _, c := range p.Changes {
			if v, err := s.store.Get(ctx, s.target, c.Table, c.To); err == nil && v.State == StateValidationFailed {
				gate = append(gate, GateCheck{Table: c.Table, Version: c.To, State: v.State})
			}
		}
	}
	err := s.ledger.Tx(ctx, func(tx *dbsql.Tx) error {
		if err := s.writeOutcome(ctx, tx, p, fresh); err != nil {
			return err
		}
		if p.State == PublishDone {
			if err := s.applyStates(ctx, tx, *p, gate); err != nil {
				return err
			}
		}
		e := s.auditEntry(*p, ledger.OutcomeOK, gate)
		e.Actor, e.Action = actor, "view.recover"
		e.Params["state"] = p.State
		_, err := s.ledger.AuditTx(ctx, tx, e)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("views: recover %s #%d: %w", p.Kind, p.ID, err)
	}
	var out []Repair
	for _, c := range p.Changes {
		out = append(out, Repair{Target: s.target, Table: c.Table, What: fmt.Sprintf("%s #%d (%s) %s: %s", p.Kind, p.ID, c, p.State, p.Detail)})
	}
	return out, nil
}

// diffStates reports the versions whose state recovery changed or recorded.
func diffStates(target, table string, before, after []Version) []Repair {
	was := map[int]string{}
	for _, v := range before {
		was[v.N] = v.State
	}
	var out []Repair
	for _, v := range after {
		switch old, ok := was[v.N]; {
		case !ok:
			out = append(out, Repair{Target: target, Table: table, What: fmt.Sprintf("%s adopted as %s", v.Name(), v.State)})
		case old != v.State:
			out = append(out, Repair{Target: target, Table: table, What: fmt.Sprintf("%s %s → %s (the view reads v%s)", v.Name(), old, v.State, liveName(after))})
		}
	}
	return out
}

func liveName(vs []Version) string {
	for _, v := range vs {
		if v.State == StateLive {
			return fmt.Sprint(v.N)
		}
	}
	return "?"
}
