package views

import (
	"context"
)

// RollbackRequest asks to take back the swap that made table's live version live.
type RollbackRequest struct {
	Table  string
	Actor  string
	Reason string
	// Undoes is the swap the operator confirmed taking back (0: whichever is in effect). When the
	// swap in effect is another one, the rollback is refused as stale (Stale): a second click or a
	// retried request does not take back the swap before.
	Undoes int64
}

// PlanRollback works out what rolling table back would do, without changing anything.
func (s *Service) PlanRollback(ctx context.Context, table string) (Plan, error) {
	undo, err := s.toUndo(ctx, table)
	if err != nil {
		return Plan{}, err
	}
	p, err := s.planRollback(ctx, table, undo, false)
	if err != nil {
		return Plan{}, err
	}
	if err := s.planCarries(ctx, p.Changes); err != nil {
		return p, err
	}
	return p, s.foresee(ctx, &p, rollbackPublish(s.target, RollbackRequest{Table: table}, undo, p))
}

// toUndo is the swap a rollback of table takes back.
func (s *Service) toUndo(ctx context.Context, table string) (Publish, error) {
	undo, ok, err := s.inEffect(ctx, table)
	if err != nil {
		return Publish{}, err
	}
	if !ok {
		return Publish{}, s.nothingToRollBack(ctx, table)
	}
	return undo, nil
}

// planRollback checks that every table of the swap to undo still reads the version that swap
// made live, and that every version it would go back to is still there.
func (s *Service) planRollback(ctx context.Context, table string, undo Publish, locked bool) (Plan, error) {
	sts, vss, err := s.syncAll(ctx, undo.Tables(), locked)
	if err != nil {
		return Plan{}, err
	}
	return s.planRollbackFrom(table, undo, sts, vss)
}

// planRollbackFrom is planRollback given what the engine and the ledger say.
func (s *Service) planRollbackFrom(table string, undo Publish, sts map[string]engineState, vss map[string][]Version) (Plan, error) {
	p := Plan{Kind: KindRollback, Target: s.target, Table: table, Backfill: undo.Backfill, RunID: undo.RunID, Undoes: undo.ID}
	for _, c := range undoOrder(table, undo) {
		st, vs := sts[c.Table], vss[c.Table]
		if st.live != c.To {
			return Plan{}, conflictf("%s reads v%d, not v%d that swap #%d made live: it has moved on since; roll %s back first",
				c.Table, st.live, c.To, undo.ID, c.Table)
		}
		if c.From == 0 {
			return Plan{}, conflictf("%s had no live version before swap #%d: there is nothing to go back to", c.Table, undo.ID)
		}
		if !st.physical[c.From] {
			return Plan{}, conflictf("%s v%d, the version before swap #%d, is gone (retired or dropped)", c.Table, c.From, undo.ID)
		}
		for _, v := range vs {
			if v.N == c.From && v.State == StateRetired {
				return Plan{}, conflictf("%s v%d, the version before swap #%d, was retired", c.Table, c.From, undo.ID)
			}
		}
		p.Changes = append(p.Changes, Change{Table: c.Table, From: c.To, To: c.From})
	}
	return p, nil
}

// SplitsSet reports whether swap, a plan to swap one table back to the version it read before the
// swap in effect, would split the set that swap published together: rollback, the plan of
// rolling that table back, moves the same table the same way and others with it. The pages then
// offer the rollback of the whole set instead (a swap of one table of a set is otherwise
// allowed: the others stay on their versions).
func SplitsSet(swap, rollback Plan) bool {
	if swap.Kind != KindSwap || rollback.Kind != KindRollback || len(swap.Changes) != 1 || len(rollback.Changes) < 2 {
		return false
	}
	c, ok := (Publish{Changes: rollback.Changes}).change(swap.Changes[0].Table)
	return ok && c.From == swap.Changes[0].From && c.To == swap.Changes[0].To
}

// undoOrder is the changes of undo in the order a rollback of table takes them back: the named
// table first, as in the swap; the rest in the swap's order.
func undoOrder(table string, undo Publish) []Change {
	order := []Change{}
	if c, ok := undo.change(table); ok {
		order = append(order, c)
	}
	for _, c := range undo.Changes {
		if c.Table != table {
			order = append(order, c)
		}
	}
	return order
}

// undoChanges are the changes a rollback of table makes when it takes back undo.
func undoChanges(table string, undo Publish) []Change {
	var out []Change
	for _, c := range undoOrder(table, undo) {
		out = append(out, Change{Table: c.Table, From: c.To, To: c.From})
	}
	return out
}

// Rollback takes back the swap in effect on req.Table: every table that swap moved goes back to
// the version it read before, together, in one atomic repoint. Rolling back again takes back the
// swap before that one.
func (s *Service) Rollback(ctx context.Context, req RollbackRequest) (Publish, error) {
	req.Actor = orLocal(req.Actor)
	p, err := s.rollbackHeld(ctx, req)
	if err != nil {
		return p, err
	}
	s.after(ctx, &p) // the listeners, once the tables are given back
	return p, nil
}

