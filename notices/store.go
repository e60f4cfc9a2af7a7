package notices

import (
	"context"
	dbsql "database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"trueup/ledger"
)

const noticeCols = `id, state, title, body, revision, target, backfill, run_id, CAST(tables AS VARCHAR),
	CAST(versions AS VARCHAR), CAST(evidence AS VARCHAR), created_at, updated_at`

func scanNotice(row interface{ Scan(...any) error }) (Notice, error) {
	var n Notice
	var tables, versions, evidence string
	err := row.Scan(&n.ID, &n.State, &n.Title, &n.Body, &n.Revision, &n.Target, &n.Backfill, &n.RunID,
		&tables, &versions, &evidence, &n.CreatedAt, &n.UpdatedAt)
	if err != nil {
		return n, err
	}
	n.CreatedAt, n.UpdatedAt = n.CreatedAt.UTC(), n.UpdatedAt.UTC()
	if err := json.Unmarshal([]byte(tables), &n.Tables); err != nil {
		return n, fmt.Errorf("notice %d tables: %w", n.ID, err)
	}
	if err := json.Unmarshal([]byte(versions), &n.Versions); err != nil {
		return n, fmt.Errorf("notice %d versions: %w", n.ID, err)
	}
	if err := json.Unmarshal([]byte(evidence), &n.Evidence); err != nil {
		return n, fmt.Errorf("notice %d evidence: %w", n.ID, err)
	}
	return n, nil
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("notices: marshal %T: %v", v, err)) // only plain structs reach here
	}
	return string(b)
}

// insertNotice stores a new draft with its first revision and transition.
func insertNotice(ctx context.Context, q ledger.Querier, n *Notice, actor string, at time.Time) error {
	tables := n.Tables
	if tables == nil {
		tables = []string{}
	}
	versions := n.Versions
	if versions == nil {
		versions = map[string]int{}
	}
	row := q.QueryRowContext(ctx, `INSERT INTO notices (state, title, body, revision, target, backfill, run_id,
		tables, versions, evidence, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		string(StateDraft), n.Title, n.Body, n.Target, n.Backfill, n.RunID, jsonText(tables), jsonText(versions),
		jsonText(n.Evidence), at, at)
	if err := row.Scan(&n.ID); err != nil {
		return err
	}
	n.State, n.Revision, n.CreatedAt, n.UpdatedAt = StateDraft, 1, at, at
	if err := insertRevision(ctx, q, n.ID, 1, n.Title, n.Body, actor, at); err != nil {
		return err
	}
	return insertTransition(ctx, q, n.ID, "", StateDraft, actor, "", at)
}

func insertRevision(ctx context.Context, q ledger.Querier, id int64, rev int, title, body, actor string, at time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO notice_revisions (notice_id, revision, title, body, at_time, actor)
		VALUES (?, ?, ?, ?, ?, ?)`, id, rev, title, body, at, actor)
	return err
}

func insertTransition(ctx context.Context, q ledger.Querier, id int64, from, to State, actor, reason string, at time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO notice_transitions (notice_id, seq, from_state, to_state, at_time, actor, reason)
		SELECT ?, coalesce(max(seq), 0) + 1, ?, ?, ?, ?, ? FROM notice_transitions WHERE notice_id = ?`,
		id, string(from), string(to), at, actor, reason, id)
	return err
}

// transitionCount is the number of transitions a notice has had: it makes event keys unique
// per transition, so a notice that goes live, is rolled back and goes live again says so twice.
func transitionCount(ctx context.Context, q ledger.Querier, id int64) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM notice_transitions WHERE notice_id = ?`, id).Scan(&n)
	return n, err
}

func getNotice(ctx context.Context, q ledger.Querier, id int64) (Notice, error) {
	n, err := scanNotice(q.QueryRowContext(ctx, "SELECT "+noticeCols+" FROM notices WHERE id = ?", id))
	if errors.Is(err, dbsql.ErrNoRows) {
		return n, fmt.Errorf("notices: notice %d: %w", id, NotFound())
	}
	if err != nil {
		return n, fmt.Errorf("notices: notice %d: %w", id, err)
	}
	if err := loadHistory(ctx, q, &n); err != nil {
		return n, fmt.Errorf("notices: notice %d: %w", id, err)
	}
	return n, nil
}

func loadHistory(ctx context.Context, q ledger.Querier, n *Notice) error {
	var err error
	n.Transitions, err = ledger.Select(ctx, q, scanTransition, `SELECT from_state, to_state, at_time, actor, reason
		FROM notice_transitions WHERE notice_id = ? ORDER BY seq`, n.ID)
	if err != nil {
		return err
	}
	n.Revisions, err = ledger.Select(ctx, q, scanRevision, `SELECT revision, title, body, at_time, actor
		FROM notice_revisions WHERE notice_id = ? ORDER BY revision`, n.ID)
	if err != nil {
		return err
	}
	n.Recipients, err = ledger.Select(ctx, q, scanRecipient, `SELECT recipient, token, added_at, acked_at
		FROM notice_recipients WHERE notice_id = ? ORDER BY recipient`, n.ID)
	return err
}

func scanTransition(sc ledger.Scanner) (Transition, error) {
	var t Transition
	err := sc.Scan(&t.From, &t.To, &t.At, &t.Actor, &t.Reason)
	t.At = t.At.UTC()
	return t, err
}

func scanRevision(sc ledger.Scanner) (Revision, error) {
	var r Revision
	err := sc.Scan(&r.N, &r.Title, &r.Body, &r.At, &r.Actor)
	r.At = r.At.UTC()
	return r, err
}

func scanRecipient(sc ledger.Scanner) (Recipient, error) {
	var r Recipient
	var acked dbsql.NullTime
	err := sc.Scan(&r.ID, &r.Token, &r.AddedAt, &acked)
	r.AddedAt = r.AddedAt.UTC()
	if acked.Valid {
		r.AckedAt = acked.Time.UTC()
	}
	return r, err
}

// listNotices returns every notice newest first, without history.
func listNotices(ctx context.Context, q ledger.Querier) ([]Notice, error) {
	out, err := ledger.Select(ctx, q, scanNotice, "SELECT "+noticeCols+" FROM notices ORDER BY id DESC")
	if err != nil {
		return nil, fmt.Errorf("notices: list: %w", err)
	}
	return out, nil
}

// toldNotices are the ids of the notices that were ever announced, completed or rolled back.
func toldNotices(ctx context.Context, q ledger.Querier) (map[int64]bool, error) {
	ids, err := ledger.Select(ctx, q, func(row ledger.Scanner) (int64, error) {
		var id int64
		return id, row.Scan(&id)
	}, `SELECT DISTINCT notice_id FROM notice_transitions WHERE to_state IN (?, ?, ?)`,
		string(StateAnnounced), string(StateCompleted), string(StateRolledBack))
	if err != nil {
		return nil, fmt.Errorf("notices: which were told: %w", err)
	}
	out := make(map[int64]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

func setState(ctx context.Context, q ledger.Querier, id int64, to State, at time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE notices SET state = ?, updated_at = ? WHERE id = ?`, string(to), at, id)
	return err
}
