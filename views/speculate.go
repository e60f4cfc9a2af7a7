package views

import (
	"context"
	"slices"
)

// A swap or rollback is planned from the ledger, and the engine confirms the plan before anything
// is written. In the normal case the ledger already agrees with the engine (trueup made the views
// what they are, and start-up recovery repairs the ledger otherwise); when it does not, the
// publish is planned again from what the engine says. On an engine that notes its views (DuckDB)
// the check is made inside the repoint's own transaction (executeNoted). Elsewhere the catalog is
// read first and the intent written only after the confirmation: an intent is a promise recovery
// keeps after a crash, so it must never stand for a publish the engine would have refused.

// speculate carries out p, planned as plan from the ledger's versions vss, once the engine
// confirms it: the engine agrees with the ledger and replan, given what it says, makes
// the same plan. It reports false, having written nothing, when the publish must be planned
// from the engine.
func (s *Service) speculate(ctx context.Context, h *holder, p Publish, plan Plan, vss map[string][]Version,
	replan func(map[string]engineState) (Plan, error)) (Publish, bool, error) {
	if nr, ok := s.noted(); ok {
		// The engine checks the plan inside the repoint's own transaction (executeNoted).
		return s.executeNoted(ctx, nr, h, p, plan.Gate, true)
	}
	tables := p.Tables()
	sts, err := s.inspect(ctx, tables...)
	if err != nil || !confirms(tables, sts, vss, plan, replan) {
		return Publish{}, false, nil
	}
	if err := s.recordIntent(ctx, h, &p); err != nil {
		return p, true, err
	}
	p, err = s.complete(ctx, h, p, plan.Gate)
	return p, true, err
}

func confirms(tables []string, sts map[string]engineState, vss map[string][]Version, plan Plan,
	replan func(map[string]engineState) (Plan, error)) bool {
	for _, t := range tables {
		if !agrees(sts[t], vss[t]) {
			return false
		}
	}
	again, err := replan(sts)
	return err == nil && slices.Equal(again.Changes, plan.Changes) && slices.Equal(again.Gate, plan.Gate)
}
