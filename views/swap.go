package views

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"trueup/fault"
)

// SwapRequest asks to make version To of Table live, with every version built by the same
// backfill run (its downstream tables) in the same publish.
type SwapRequest struct {
	Table  string
	To     string // "v2", "2" or "orders__v2"
	Actor  string
	Reason string
	// Override is an approver's written reason to publish versions whose validation failed.
	// It is ignored (and not recorded) when every version passed.
	Override string
	// From is the version each table read when the operator confirmed the swap (0: no view), as
	// the confirmation showed it (FromOf). When set, a swap that would move other tables, or
	// from other versions, is refused as stale (Stale); nil swaps from whatever is live now.
	From map[string]int
}

// GateCheck is the validation gate's verdict on one version a swap would make live.
type GateCheck struct {
	Table   string `json:"table"`
	Version int    `json:"version"`
	State   string `json:"state"`
	Passed  bool   `json:"passed"`
	Why     string `json:"why"`
}

// Plan is what a swap or rollback would do, worked out without changing anything: the
// confirmation step shows it to the operator.
type Plan struct {
	Kind     string      `json:"kind"`
	Target   string      `json:"target"`
	Table    string      `json:"table"`
	Backfill string      `json:"backfill,omitempty"`
	RunID    int64       `json:"run_id,omitempty"`
	Changes  []Change    `json:"changes"`
	Gate     []GateCheck `json:"gate,omitempty"`
	// NeedsOverride is true when a version failed validation: the swap needs an approver's reason.
	NeedsOverride bool  `json:"needs_override"`
	Undoes        int64 `json:"undoes,omitempty"` // a rollback: the swap it takes back
	// Notices are the change notices the publish moves, as the listener foresees them (Foreseer).
	Notices []NoticeMove `json:"notices,omitempty"`
	// Refused, when set, is why the publish would be turned down as asked by a rule the views do
	// not keep (four eyes, ops.FourEyes): a dry run shows it and exits as the publish would
	// (Refusal), and a confirmation page offers no button that would only be refused.
	Refused string `json:"refused,omitempty"`
}

// Refusal is the refusal (fault.Refused) of a publish planned as p that a rule outside the
// views turns down (Plan.Refused); nil when none does.
func (p Plan) Refusal() error {
	if p.Refused == "" {
		return nil
	}
	return fault.New(fault.Refused, "%s", p.Refused)
}

// Summary says what the plan moves, e.g. "orders v1 → v2, daily_revenue v1 → v2".
func (p Plan) Summary() string { return Publish{Changes: p.Changes}.Summary() }

// ParseVersionArg reads a version as an operator writes it for table: "v2", "2" or "orders__v2".
func ParseVersionArg(table, arg string) (int, error) {
	a := strings.TrimSpace(arg)
	if name, n, ok := ParseVersion(a); ok {
		if name != table {
			return 0, refusef("%s is a version of %s, not of %s", a, name, table)
		}
		return n, nil
	}
	a = strings.TrimPrefix(strings.TrimPrefix(a, "v"), "V")
	n, err := strconv.Atoi(a)
	if err != nil || n <= 0 {
		return 0, refusef("version %q of %s: want vN, e.g. v2", arg, table)
	}
	return n, nil
}

// PlanSwap works out what swapping table to version to would do, without changing anything.
func (s *Service) PlanSwap(ctx context.Context, table, to string) (Plan, error) {
	n, err := ParseVersionArg(table, to)
	if err != nil {
		return Plan{}, err
	}
	group, _, err := s.group(ctx, table, n)
	if err != nil {
		return Plan{}, err
	}
	p, err := s.planSwap(ctx, table, n, group, false)
	if err != nil {
		return Plan{}, err
	}
	if err := s.planCarries(ctx, p.Changes); err != nil {
		return p, err
	}
	if err := s.refuseHidden(ctx, p.Changes); err != nil {
		return p, err
	}
	return p, s.foresee(ctx, &p, swapPublish(s.target, SwapRequest{Table: table}, p, ""))
}

