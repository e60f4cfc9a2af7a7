package views

import (
	"context"
	dbsql "database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"trueup/ledger"
	tsql "trueup/sql"
)

// execute carries out a planned publish whose tables the caller holds. On an engine that notes
// its views it is executeNoted. Elsewhere: intent in the ledger, one Engine.RepointViews call,
// outcome in the ledger. The ledger and the warehouse are separate databases, so the view change
// cannot commit in the ledger's transaction; the intent and the outcome bracket it, and Recover
// settles an intent left without an outcome by a crash.
func (s *Service) execute(ctx context.Context, h *holder, p Publish, gate []GateCheck) (Publish, error) {
	if nr, ok := s.noted(); ok {
		p, _, err := s.executeNoted(ctx, nr, h, p, gate, false)
		return p, err
	}
	if err := s.recordIntent(ctx, h, &p); err != nil {
		return p, err
	}
	return s.complete(ctx, h, p, gate)
}

// recordIntent writes p's intent and the ledger lock rows of its tables, in one transaction.
func (s *Service) recordIntent(ctx context.Context, h *holder, p *Publish) error {
	p.StartedAt = s.ledger.Now()
	p.State = PublishIntent
	// The swaps row is the intent; the audit entry is written with the outcome, carrying both
	// ends and the duration.
	err := s.ledger.Tx(ctx, func(tx *dbsql.Tx) error { return s.insertIntent(ctx, tx, p) })
	if err != nil {
		// A lock row may hold a table: an intent a crash left.
		if held, herr := s.ledgerHolder(ctx, p.Tables()...); herr == nil && held != nil {
			return held
		}
		return fmt.Errorf("views: %s %s: %w", p.Kind, p.Table, err)
	}
	s.setSwapID(h, p.ID)
	return nil
}

// complete repoints the views of p, whose intent is recorded and whose tables the caller holds
// through h, and records the outcome. When the repoint reports an error and the views cannot be
// read back, nobody can tell whether they moved: the intent stays as it is, with its lock rows,
// and the tables stay held (keepHeld) until start-up recovery settles it from the views.
func (s *Service) complete(ctx context.Context, h *holder, p Publish, gate []GateCheck) (Publish, error) {
	if s.hooks.AfterIntent != nil {
		s.hooks.AfterIntent(p)
	}
	// The repoint must not be abandoned half-way because the caller went away: it is short,
	// and the outcome must be recorded whatever happens to the request.
	ctx = context.WithoutCancel(ctx)
	points := make([]tsql.ViewPoint, len(p.Changes))
	for i, c := range p.Changes {
		points[i] = tsql.ViewPoint{View: c.Table, Table: Physical(c.Table, c.To)}
	}
	repointErr := s.engine.RepointViews(ctx, points)
	if s.hooks.AfterRepoint != nil {
		s.hooks.AfterRepoint(p)
	}
	p.State, p.Detail = PublishDone, ""
	if repointErr != nil {
		var readErr error
		if p, readErr = s.settleFailure(ctx, p, repointErr); readErr != nil {
			s.keepHeld(h)
			return p, fmt.Errorf("views: %s %s #%d: %w; reading the views back failed too (%v): it stays recorded as an intent and the tables stay held until a restart lets recovery settle it from the views",
				p.Kind, p.Table, p.ID, repointErr, readErr)
		}
	}
	p.FinishedAt = s.ledger.Now()
	if err := s.recordOutcome(ctx, &p, gate, false); err != nil {
		return p, err
	}
	if p.State != PublishDone {
		return p, fmt.Errorf("views: %s %s: %w", p.Kind, p.Table, repointErr)
	}
	return p, nil
}

