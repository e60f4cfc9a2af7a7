package views

import (
	"cmp"
	"context"
	dbsql "database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"trueup/ledger"
)

// A publish — a swap, a rollback, an adopt — as the ledger records it (table swaps), and the reads
// of those records that a plan and the pages make.

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
	// Carried are the partitions the version left gained since the version made live was last
	// alike it, carried into it with the repoint (see carry.go).
	Carried []Carried `json:"carried,omitempty"`
	// NotCarried are the partitions inside the backfill's scope that the version left was written
	// in since it went live: not carried into the version made live (the two differ there by
	// design), so those rows stay where they are, not visible to readers (see carry.go).
	NotCarried []Carried `json:"not_carried,omitempty"`

	plan *carryPlan // while the publish is carried out
}

// Equal compares what a change records, not its carry while under way (for go-cmp in tests,
// and anyone comparing changes).
func (c Change) Equal(o Change) bool {
	return c.Table == o.Table && c.From == o.From && c.To == o.To && slices.EqualFunc(c.Carried, o.Carried, Carried.Equal) &&
		slices.EqualFunc(c.NotCarried, o.NotCarried, Carried.Equal)
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
	// Notices are the change notices the publish moved, as the listener reckoned them (Foreseer),
	// once it has heard of the publish; not recorded in the ledger.
	Notices []NoticeMove `json:"notices,omitempty"`
	// Token ties a publish carried out with notes (noted) to the notes on its views.
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
