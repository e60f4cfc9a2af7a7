package views

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"slices"
)

// A swap or rollback reads the engine's catalog to check its plan, and records its intent in
// the ledger before repointing. Both are round trips that wait long when readers load the
// machine, so in the normal case, where the ledger already agrees with the engine (trueup made
// the views what they are, and start-up recovery repairs the ledger otherwise), the plan is made
// from the ledger and the intent is written while the catalog is read. The views are repointed
// only once the engine has confirmed the plan; when it does not, the intent is taken back before
// anything else happens and the publish is planned again from what the engine says.

// recordedStates is what the engine says about tables when it agrees with the ledger: the view
// reads the version recorded live, and every version not retired exists.
func recordedStates(tables []string, vss map[string][]Version) map[string]engineState {
	out := map[string]engineState{}
	for _, t := range tables {
		st := engineState{physical: map[int]bool{}}
		for _, v := range vss[t] {
			if v.State == StateLive {
				st.live = v.N
			}
			if v.State != StateRetired {
				st.physical[v.N] = true
			}
		}
		out[t] = st
	}
	return out
}

// agrees reports whether the engine says about a table what the ledger does: the view reads one
// of its versions, and sync would neither adopt nor repair anything.
func agrees(st engineState, vs []Version) bool {
	if st.foreign != "" || len(repairMoves(st, vs)) > 0 {
		return false
	}
	known := map[int]bool{}
	for _, v := range vs {
		known[v.N] = true
	}
	for n := range st.physical {
		if !known[n] {
			return false
		}
	}
	return true
}

// speculate carries out p, planned as plan from the ledger's versions vss, while the engine's
// catalog is read: the intent is recorded meanwhile, and the views are repointed only when
// the engine agrees with the ledger and replan, given what it says, makes the same plan. It
// reports false, with the intent taken back, when the publish must be planned from the engine.
func (s *Service) speculate(ctx context.Context, h *holder, p Publish, plan Plan, vss map[string][]Version,
	replan func(map[string]engineState) (Plan, error)) (Publish, bool, error) {
	tables := p.Tables()
	var sts map[string]engineState
	var readErr error
	read := make(chan struct{})
	go func() {
		defer close(read)
		sts, readErr = s.inspect(ctx, tables...)
	}()
	err := s.recordIntent(ctx, h, &p)
	<-read
	if err != nil {
		return p, true, err
	}
	if readErr == nil && confirms(tables, sts, vss, plan, replan) {
		p, err = s.complete(ctx, p, plan.Gate)
		return p, true, err
	}
	if err := s.dropIntent(ctx, h, p); err != nil {
		return p, true, err
	}
	return Publish{}, false, nil
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

// dropIntent takes back an intent whose views were not touched: its swaps row and lock rows
// are removed together, so the ledger is as it was before.
func (s *Service) dropIntent(ctx context.Context, h *holder, p Publish) error {
	ctx = context.WithoutCancel(ctx)
	err := s.ledger.Tx(ctx, func(tx *dbsql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM view_locks WHERE swap_id = ?`, p.ID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM swaps WHERE id = ? AND state = ?`, p.ID, PublishIntent)
		return err
	})
	if err != nil {
		return fmt.Errorf("views: take back the intent of %s #%d (start-up recovery will settle it): %w", p.Kind, p.ID, err)
	}
	s.setSwapID(h, 0)
	return nil
}
