package notices

import (
	"context"
	"fmt"

	"trueup/views"
)

// The service hears about swaps and rollbacks from views.
var _ views.Listener = (*Service)(nil)

// Published completes the notices of the versions a swap made live (views.Listener). A swap
// that publishes an older version again (swap --to v1) also takes back the change of the
// version it replaces: those notices are rolled back with the swap's reason, unless this swap
// makes them live. A swap to a newer version only supersedes the one it replaces: its notice
// stays completed, since that change was not taken back.
func (s *Service) Published(ctx context.Context, p views.Publish) error {
	live := Moved{Target: p.Target, Backfill: p.Backfill, RunID: p.RunID, Actor: p.Actor, Versions: map[string]int{}}
	back := Moved{Target: p.Target, Actor: p.Actor, Versions: map[string]int{}}
	for _, c := range p.Changes {
		live.Versions[c.Table] = c.To
		if c.From > c.To {
			back.Versions[c.Table] = c.From
		}
	}
	if p.OverrideBy != "" {
		at := p.FinishedAt
		if at.IsZero() {
			at = p.StartedAt
		}
		live.Override = &Override{By: p.OverrideBy, Reason: p.OverrideReason, At: at}
		live.Reason = fmt.Sprintf("Validation did not pass, and %s chose to publish anyway", p.OverrideBy)
		if p.OverrideReason != "" {
			live.Reason += fmt.Sprintf(": %q", p.OverrideReason)
		}
		live.Reason += "."
	}
	if _, err := s.Complete(ctx, live); err != nil {
		return err
	}
	if len(back.Versions) == 0 {
		return nil
	}
	reason := p.Reason
	if reason == "" {
		reason = "an earlier version of the data was published again"
	}
	_, err := s.rollBack(ctx, back, reason, live.matches)
	return err
}

// RolledBack marks the notices of the versions a rollback took back as rolled back
// (views.Listener). Only the versions are matched: a rollback's run is not the run it undoes.
func (s *Service) RolledBack(ctx context.Context, p views.Publish, reason string) error {
	m := Moved{Target: p.Target, Actor: p.Actor, Versions: map[string]int{}}
	for _, c := range p.Changes {
		m.Versions[c.Table] = c.From
	}
	if reason == "" {
		reason = p.Reason
	}
	_, err := s.RollBack(ctx, m, reason)
	return err
}