// settleFailure decides what a failed repoint left behind. Where the engine changed some views
// and not others (ClickHouse from 19.5 repoints one view per statement), the changed ones are
// put back, so that a failed publish leaves every table as it was. It returns the error of
// reading the views back when it cannot tell what the repoint did: then nothing may be recorded
// (a publish written failed whose views moved would disagree with them for good).
func (s *Service) settleFailure(ctx context.Context, p Publish, cause error) (Publish, error) {
	at, err := s.actual(ctx, p.Changes)
	if err != nil {
		return p, err
	}
	switch classify(p.Changes, at) {
	case allTo:
		p.State, p.Detail = PublishDone, fmt.Sprintf("the engine reported %v, but every view reads its new version", cause)
		return p, nil
	case allFrom:
		p.State, p.Detail = PublishFailed, "repoint failed: "+cause.Error()
		return p, nil
	}
	var back []tsql.ViewPoint
	for _, c := range p.Changes {
		if at[c.Table] == c.To && c.From != 0 {
			back = append(back, tsql.ViewPoint{View: c.Table, Table: Physical(c.Table, c.From)})
		}
	}
	p.State, p.Detail = PublishFailed, "repoint failed part-way: "+cause.Error()
	if err := s.engine.RepointViews(ctx, back); err != nil {
		p.Detail += fmt.Sprintf("; putting the views back failed too (%v): start-up recovery will repair the ledger", err)
	} else {
		p.Detail += "; the views it had changed were put back"
	}
	return p, nil
}

// recordOutcome writes p's outcome: its state, the versions' states, the released locks and the
// audit entries, in one ledger transaction. With fresh, p has no intent in the ledger (it was
// carried out with notes): its row is written now, and p gets its id.
func (s *Service) recordOutcome(ctx context.Context, p *Publish, gate []GateCheck, fresh bool) error {
	err := s.ledger.Tx(ctx, func(tx *dbsql.Tx) error { return s.outcomeIn(ctx, tx, p, gate, fresh) })
	if err != nil {
		return fmt.Errorf("views: record outcome of %s #%d (start-up recovery will settle it): %w", p.Kind, p.ID, err)
	}
	return nil
}

// outcomeIn writes what recordOutcome does, in tx.
func (s *Service) outcomeIn(ctx context.Context, tx *dbsql.Tx, p *Publish, gate []GateCheck, fresh bool) error {
	if err := s.outcomeStates(ctx, tx, p, gate, fresh); err != nil {
		return err
	}
	return s.outcomeAudit(ctx, tx, *p, gate)
}

// outcomeStates writes p's row and, when it is done, the versions' states, in tx.
func (s *Service) outcomeStates(ctx context.Context, tx *dbsql.Tx, p *Publish, gate []GateCheck, fresh bool) error {
	if err := s.writeOutcome(ctx, tx, p, fresh); err != nil {
		return err
	}
	if p.State == PublishDone {
		return s.applyStates(ctx, tx, *p, gate)
	}
	return nil
}

// outcomeAudit writes p's audit entries, with its duration, in tx.
func (s *Service) outcomeAudit(ctx context.Context, tx *dbsql.Tx, p Publish, gate []GateCheck) error {
	outcome := ledger.OutcomeFailed
	if p.State == PublishDone {
		outcome = ledger.OutcomeOK
	}
	if _, err := s.ledger.AuditTx(ctx, tx, s.auditEntry(p, outcome, gate)); err != nil {
		return err
	}
	if p.State == PublishDone && p.OverrideBy != "" {
		e := s.auditEntry(p, ledger.OutcomeOK, gate)
		e.Action, e.Detail = "view.override", p.OverrideReason
		if _, err := s.ledger.AuditTx(ctx, tx, e); err != nil {
			return err
		}
	}
	return nil
}

// applyStates moves the versions of a done publish: each old live version becomes previous and
// each new one live, carrying the override to the versions that needed it.
func (s *Service) applyStates(ctx context.Context, tx *dbsql.Tx, p Publish, gate []GateCheck) error {
	failed := map[string]bool{}
	for _, g := range gate {
		if !g.Passed {
			failed[g.Table] = true
		}
	}
	var cs []stateChange
	for _, c := range p.Changes {
		if c.From != 0 && c.From != c.To {
			cs = append(cs, stateChange{table: c.Table, n: c.From, state: StatePrevious})
		}
		to := stateChange{table: c.Table, n: c.To, state: StateLive}
		if failed[c.Table] {
			to.overrideBy, to.overrideReason = p.OverrideBy, p.OverrideReason
		}
		cs = append(cs, to)
	}
	return s.store.setStates(ctx, tx, s.target, cs)
}

