package notices

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"trueup/fault"

	"trueup/views"
)

// The service hears about swaps and rollbacks from views.
var _ views.Listener = (*Service)(nil)

// Published completes the notices of the versions a swap made live (views.Listener), rolled-back
// ones too: their change is live again. A swap that publishes an older version again (swap --to
// v1) also takes back the change of the version it replaces: those notices are rolled back with
// the swap's reason, unless this swap makes them live or another of their tables is still on the
// notice's version (see rollBack). A swap to a newer version only supersedes the one it
// replaces: its notice stays completed, since that change was not taken back.
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
	if carried := p.CarriedSummary(); carried != "" {
		live.Reason = strings.TrimSpace(live.Reason + " Published with the rows the pipeline wrote to the live version meanwhile: " + carried + ".")
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

// RolledBack marks the notices of the versions a rollback took back as rolled back, and
// completes again the notices of the versions it made live again (views.Listener): after swap
// --to v1 rolled v2's notice back, rolling that swap back puts v2 live and its readers hear so.
// Only the versions are matched: a rollback's run is not the run it undoes.
func (s *Service) RolledBack(ctx context.Context, p views.Publish, reason string) error {
	back := Moved{Target: p.Target, Actor: p.Actor, Versions: map[string]int{}}
	again := Moved{Target: p.Target, Actor: p.Actor, Versions: map[string]int{}}
	for _, c := range p.Changes {
		back.Versions[c.Table] = c.From
		if c.To != 0 {
			again.Versions[c.Table] = c.To
		}
	}
	if reason == "" {
		reason = p.Reason
	}
	if _, err := s.rollBack(ctx, back, reason, again.matches); err != nil {
		return err
	}
	again.Reason = reason
	_, err := s.Complete(ctx, again)
	return err
}

// onItsVersion lists the tables of n whose live version is still the notice's, as the ledger
// records the versions of n's target (target when the notice has none). A table or version the
// ledger does not know is not live.
func (s *Service) onItsVersion(ctx context.Context, n Notice, target string) ([]string, error) {
	if n.Target != "" {
		target = n.Target
	}
	if target == "" {
		return nil, nil
	}
	store := views.Store{L: s.l}
	var out []string
	for t, v := range n.Versions {
		ver, err := store.Get(ctx, target, t, v)
		if errors.Is(err, fault.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("notices: is %s v%d live: %w", t, v, err)
		}
		if ver.State == views.StateLive {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}