// rollbackHeld plans the rollback and has the strategy carry it out, under its tables' locks:
// planned from the ledger, and, when the engine does not confirm that plan, from the engine.
func (s *Service) rollbackHeld(ctx context.Context, req RollbackRequest) (Publish, error) {
	c := s.claim(ctx)
	undo, ok, err := s.inEffect(ctx, req.Table)
	if err != nil {
		return Publish{}, err
	}
	if err := s.staleRollback(ctx, req, undo, ok); err != nil {
		return Publish{}, err
	}
	if !ok {
		return Publish{}, s.nothingToRollBack(ctx, req.Table)
	}
	tables := undo.Tables()
	h, unlock, fresh, err := c.lock(tables, req.Actor, KindRollback)
	if err != nil {
		return Publish{}, err
	}
	defer unlock()
	// When a swap, rollback or retirement finished meanwhile, read the swap to undo again under
	// the lock, at the same time as the versions of its tables: one round trip of waiting, not two.
	versions := s.listManyAsync(ctx, tables)
	// And the marks of the changes the rollback expects to make, at the same time.
	marks := s.prefetchMarks(ctx, undoChanges(req.Table, undo))
	defer func() { <-marks.done }()
	if !fresh {
		again, ok, err := s.inEffect(ctx, req.Table)
		versions()
		if err != nil {
			return Publish{}, err
		}
		if err := s.staleRollback(ctx, req, again, ok); err != nil {
			return Publish{}, err
		}
		if !ok || again.ID != undo.ID {
			return Publish{}, conflictf("swap #%d of %s was taken back while this rollback waited: try again", undo.ID, req.Table)
		}
	}
	vss, vssErr := versions()
	p, ok := Publish{}, false
	if vssErr == nil {
		p, ok, err = s.rollbackAsRecorded(ctx, h, req, undo, vss, marks)
	}
	if !ok {
		p, err = s.rollbackAsInspected(ctx, h, req, undo)
	}
	return p, err
}

// rollbackAsRecorded plans the rollback from the ledger's versions vss (with the marks read
// beside them) and has the strategy
// carry it out once the engine confirms the plan. It reports false, having written nothing, when
// the plan needs what the engine says.
func (s *Service) rollbackAsRecorded(ctx context.Context, h *holder, req RollbackRequest, undo Publish, vss map[string][]Version,
	marks *prefetchedMarks) (Publish, bool, error) {
	plan, err := s.planRollbackFrom(req.Table, undo, recordedStates(undo.Tables(), vss), vss)
	if err != nil {
		return Publish{}, false, nil
	}
	if err := s.planCarriesWith(ctx, plan.Changes, marks); err != nil {
		return Publish{}, true, err
	}
	return s.strategy.publish(ctx, h, rollbackPublish(s.target, req, undo, plan), nil, vss)
}

// rollbackAsInspected plans the rollback from the engine, first making the ledger agree with it
// (sync), and has the strategy carry it out.
func (s *Service) rollbackAsInspected(ctx context.Context, h *holder, req RollbackRequest, undo Publish) (Publish, error) {
	plan, err := s.planRollback(ctx, req.Table, undo, true)
	if err != nil {
		return Publish{}, err
	}
	if err := s.planCarries(ctx, plan.Changes); err != nil {
		return Publish{}, err
	}
	p, _, err := s.strategy.publish(ctx, h, rollbackPublish(s.target, req, undo, plan), nil, nil)
	return p, err
}

// rollbackPublish is the publish that carries out plan, taking back undo.
func rollbackPublish(target string, req RollbackRequest, undo Publish, plan Plan) Publish {
	return Publish{Kind: KindRollback, Target: target, Table: req.Table, Backfill: undo.Backfill, RunID: undo.RunID,
		Changes: plan.Changes, Actor: req.Actor, Reason: req.Reason, Undoes: undo.ID}
}

// rollbackTarget is the version table would go back to on rollback (0: none).
func (s *Service) rollbackTarget(ctx context.Context, table string) (int, error) {
	undo, ok, err := s.inEffect(ctx, table)
	if err != nil || !ok {
		return 0, err
	}
	c, _ := undo.change(table)
	return c.From, nil
}

// nothingToRollBack is why table has no rollback: it is no logical table of the target (not
// found), or no swap of it is in effect (a conflict: it is as a rollback would leave it).
func (s *Service) nothingToRollBack(ctx context.Context, table string) error {
	if err := s.checkLogical(ctx, table); err != nil {
		return err
	}
	return conflictf("nothing to roll back: no swap of %s in target %s is in effect", table, s.target)
}
