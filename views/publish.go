package views

import (
	"cmp"
	"context"
	dbsql "database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"trueup/ledger"
)

// Kinds of publish.
const (
	KindSwap     = "swap"
	KindRollback = "rollback"
	// KindAdopt and KindUnadopt: adopt.go
)

// States of a publish in the ledger.
const (
	PublishIntent    = "intent"    // recorded before the views are repointed
	PublishDone      = "done"      // the views were repointed and the versions' states follow
	PublishFailed    = "failed"    // the engine refused; the views were left (or put back) as they were
	PublishAbandoned = "abandoned" // found after a crash with the views untouched
)

// Change is one logical table's move in a publish: its view read version From before and reads
// To after. From is 0 when the view did not exist.
type Change struct {
	Table string `json:"table"`
	From  int    `json:"from"`
	To    int    `json:"to"`
}

func (c Change) String() string {
	from := "(none)"
	if c.From != 0 {
		from = fmt.Sprintf("v%d", c.From)
	}
	if c.To == 0 {
		return fmt.Sprintf("%s %s → (a plain table)", c.Table, from)
	}
	return fmt.Sprintf("%s %s → v%d", c.Table, from, c.To)
}

// Publish is one swap or rollback: the views it moved together, in one Engine.RepointViews call.
type Publish struct {
	ID             int64     `json:"id"`
	Kind           string    `json:"kind"`
	State          string    `json:"state"`
	Target         string    `json:"target"`
	Table          string    `json:"table"` // the table the operator named
	Backfill       string    `json:"backfill,omitempty"`
	RunID          int64     `json:"run_id,omitempty"`
	Changes        []Change  `json:"changes"`
	Actor          string    `json:"actor"`
	Reason         string    `json:"reason,omitempty"`
	OverrideBy     string    `json:"override_by,omitempty"`
	OverrideReason string    `json:"override_reason,omitempty"`
	Undoes         int64     `json:"undoes,omitempty"`    // a rollback: the swap it took back
	UndoneBy       int64     `json:"undone_by,omitempty"` // a swap: the rollback that took it back
	StartedAt      time.Time `json:"started_at"`
	FinishedAt     time.Time `json:"finished_at,omitzero"`
	Detail         string    `json:"detail,omitempty"`
	// Warnings are problems after the outcome was recorded (a listener or retention failed).
	Warnings []string `json:"warnings,omitempty"`
	// Token ties a publish carried out with notes (executeNoted) to the notes on its views.
	Token string `json:"-"`
}

// Duration is how long the publish took from intent to outcome.
func (p Publish) Duration() time.Duration {
	if p.FinishedAt.IsZero() {
		return 0
	}
	return p.FinishedAt.Sub(p.StartedAt)
}

// Tables lists the tables the publish moves, in repoint order.
func (p Publish) Tables() []string {
	out := make([]string, len(p.Changes))
	for i, c := range p.Changes {
		out[i] = c.Table
	}
	return out
}

// Summary says what the publish moves, e.g. "orders v1 → v2, daily_revenue v1 → v2".
func (p Publish) Summary() string {
	parts := make([]string, len(p.Changes))
	for i, c := range p.Changes {
		parts[i] = c.String()
	}
	return strings.Join(parts, ", ")
}

// change returns the publish's change of table.
func (p Publish) change(table string) (Change, bool) {
	for _, c := range p.Changes {
		if c.Table == table {
			return c, true
		}
	}
	return Change{}, false
}

const publishCols = `id, kind, state, target, table_name, backfill, run_id, CAST(changes AS VARCHAR), actor, reason,
	override_by, override_reason, undoes, undone_by, started_at, finished_at, detail, coalesce(token, '')`

func scanPublish(row interface{ Scan(...any) error }) (Publish, error) {
	var p Publish
	var changes string
	var finished dbsql.NullTime
	err := row.Scan(&p.ID, &p.Kind, &p.State, &p.Target, &p.Table, &p.Backfill, &p.RunID, &changes, &p.Actor, &p.Reason,
		&p.OverrideBy, &p.OverrideReason, &p.Undoes, &p.UndoneBy, &p.StartedAt, &finished, &p.Detail, &p.Token)
	if err != nil {
		return p, err
	}
	p.StartedAt = p.StartedAt.UTC()
	if finished.Valid {
		p.FinishedAt = finished.Time.UTC()
	}
	if err := json.Unmarshal([]byte(changes), &p.Changes); err != nil {
		return p, fmt.Errorf("views: swap %d changes: %w", p.ID, err)
	}
	return p, nil
}

