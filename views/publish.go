package views

import (
	"context"
	dbsql "database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"trueup/ledger"
)

// The ledger rows a publish writes: its intent with the tables' lock rows (intentFirst), and its
// outcome — the row's final state, the versions' states and the audit entries — in one ledger
// transaction, or, carried out with notes, while the engine repoints (pendingOutcome).

// insertPublish records p, in the state it is in, in tx, and sets its id.
func (s *Service) insertPublish(ctx context.Context, tx *dbsql.Tx, p *Publish) error {
	changes, err := json.Marshal(p.Changes)
	if err != nil {
		return err
	}
	var finished *time.Time
	if !p.FinishedAt.IsZero() {
		finished = &p.FinishedAt
	}
	st, err := s.ledger.In(ctx, tx, `INSERT INTO swaps (target, table_name, kind, state, actor, reason, override_by,
		override_reason, backfill, run_id, changes, undoes, started_at, finished_at, detail, token)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`)
	if err == nil {
		err = st.QueryRowContext(ctx, p.Target, p.Table, p.Kind, p.State, p.Actor, p.Reason, p.OverrideBy, p.OverrideReason,
			p.Backfill, p.RunID, string(changes), p.Undoes, p.StartedAt, finished, p.Detail, p.Token).Scan(&p.ID)
	}
	if err != nil {
		return fmt.Errorf("views: record %s of %s: %w", p.Kind, p.Table, err)
	}
	return nil
}

// insertIntent records p as an intent and takes the ledger lock rows of its tables, in tx.
func (s *Service) insertIntent(ctx context.Context, tx *dbsql.Tx, p *Publish) error {
	p.State = PublishIntent
	if err := s.insertPublish(ctx, tx, p); err != nil {
		return err
	}
	values := make([]string, len(p.Changes))
	args := make([]any, 0, 6*len(p.Changes))
	for i, c := range p.Changes {
		values[i] = "(?, ?, ?, ?, ?, ?)"
		args = append(args, p.Target, c.Table, p.ID, p.Actor, p.Kind, p.StartedAt)
	}
	st, err := s.ledger.In(ctx, tx, `INSERT INTO view_locks (target, table_name, swap_id, holder, kind, since)
		VALUES `+strings.Join(values, ", "))
	if err == nil {
		_, err = st.ExecContext(ctx, args...)
	}
	if err != nil {
		return fmt.Errorf("views: lock %s: %w", strings.Join(p.Tables(), ", "), err)
	}
	return nil
}

// writeOutcome records p's final state in tx: over its intent (finishPublish), or, when fresh,
// as a new row (a publish carried out with notes), with the swap a done rollback took back marked.
func (s *Service) writeOutcome(ctx context.Context, tx *dbsql.Tx, p *Publish, fresh bool) error {
	if !fresh {
		return s.finishPublish(ctx, tx, *p)
	}
	if err := s.insertPublish(ctx, tx, p); err != nil {
		return err
	}
	return s.markUndone(ctx, tx, *p)
}

// markUndone records, in tx, that p, a done rollback, took back the swap p.Undoes.
func (s *Service) markUndone(ctx context.Context, tx *dbsql.Tx, p Publish) error {
	if p.Kind != KindRollback || p.State != PublishDone || p.Undoes == 0 {
		return nil
	}
	st, err := s.ledger.In(ctx, tx, `UPDATE swaps SET undone_by = ? WHERE id = ?`)
	if err == nil {
		_, err = st.ExecContext(ctx, p.ID, p.Undoes)
	}
	if err != nil {
		return fmt.Errorf("views: record that #%d took back #%d: %w", p.ID, p.Undoes, err)
	}
	return nil
}

// finishPublish records p's final state in tx (finishRow) and releases its ledger locks.
func (s *Service) finishPublish(ctx context.Context, tx *dbsql.Tx, p Publish) error {
	if err := s.finishRow(ctx, tx, p); err != nil {
		return err
	}
	st, err := s.ledger.In(ctx, tx, `DELETE FROM view_locks WHERE swap_id = ?`)
	if err == nil {
		_, err = st.ExecContext(ctx, p.ID)
	}
	if err != nil {
		return fmt.Errorf("views: release locks of #%d: %w", p.ID, err)
	}
	return nil
}

// finishRow records p's state, finish time and detail on its row in tx and, when p is a done
// rollback, that it took back the swap p.Undoes: one statement.
func (s *Service) finishRow(ctx context.Context, tx *dbsql.Tx, p Publish) error {
	undoes := int64(0) // no swap has id 0
	if p.Kind == KindRollback && p.State == PublishDone {
		undoes = p.Undoes
	}
	st, err := s.ledger.In(ctx, tx, `UPDATE swaps SET
			state = CASE WHEN id = $1 THEN CAST($2 AS VARCHAR) ELSE state END,
			finished_at = CASE WHEN id = $1 THEN CAST($3 AS TIMESTAMP) ELSE finished_at END,
			detail = CASE WHEN id = $1 THEN CAST($4 AS VARCHAR) ELSE detail END,
			undone_by = CASE WHEN id = $5 THEN $1 ELSE undone_by END
		WHERE id IN ($1, $5)`)
	if err == nil {
		_, err = st.ExecContext(ctx, p.ID, p.State, p.FinishedAt, p.Detail, undoes)
	}
	if err != nil {
		return fmt.Errorf("views: record outcome of #%d: %w", p.ID, err)
	}
	return nil
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
	h.swapID.Store(p.ID)
	return nil
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
	if carried := p.CarriedSummary(); carried != "" {
		detail += " (" + carried + ")"
	}
	if left := p.NotCarriedSummary(); left != "" {
		detail += " (not carried, inside the backfill's scope: " + left + ")"
	}
	if p.Detail != "" {
		detail += ": " + p.Detail
	}
	return ledger.Entry{Actor: p.Actor, Action: "view." + p.Kind, Target: p.Table, Params: params, Outcome: outcome, Detail: detail}
}

