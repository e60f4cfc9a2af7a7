package ledger

import (
	"context"
	dbsql "database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// Outcomes of an audited action.
const (
	OutcomeOK      = "ok"
	OutcomeFailed  = "failed"
	OutcomeRefused = "refused"
	OutcomeStarted = "started"
)

// Entry is one line of the audit log.
type Entry struct {
	ID      int64
	At      time.Time
	Actor   string
	Action  string // e.g. "backfill.run", "view.swap"
	Target  string // what it acted on: a table, a rule, a notice
	Params  map[string]any
	Outcome string
	Detail  string // error text or a short result
}

// Audit appends an entry. The log is append-only: this package has no way to change a row.
func (l *Ledger) Audit(ctx context.Context, e Entry) (int64, error) {
	return l.audit(ctx, nil, e)
}

// AuditTx appends an entry inside tx, so it commits or rolls back with the action it records.
func (l *Ledger) AuditTx(ctx context.Context, tx *dbsql.Tx, e Entry) (int64, error) {
	return l.audit(ctx, tx, e)
}

// audit writes e inside tx, or on its own when tx is nil.
func (l *Ledger) audit(ctx context.Context, tx *dbsql.Tx, e Entry) (int64, error) {
	if e.Actor == "" || e.Action == "" || e.Outcome == "" {
		return 0, fmt.Errorf("ledger: audit entry needs actor, action and outcome")
	}
	if e.At.IsZero() {
		e.At = l.Now()
	}
	params, err := json.Marshal(e.Params)
	if err != nil {
		return 0, fmt.Errorf("ledger: audit params: %w", err)
	}
	var id int64
	st, err := l.In(ctx, tx, `INSERT INTO audit_log (at_time, actor, action, target, params, outcome, detail)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`)
	if err != nil {
		return 0, fmt.Errorf("ledger: audit: %w", err)
	}
	row := st.QueryRowContext(ctx, e.At.UTC(), e.Actor, e.Action, e.Target, string(params), e.Outcome, e.Detail)
	if err := row.Scan(&id); err != nil {
		return 0, fmt.Errorf("ledger: audit: %w", err)
	}
	return id, nil
}

// AuditFilter narrows AuditLog. Zero values match everything.
type AuditFilter struct {
	Action string
	Target string
	Actor  string
	Limit  int // default 100; at most MaxAuditLimit+1
	Offset int
}

// MaxAuditLimit is the largest window of the log a reader may ask for. AuditLog returns one row
// more than that when asked, so a reader of a full window can tell whether more follow.
const MaxAuditLimit = 1000

// AuditLog lists entries newest first. A Limit above MaxAuditLimit+1 gets MaxAuditLimit+1 rows
// (not the default: a reader asking for many gets as many as allowed).
func (l *Ledger) AuditLog(ctx context.Context, f AuditFilter) ([]Entry, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	f.Limit = min(f.Limit, MaxAuditLimit+1)
	out, err := Select(ctx, l.db, scanEntry, `SELECT id, at_time, actor, action, target, CAST(params AS VARCHAR), outcome, detail
		FROM audit_log
		WHERE (? = '' OR action = ?) AND (? = '' OR target = ?) AND (? = '' OR actor = ?)
		ORDER BY id DESC LIMIT ? OFFSET ?`,
		f.Action, f.Action, f.Target, f.Target, f.Actor, f.Actor, f.Limit, f.Offset)
	if err != nil {
		return nil, fmt.Errorf("ledger: audit log: %w", err)
	}
	return out, nil
}

func scanEntry(sc Scanner) (Entry, error) {
	var e Entry
	var params string
	if err := sc.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.Target, &params, &e.Outcome, &e.Detail); err != nil {
		return e, err
	}
	e.At = e.At.UTC()
	if err := json.Unmarshal([]byte(params), &e.Params); err != nil {
		return e, fmt.Errorf("audit %d params: %w", e.ID, err)
	}
	return e, nil
}
