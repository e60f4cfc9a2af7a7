package notices

import (
	"context"
	dbsql "database/sql"
	"strings"
	"time"

	"trueup/fault"
	"trueup/ledger"
)

// plannedSwapLayouts are the ways a planned time may be written: RFC 3339 with its offset, or a
// date and time read as UTC (what an HTML datetime-local field sends).
var plannedSwapLayouts = []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02 15:04:05"}

// ParsePlannedSwap reads when a change is planned to go live: 2026-08-04T09:00:00+02:00, or
// 2026-08-04 09:00 in UTC.
func ParsePlannedSwap(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range plannedSwapLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fault.New(fault.Invalid, "planned swap %q: want a time such as 2026-08-04T09:00:00Z or 2026-08-04 09:00 (UTC)", s)
}

// plannedText says when the change is planned to go live: "Tuesday 4 August 2026 at 09:00 UTC".
func plannedText(t time.Time) string {
	t = t.UTC()
	return t.Format("Monday 2 January 2006") + " at " + t.Format("15:04") + " UTC"
}

// PlanSwap records when a draft's change is planned to go live. The time is kept on the
// notice's evidence and said in its status line; the text says it too unless someone has
// edited the text (their words are kept, as for a redraft). Only a draft is planned: what was
// announced is not changed behind its readers' backs.
func (s *Service) PlanSwap(ctx context.Context, id int64, actor string, at time.Time) (Notice, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.l.Now()
	var bad error
	err := s.l.Tx(ctx, func(tx *dbsql.Tx) error {
		// A notice that does not exist is not found, whatever the time given.
		n, err := getNotice(ctx, tx, id)
		if err != nil {
			return err
		}
		switch {
		case at.IsZero():
			bad = fault.New(fault.Invalid, "Notice %d: give the time its change is planned to go live.", id)
		case at.Before(now):
			bad = fault.New(fault.Invalid, "Notice %d: the planned time %s is in the past.", id, at.UTC().Format(time.RFC3339))
		}
		if bad != nil {
			return bad
		}
		if n.State != StateDraft {
			return fault.New(fault.Conflict, "Notice %d is %s: only a draft's planned time can be set.", id, n.State)
		}
		n.Evidence.PlannedSwap = at.UTC()
		if _, err := tx.ExecContext(ctx, `UPDATE notices SET evidence = ?, updated_at = ? WHERE id = ?`, jsonText(n.Evidence), now, id); err != nil {
			return err
		}
		if last := n.Revisions[len(n.Revisions)-1]; last.Actor == SystemActor {
			title, body := Compose(n.Evidence)
			if title != n.Title || body != n.Body {
				if err := s.revise(ctx, tx, n, title, body, SystemActor, now); err != nil {
					return err
				}
			}
		}
		_, err = s.l.AuditTx(ctx, tx, ledger.Entry{Actor: actorOr(actor), Action: "notice.plan", Target: noticeTarget(id),
			Params: map[string]any{"planned_swap": at.UTC().Format(time.RFC3339)}, Outcome: ledger.OutcomeOK})
		return err
	})
	return s.reread(ctx, id, "plan", bad, err)
}