// queryPublishes returns the swaps and rollbacks matching where, newest first. They are sorted
// here rather than by the ledger: a sort is a good part of what a small DuckDB query costs
// (0.9 against 0.6 ms), and every swap and rollback reads them while readers load the machine.
func (s *Service) queryPublishes(ctx context.Context, where string, args ...any) ([]Publish, error) {
	st, err := s.ledger.Prepared(ctx, "SELECT "+publishCols+" FROM swaps WHERE "+where)
	if err != nil {
		return nil, fmt.Errorf("views: swaps: %w", err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("views: swaps: %w", err)
	}
	ps, err := ledger.Collect(rows, scanPublish)
	slices.SortFunc(ps, func(a, b Publish) int { return cmp.Compare(b.ID, a.ID) })
	return ps, err
}

// History lists the swaps and rollbacks that moved table, newest first (limit ≤ 0: all).
func (s *Service) History(ctx context.Context, table string, limit int) ([]Publish, error) {
	all, err := s.queryPublishes(ctx, "target = ?", s.target)
	if err != nil {
		return nil, err
	}
	var out []Publish
	for _, p := range all {
		if _, ok := p.change(table); ok {
			out = append(out, p)
			if limit > 0 && len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

// GetPublish returns one swap or rollback by id.
func (s *Service) GetPublish(ctx context.Context, id int64) (Publish, error) {
	ps, err := s.queryPublishes(ctx, "target = ? AND id = ?", s.target, id)
	if err != nil {
		return Publish{}, err
	}
	if len(ps) == 0 {
		return Publish{}, notFoundf("no swap #%d in target %s", id, s.target)
	}
	return ps[0], nil
}

// inEffect is the newest completed swap of table that no rollback has taken back: what a
// rollback of table would undo. ok is false when there is none.
func (s *Service) inEffect(ctx context.Context, table string) (Publish, bool, error) {
	ps, err := s.queryPublishes(ctx, "target = ? AND kind = ? AND state = ? AND undone_by = 0",
		s.target, KindSwap, PublishDone)
	if err != nil {
		return Publish{}, false, err
	}
	for _, p := range ps {
		if _, ok := p.change(table); ok {
			return p, true, nil
		}
	}
	return Publish{}, false, nil
}

// pending lists intents without an outcome.
func (s *Service) pending(ctx context.Context) ([]Publish, error) {
	ps, err := s.queryPublishes(ctx, "target = ? AND state = ?", s.target, PublishIntent)
	slices.Reverse(ps) // oldest first
	return ps, err
}

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

// finishedAt records p's finish time in tx.
func (s *Service) finishedAt(ctx context.Context, tx *dbsql.Tx, p Publish) error {
	st, err := s.ledger.In(ctx, tx, `UPDATE swaps SET finished_at = ? WHERE id = ?`)
	if err == nil {
		_, err = st.ExecContext(ctx, p.FinishedAt, p.ID)
	}
	if err != nil {
		return fmt.Errorf("views: record when #%d finished: %w", p.ID, err)
	}
	return nil
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

// ledgerHolder reads the ledger lock row of one of tables, if any: an intent of another Service
// on this ledger, or one a crash left that recovery could not settle yet.
func (s *Service) ledgerHolder(ctx context.Context, tables ...string) (*ConflictError, error) {
	err := s.recordedHolders(ctx)(tables)
	if c, ok := errors.AsType[*ConflictError](err); ok {
		return c, nil
	}
	return nil, err
}

// recordedHolders starts reading the ledger's lock rows of the target, while the caller reads
// something else. The function it returns waits for them and returns the first that holds one of
// tables as a *ConflictError. A publish that records no intent (executeNoted) takes no lock row,
// but one may be there — an intent a crash left that recovery could not settle — and holds.
func (s *Service) recordedHolders(ctx context.Context) func(tables []string) error {
	var rows []*ConflictError
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		var st *dbsql.Stmt
		if st, err = s.ledger.Prepared(ctx, `SELECT table_name, holder, kind, swap_id, since FROM view_locks
			WHERE target = ?`); err != nil {
			return
		}
		var rs *dbsql.Rows
		if rs, err = st.QueryContext(ctx, s.target); err != nil {
			return
		}
		rows, err = ledger.Collect(rs, func(r ledger.Scanner) (*ConflictError, error) {
			c := &ConflictError{Recorded: true}
			return c, r.Scan(&c.Table, &c.Holder, &c.Kind, &c.SwapID, &c.Since)
		})
	}()
	return func(tables []string) error {
		<-done
		if err != nil {
			return fmt.Errorf("views: read the ledger's locks: %w", err)
		}
		for _, t := range tables { // the first of tables that is held, whatever order the rows came in
			for _, c := range rows {
				if c.Table == t {
					return c
				}
			}
		}
		return nil
	}
}

// finishPublish records p's final state in tx (a done rollback also marks the swap it took back)
// and releases its ledger locks.
func (s *Service) finishPublish(ctx context.Context, tx *dbsql.Tx, p Publish) error {
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
	st, err = s.ledger.In(ctx, tx, `DELETE FROM view_locks WHERE swap_id = ?`)
	if err == nil {
		_, err = st.ExecContext(ctx, p.ID)
	}
	if err != nil {
		return fmt.Errorf("views: release locks of #%d: %w", p.ID, err)
	}
	return nil
}