// group lists the tables published together with version n of table: those of the backfill run
// that built it, the named table first, then the others in the order the run built them. It
// also returns every version the ledger knows of those tables, by table, oldest first.
func (s *Service) group(ctx context.Context, table string, n int) ([]Version, map[string][]Version, error) {
	named := func(v Version) bool { return v.Table == table && v.N == n }
	all, err := s.store.withRunTables(ctx, s.target, table, n)
	if err == nil && !slices.ContainsFunc(all, named) {
		// Adopt first: it may be a version table built outside trueup.
		if _, _, err := s.sync(ctx, table, false); err != nil {
			return nil, nil, err
		}
		all, err = s.store.withRunTables(ctx, s.target, table, n)
	}
	if err != nil {
		return nil, nil, err
	}
	i := slices.IndexFunc(all, named)
	if i < 0 {
		return nil, nil, notFoundf("%s has no version v%d in target %s", table, n, s.target)
	}
	out := []Version{all[i]}
	vss := map[string][]Version{}
	for _, v := range all {
		vss[v.Table] = append(vss[v.Table], v)
		if v.Table != table && v.RunID == all[i].RunID && v.RunID != 0 && v.Backfill == all[i].Backfill {
			out = append(out, v)
		}
	}
	for _, vs := range vss {
		slices.SortFunc(vs, func(a, b Version) int { return a.N - b.N })
	}
	return out, vss, nil
}

func groupTables(g []Version) []string {
	out := make([]string, len(g))
	for i, v := range g {
		out[i] = v.Table
	}
	return out
}

// planSwap checks every version of the group against the engine and the gate. With locked, the
// caller holds the tables and the ledger is first repaired to agree with the engine.
func (s *Service) planSwap(ctx context.Context, table string, n int, group []Version, locked bool) (Plan, error) {
	sts, vss, err := s.syncAll(ctx, groupTables(group), locked)
	if err != nil {
		return Plan{}, err
	}
	seen, err := s.madeLive(ctx, group, vss)
	if err != nil {
		return Plan{}, err
	}
	return s.planSwapFrom(table, n, group, sts, vss, seen)
}

// planSwapFrom is planSwap given what the engine and the ledger say, and which versions trueup
// saw live (madeLive).
func (s *Service) planSwapFrom(table string, n int, group []Version, sts map[string]engineState, vss map[string][]Version, seen liveHistory) (Plan, error) {
	p := Plan{Kind: KindSwap, Target: s.target, Table: table, Backfill: group[0].Backfill, RunID: group[0].RunID}
	for _, g := range group {
		st, vs := sts[g.Table], vss[g.Table]
		i := slices.IndexFunc(vs, func(v Version) bool { return v.N == g.N })
		if i < 0 {
			return Plan{}, notFoundf("%s has no version v%d in target %s", g.Table, g.N, s.target)
		}
		v := vs[i]
		what := fmt.Sprintf("%s v%d", v.Table, v.N)
		if v.RunID != 0 && g.Table != table {
			what += fmt.Sprintf(" (built with %s by backfill %s, run %d)", table, v.Backfill, v.RunID)
		}
		switch v.State {
		case StateRetired:
			return Plan{}, conflictf("%s was retired", what)
		case StateBuilding:
			return Plan{}, conflictf("%s is still building", what)
		case StateCancelled:
			return Plan{}, conflictf("%s was cancelled before it was finished", what)
		}
		if !st.physical[v.N] {
			return Plan{}, refusef("%s: table %s does not exist in target %s", what, v.Physical(), s.target)
		}
		if v.N == st.live {
			continue // already live: nothing to move
		}
		if st.live > v.N && g.Table != table {
			return Plan{}, conflictf("%s is live at v%d, newer than v%d of this run: publishing the run would take it back", v.Table, st.live, v.N)
		}
		check := gateCheck(v, seen[v.Table])
		p.Gate = append(p.Gate, check)
		p.NeedsOverride = p.NeedsOverride || !check.Passed
		p.Changes = append(p.Changes, Change{Table: v.Table, From: st.live, To: v.N})
	}
	if len(p.Changes) == 0 {
		return Plan{}, conflictf("%s v%d is already live", table, n)
	}
	return p, nil
}

// Swap makes version req.To of req.Table live, with the downstream tables built by the same run,
// in one atomic repoint. It is refused unless every version passed validation or req.Override
// gives an approver's reason; nothing is changed when it is refused.
func (s *Service) Swap(ctx context.Context, req SwapRequest) (Publish, error) {
	req.Actor = orLocal(req.Actor)
	n, err := ParseVersionArg(req.Table, req.To)
	if err != nil {
		return Publish{}, err
	}
	p, err := s.swapHeld(ctx, req, n)
	if err != nil {
		return p, err
	}
	s.after(ctx, &p) // the listeners and retention, once the tables are given back
	return p, nil
}

