package server

import (
	"context"
	"net/url"

	"trueup/backfill"
	"trueup/server/page"
	"trueup/views"
)

// runPublished says what became of the versions a validated run built, as the table's history
// records it: swapped in (and live since), rolled back, or replaced by a later swap; nil when
// they were never swapped in (the page then offers to review and publish them).
func (s *Server) runPublished(ctx context.Context, st *backfill.Status) (*page.RunPublished, error) {
	if st == nil || st.Run == nil || (st.State != backfill.RunValidated && st.State != backfill.RunValidationFailed) {
		return nil, nil
	}
	history, err := s.publishes(ctx, st.Run.Target, st.Table)
	if err != nil {
		return nil, err
	}
	p := publishedFrom(history, st.RunID)
	if p != nil {
		p.Href = "/tables/" + url.PathEscape(st.Table) + "?target=" + url.QueryEscape(st.Run.Target)
		p.Table = st.Table
	}
	return p, nil
}

// publishedFrom finds, in a table's history (newest first), the newest swap that published run
// runID and what happened to it since.
func publishedFrom(history []views.Publish, runID int64) *page.RunPublished {
	for i, sw := range history {
		if sw.Kind != views.KindSwap || sw.State != views.PublishDone || sw.RunID != runID {
			continue
		}
		p := &page.RunPublished{Swap: sw.ID, At: formatTime(sw.FinishedAt)}
		if sw.UndoneBy != 0 {
			p.RolledBackBy = sw.UndoneBy
			for _, rb := range history[:i] {
				if rb.ID == sw.UndoneBy {
					p.RolledBackAt = formatTime(rb.FinishedAt)
				}
			}
			return p
		}
		// a later swap of another run's versions replaced it (newest first: those before i)
		for _, later := range history[:i] {
			if later.Kind == views.KindSwap && later.State == views.PublishDone && later.RunID != runID && later.UndoneBy == 0 {
				p.ReplacedBy, p.ReplacedAt = later.ID, formatTime(later.FinishedAt)
			}
		}
		return p
	}
	return nil
}
