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
func (s *Service) Published(ctx context.Context, p views.Publish) ([]views.NoticeMove, error) {
	return s.carryOut(ctx, p)
}

// RolledBack marks the notices of the versions a rollback took back as rolled back, and
// completes again the notices of the versions it made live again (views.Listener): after swap
// --to v1 rolled v2's notice back, rolling that swap back puts v2 live and its readers hear so.
// Only the versions are matched: a rollback's run is not the run it undoes.
func (s *Service) RolledBack(ctx context.Context, p views.Publish, reason string) ([]views.NoticeMove, error) {
	if reason != "" {
		p.Reason = reason
	}
	return s.carryOut(ctx, p)
}

// Foresee is what hearing of p, a swap or rollback not carried out yet, will do to the notices
// (views.Foreseer): the confirmation and the dry runs show it, and Published and RolledBack do
// exactly that, reckoned by the same foresee.
func (s *Service) Foresee(ctx context.Context, p views.Publish) ([]views.NoticeMove, error) {
	plans, err := s.foresee(ctx, p)
	return moves(plans), err
}

// carryOut makes the transitions foresee reckons for p, and returns them.
func (s *Service) carryOut(ctx context.Context, p views.Publish) ([]views.NoticeMove, error) {
	plans, err := s.foresee(ctx, p)
	if err != nil {
		return nil, err
	}
	for _, pl := range plans {
		if _, err := s.transition(ctx, pl.n.ID, pl.st); err != nil {
			return nil, err
		}
	}
	return moves(plans), nil
}

// moves are the transitions plans make, as a publish reports them.
func moves(plans []planned) []views.NoticeMove {
	out := make([]views.NoticeMove, 0, len(plans))
	for _, pl := range plans {
		out = append(out, views.NoticeMove{ID: pl.n.ID, Title: pl.n.Title, From: string(pl.n.State), To: string(pl.st.to)})
	}
	return out
}

// planned is one transition a publish makes of a notice.
type planned struct {
	n  Notice
	st step
}

// foresee reckons, in the order they are made, the transitions hearing of p makes: for a swap
// the notices of the versions it makes live complete, then those of the versions an older
// version replaces roll back; for a rollback the notices of the versions taken back roll back,
// then those of the versions live again complete. Whether another table of a notice is still on
// its version is read as it will be once p is done: the tables p moves are on the versions p
// makes live, before the publish (a dry run) as after it.
func (s *Service) foresee(ctx context.Context, p views.Publish) ([]planned, error) {
	after := map[string]int{}
	for _, c := range p.Changes {
		after[c.Table] = c.To
	}
	live := Moved{Target: p.Target, Actor: p.Actor, Versions: map[string]int{}}
	back := Moved{Target: p.Target, Actor: p.Actor, Versions: map[string]int{}}
	reason := p.Reason
	if p.Kind == views.KindRollback {
		for _, c := range p.Changes {
			back.Versions[c.Table] = c.From
			if c.To != 0 {
				live.Versions[c.Table] = c.To
			}
		}
		live.Reason = reason
	} else {
		live.Backfill, live.RunID = p.Backfill, p.RunID
		for _, c := range p.Changes {
			live.Versions[c.Table] = c.To
			if c.From > c.To {
				back.Versions[c.Table] = c.From
			}
		}
		live.Reason, live.Override = swapReason(p)
		if reason == "" {
			reason = "an earlier version of the data was published again"
		}
	}
	partlyLive := func(ctx context.Context, n Notice) (bool, error) {
		if live.matches(n) {
			return true, nil
		}
		on, err := s.onItsVersion(ctx, n, back.Target, after)
		return len(on) > 0, err
	}
	completing, err := s.moving(ctx, live, step{reason: live.Reason, to: StateCompleted, from: completable, override: live.Override}, nil)
	if err != nil || len(back.Versions) == 0 {
		return completing, err
	}
	rolling, err := s.moving(ctx, back, step{reason: reason, to: StateRolledBack, from: []State{StateAnnounced, StateCompleted}}, partlyLive)
	for i := range rolling {
		rolling[i].st.left = leftBehind(p, rolling[i].n)
	}
	if p.Kind == views.KindRollback {
		return append(rolling, completing...), err
	}
	return append(completing, rolling...), err
}

// leftBehind is what p left in n's versions of the tables it takes back: the partitions inside
// the backfill's scope written since they went live, not carried into the versions made live.
func leftBehind(p views.Publish, n Notice) []LeftBehind {
	var out []LeftBehind
	for _, c := range p.Changes {
		if v, ok := n.Versions[c.Table]; ok && v == c.From && len(c.NotCarried) > 0 {
			out = append(out, LeftBehind{Table: c.Table, Version: c.From, Partitions: c.NotCarried})
		}
	}
	return out
}

// swapReason is what the completion of a swap's notices records: a gate override, and what the
// swap carried that the pipeline wrote meanwhile.
func swapReason(p views.Publish) (string, *Override) {
	var reason string
	var override *Override
	if p.OverrideBy != "" {
		at := p.FinishedAt
		if at.IsZero() {
			at = p.StartedAt
		}
		override = &Override{By: p.OverrideBy, Reason: p.OverrideReason, At: at}
		reason = fmt.Sprintf("Validation did not pass, and %s chose to publish anyway", p.OverrideBy)
		if p.OverrideReason != "" {
			reason += fmt.Sprintf(": %q", p.OverrideReason)
		}
		reason += "."
	}
	if carried := p.CarriedSummary(); carried != "" {
		reason = strings.TrimSpace(reason + " Published with the rows the pipeline wrote to the live version meanwhile: " + carried + ".")
	}
	return reason, override
}

// onItsVersion lists the tables of n whose live version is still the notice's, as the ledger
// records the versions of n's target (target when the notice has none), a table in after being
// on the version after gives it (a publish under way). A table or version the ledger does not
// know is not live.
func (s *Service) onItsVersion(ctx context.Context, n Notice, target string, after map[string]int) ([]string, error) {
	if n.Target != "" {
		target = n.Target
	}
	if target == "" {
		return nil, nil
	}
	store := views.Store{L: s.l}
	var out []string
	for t, v := range n.Versions {
		if to, ok := after[t]; ok {
			if to == v {
				out = append(out, t)
			}
			continue
		}
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