// swapHeld plans the swap and has the strategy carry it out, under its tables' locks: planned
// from the ledger, and, when the engine does not confirm that plan, from the engine.
func (s *Service) swapHeld(ctx context.Context, req SwapRequest, n int) (Publish, error) {
	c := s.claim(ctx)
	group, vss, err := s.group(ctx, req.Table, n)
	if err != nil {
		return Publish{}, err
	}
	h, unlock, fresh, err := c.lock(groupTables(group), req.Actor, KindSwap)
	if err != nil {
		return Publish{}, err
	}
	defer unlock()
	if !fresh {
		vss = nil // a swap, rollback or retirement finished meanwhile: read again
	}
	override := strings.TrimSpace(req.Override)
	p, ok, err := s.swapAsRecorded(ctx, h, req, n, group, vss, override)
	if !ok {
		p, err = s.swapAsInspected(ctx, h, req, n, group, override)
	}
	return p, err
}

// swapAsRecorded plans the swap from the ledger's versions vss (read again when nil), the normal
// case, where the engine agrees with it, and has the strategy carry it out once the engine
// confirms the plan. It reports false, having written nothing, when the plan needs what the
// engine says (a refusal, a table changed outside trueup).
func (s *Service) swapAsRecorded(ctx context.Context, h *holder, req SwapRequest, n int, group []Version,
	vss map[string][]Version, override string) (Publish, bool, error) {
	tables := groupTables(group)
	if vss == nil {
		var err error
		if vss, err = s.store.listMany(ctx, s.target, tables); err != nil {
			return Publish{}, false, nil
		}
	}
	sts := recordedStates(tables, vss)
	// The marks of the changes the plan will make are read while the gate's history is.
	marks := s.prefetchMarks(ctx, expectedChanges(group, sts))
	seen, err := s.madeLive(ctx, group, vss)
	if err != nil {
		<-marks.done
		return Publish{}, false, nil
	}
	plan, err := s.planSwapFrom(req.Table, n, group, sts, vss, seen)
	if err != nil || (plan.NeedsOverride && override == "") || staleSwap(req, n, plan) != nil {
		<-marks.done
		return Publish{}, false, nil
	}
	if err := s.planCarriesWith(ctx, plan.Changes, marks); err != nil {
		return Publish{}, true, err
	}
	if err := s.refuseHidden(ctx, plan.Changes); err != nil {
		return Publish{}, true, err
	}
	return s.strategy.publish(ctx, h, swapPublish(s.target, req, plan, override), plan.Gate, vss)
}

// swapAsInspected plans the swap from the engine, first making the ledger agree with it (sync),
// and has the strategy carry it out.
func (s *Service) swapAsInspected(ctx context.Context, h *holder, req SwapRequest, n int, group []Version, override string) (Publish, error) {
	plan, err := s.planSwap(ctx, req.Table, n, group, true)
	if err != nil {
		return Publish{}, err
	}
	if err := staleSwap(req, n, plan); err != nil {
		return Publish{}, err
	}
	if err := plan.GateRefusal(override); err != nil {
		return Publish{}, err
	}
	if err := s.planCarries(ctx, plan.Changes); err != nil {
		return Publish{}, err
	}
	if err := s.refuseHidden(ctx, plan.Changes); err != nil {
		return Publish{}, err
	}
	p, _, err := s.strategy.publish(ctx, h, swapPublish(s.target, req, plan, override), plan.Gate, nil)
	return p, err
}

// expectedChanges are the changes planSwapFrom makes of group when it is not refused: each
// version of the group not live yet, from the version live now.
func expectedChanges(group []Version, sts map[string]engineState) []Change {
	var out []Change
	for _, g := range group {
		if live := sts[g.Table].live; g.N != live {
			out = append(out, Change{Table: g.Table, From: live, To: g.N})
		}
	}
	return out
}

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

// swapPublish is the publish that carries out plan.
func swapPublish(target string, req SwapRequest, plan Plan, override string) Publish {
	p := Publish{Kind: KindSwap, Target: target, Table: req.Table, Backfill: plan.Backfill, RunID: plan.RunID,
		Changes: plan.Changes, Actor: req.Actor, Reason: req.Reason}
	if plan.NeedsOverride {
		p.OverrideBy, p.OverrideReason = req.Actor, override
	}
	return p
}

// orLocal names an anonymous actor.
func orLocal(a string) string {
	if strings.TrimSpace(a) == "" {
		return "local"
	}
	return strings.TrimSpace(a)
}