// pendingOutcome is a done publish's outcome being written in a ledger transaction of its own
// while the engine repoints: the versions' states first, then, given the finish time, the rest
// (its row, whole — an INSERT keeps its plan where an UPDATE of the row would be planned again —
// with, for a rollback, the swap it took back, and the audit entries).
// It is the one ledger transaction not run through ledger.Tx: it is opened in one call and
// committed or thrown away in another, with the repoint in between.
type pendingOutcome struct {
	s      *Service
	p      *Publish
	gate   []GateCheck
	ready  chan struct{} // closed when the first part is written, or failed (err)
	tx     *dbsql.Tx
	err    error
	closed bool // committed or thrown away
}

// prepareOutcome starts writing p's outcome (fresh, done) at once: the versions' states.
func (s *Service) prepareOutcome(ctx context.Context, p *Publish, gate []GateCheck) *pendingOutcome {
	o := &pendingOutcome{s: s, p: p, gate: gate, ready: make(chan struct{})}
	go func() {
		defer close(o.ready)
		if o.tx, o.err = s.ledger.DB().BeginTx(ctx, nil); o.err != nil {
			return
		}
		if o.err = s.applyStates(ctx, o.tx, *p, gate); o.err != nil {
			o.tx.Rollback()
		}
	}()
	return o
}

// commit writes p's row with its finish time (and, for a rollback, marks the swap it took back)
// and the audit entries, and commits.
func (o *pendingOutcome) commit(ctx context.Context, finished time.Time) error {
	<-o.ready
	if o.err != nil {
		return o.err
	}
	if o.closed {
		return errors.New("views: the outcome was thrown away")
	}
	o.closed = true
	o.p.FinishedAt = finished
	err := o.s.writeOutcome(ctx, o.tx, o.p, true)
	if err == nil {
		err = o.s.outcomeAudit(ctx, o.tx, *o.p, o.gate)
	}
	if err == nil {
		return o.tx.Commit()
	}
	o.tx.Rollback()
	return err
}

// abandon throws the outcome away, unless it was committed.
func (o *pendingOutcome) abandon() {
	<-o.ready
	if o.err == nil && !o.closed {
		o.closed = true
		o.tx.Rollback()
	}
}

// stateChange is one version's move in setStates.
type stateChange struct {
	table          string
	n              int
	state          string
	overrideBy     string // recorded when not empty
	overrideReason string
}

// setStates moves several versions of target in one statement inside tx, as a done publish moves
// them (each is marked seen live): a publish's outcome moves two versions per table, and every
// statement counts while readers load the machine. The versions and their new states are bound
// as lists, matched by position: DuckDB plans a statement again on every execution when a bound
// value is in an expression, and a list keeps the statement the same size however many versions
// move (450 µs against 750 for four, as CASE arms).
func (s Store) setStates(ctx context.Context, tx *dbsql.Tx, target string, cs []stateChange) error {
	if len(cs) == 0 {
		return nil
	}
	keys, states, bys, whys := make([]string, len(cs)), make([]string, len(cs)), make([]string, len(cs)), make([]string, len(cs))
	override := false
	for i, c := range cs {
		// The number first: it holds no colon, so a table name that does cannot blur the key.
		keys[i], states[i], bys[i], whys[i] = strconv.Itoa(c.n)+":"+c.table, c.state, c.overrideBy, c.overrideReason
		override = override || c.overrideBy != ""
	}
	const pos = "list_position(CAST($1 AS VARCHAR[]), CAST(version AS VARCHAR) || ':' || table_name)"
	set := "state = list_extract(CAST($2 AS VARCHAR[]), " + pos + "), updated_at = CAST($3 AS TIMESTAMP), seen_live = true"
	args := []any{keys, states, s.L.Now(), target}
	if override {
		// An empty one keeps what the version had.
		set += ", override_by = coalesce(nullif(list_extract(CAST($5 AS VARCHAR[]), " + pos + "), ''), override_by)" +
			", override_reason = CASE WHEN list_extract(CAST($5 AS VARCHAR[]), " + pos + ") = '' THEN override_reason" +
			" ELSE list_extract(CAST($6 AS VARCHAR[]), " + pos + ") END"
		args = append(args, bys, whys)
	}
	st, err := s.L.In(ctx, tx, "UPDATE versions SET "+set+" WHERE target = $4 AND "+pos+" > 0")
	if err == nil {
		_, err = st.ExecContext(ctx, args...)
	}
	if err != nil {
		return fmt.Errorf("views: record version states: %w", err)
	}
	return nil
}