func (s *Service) auditEntry(p Publish, outcome string, gate []GateCheck) ledger.Entry {
	params := map[string]any{
		"target": s.target, "swap": p.ID, "changes": p.Changes, "reason": p.Reason,
		"duration_ms": p.Duration().Milliseconds(),
	}
	if p.Backfill != "" {
		params["backfill"], params["run_id"] = p.Backfill, p.RunID
	}
	if p.OverrideBy != "" {
		params["override_by"], params["override_reason"] = p.OverrideBy, p.OverrideReason
	}
	if p.Undoes != 0 {
		params["undoes"] = p.Undoes
	}
	if len(gate) > 0 {
		params["gate"] = gate
	}
	detail := p.Summary()
	if p.Detail != "" {
		detail += ": " + p.Detail
	}
	return ledger.Entry{Actor: p.Actor, Action: "view." + p.Kind, Target: p.Table, Params: params, Outcome: outcome, Detail: detail}
}

// after tells the listener about a done publish and, after a swap, applies automatic retention.
// Failures here do not undo the publish; they are logged, audited and returned as warnings.
func (s *Service) after(ctx context.Context, p *Publish) {
	if s.hooks.AfterOutcome != nil {
		s.hooks.AfterOutcome(*p)
	}
	if err := s.tell(ctx, *p); err != nil {
		s.warn(ctx, p, "notify", err)
	}
	if p.Kind == KindSwap && s.autoRetire && s.keep > 0 {
		for _, t := range p.Tables() {
			if _, err := s.ApplyRetention(ctx, t, actor); err != nil {
				s.warn(ctx, p, "retention of "+t, err)
			}
		}
	}
}

func (s *Service) warn(ctx context.Context, p *Publish, what string, err error) {
	msg := fmt.Sprintf("%s after %s #%d failed: %v", what, p.Kind, p.ID, err)
	p.Warnings = append(p.Warnings, msg)
	s.log.Warn("views: "+msg, "target", s.target, "table", p.Table)
	s.ledger.Audit(ctx, ledger.Entry{Actor: actor, Action: "view." + p.Kind + ".after", Target: p.Table,
		Outcome: ledger.OutcomeFailed, Params: map[string]any{"target": s.target, "swap": p.ID}, Detail: msg})
}

// actual reads which version each changed table's view reads now (-1: something that is not
// one of its versions).
func (s *Service) actual(ctx context.Context, changes []Change) (map[string]int, error) {
	tables := make([]string, len(changes))
	for i, c := range changes {
		tables[i] = c.Table
	}
	sts, err := s.inspect(ctx, tables...)
	if err != nil {
		return nil, err
	}
	at := map[string]int{}
	for _, t := range tables {
		at[t] = sts[t].live
		if sts[t].foreign != "" {
			at[t] = -1
		}
	}
	return at, nil
}

type where int

const (
	allFrom where = iota
	allTo
	mixed // some at From, some at To, none elsewhere
	elsewhere
)

// classify says where a publish's views are: all still at From, all at To, a mix of the two, or
// somewhere neither (changed by someone else).
func classify(changes []Change, at map[string]int) where {
	from, to := 0, 0
	for _, c := range changes {
		switch at[c.Table] {
		case c.To:
			to++
		case c.From:
			from++
		default:
			return elsewhere
		}
	}
	switch {
	case to == len(changes):
		return allTo
	case from == len(changes):
		return allFrom
	}
	return mixed
}

// validationSummary renders a version's validation record for a gate message. It reads the
// backfill runner's record (failing rules, tables whose diff missed its expectations, errors)
// and otherwise a "summary" or "message" field, else the record itself, shortened.
func validationSummary(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var rec struct {
		Rules []struct {
			Rule, Table, Severity, Status string
			Violations                    int64
		}
		Tables []struct {
			Table           string
			ExpectationsMet bool `json:"expectations_met"`
			Expect          string
		}
		Errors           []string
		Summary, Message string
	}
	if json.Unmarshal(raw, &rec) != nil {
		return shorten(string(raw))
	}
	var parts []string
	for _, r := range rec.Rules {
		if r.Status != "pass" && r.Severity != "warn" && r.Severity != "warning" {
			parts = append(parts, fmt.Sprintf("rule %s on %s: %s (%d violations)", r.Rule, r.Table, r.Status, r.Violations))
		}
	}
	for _, t := range rec.Tables {
		if !t.ExpectationsMet {
			parts = append(parts, fmt.Sprintf("%s: diff does not meet %q", t.Table, t.Expect))
		}
	}
	parts = append(parts, rec.Errors...)
	switch {
	case len(parts) > 0:
		return shorten(strings.Join(parts, ", "))
	case rec.Summary != "":
		return rec.Summary
	case rec.Message != "":
		return rec.Message
	}
	return shorten(string(raw))
}

func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
