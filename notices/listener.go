package notices

import (
	"context"
	"fmt"

	"trueup/views"
)

// The service hears about swaps and rollbacks from views.
var _ views.Listener = (*Service)(nil)

// Published completes the notices of the versions a swap made live (views.Listener).
func (s *Service) Published(ctx context.Context, p views.Publish) error {
	m := Moved{Target: p.Target, Backfill: p.Backfill, RunID: p.RunID, Actor: p.Actor, Versions: map[string]int{}}
	for _, c := range p.Changes {
		m.Versions[c.Table] = c.To
	}
	if p.OverrideBy != "" {
		m.Reason = fmt.Sprintf("published past a failed validation by %s: %s", p.OverrideBy, p.OverrideReason)
	}
	_, err := s.Complete(ctx, m)
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
