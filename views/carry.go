package views

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"

	"trueup/fault"
	tsql "trueup/sql"
)

// Carrying what the pipeline wrote. A warehouse keeps being written while a backfill builds and
// after a swap: the live version gains partitions (a new day) and late rows in old ones. A
// publish carries those into the version it makes live, so that readers lose nothing:
//
//   - when a backfill run carries the live version's partitions into the version it builds, it
//     records their fingerprints (rows, row-hash sum) per partition: the version's basis;
//   - a swap measures the live version again: a partition outside the run's scope that appeared,
//     changed or went since is carried into the new version with the repoint (on DuckDB in the
//     repoint's transaction, on ClickHouse just before it, checked again by the engine's write
//     mark); a partition inside the scope that changed is refused (ScopeChangedError): the
//     backfill must recompute it (backfill run --catch-up);
//   - the publish records the fingerprints of the version it stops (left) and of the one it
//     makes live (live, the scope's partitions too): a rollback carries back the partitions the
//     live version gained outside the scope since, a later swap those gained since the rollback,
//     and a version written after it stopped being live is caught (Stale) and carried over
//     (CatchUp);
//   - a partition inside the scope that the version being left was written in since it went
//     live is not carried (the versions differ there by design): the publish names it
//     (Change.NotCarried), and records the version left as it was when it went live there, so
//     that Stale and CatchUp go on naming those rows, which readers no longer see.
//
// A partition written on both sides since (a stale writer) is merged, adding the rows one side
// lacks (tsql.Carry.Merge); otherwise it is replaced whole.

// Carried is one partition a publish or a catch-up carried (or would carry) into the version it
// makes live.
type Carried struct {
	Partition string `json:"partition"`
	Rows      int64  `json:"rows"` // the rows it holds where it was carried from
	// Delta is the rows the version carried into gains (loses, when negative): it takes the
	// partition's rows whole, or, merged, the rows it lacked.
	Delta int64 `json:"delta"`
	// Merged is true when both sides were written since: the rows the target lacked were added.
	Merged bool `json:"merged,omitempty"`

	label string // the partition's start, as marks record it
}

// Equal compares what is recorded of a carried partition.
func (c Carried) Equal(o Carried) bool {
	return c.Partition == o.Partition && c.Rows == o.Rows && c.Delta == o.Delta && c.Merged == o.Merged
}

func (c Carried) String() string {
	s := fmt.Sprintf("%s %+d rows", c.Partition, c.Delta)
	if c.Delta == 0 {
		s = c.Partition + " changed"
	}
	if c.Merged {
		s += " (merged)"
	}
	return s
}

// CarriedList is cs one by one: "2026-09-01 +1174 rows, 2026-09-02 changed".
func CarriedList(cs []Carried) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return strings.Join(out, ", ")
}

// CarriedSummary says what cs carried: "2 partitions, +1,174 and +192 rows".
func CarriedSummary(cs []Carried) string {
	if len(cs) == 0 {
		return ""
	}
	var deltas []string
	for _, c := range cs {
		deltas = append(deltas, signedThousands(c.Delta))
	}
	noun := "partitions"
	if len(cs) == 1 {
		noun = "partition"
	}
	return fmt.Sprintf("%d %s, %s rows", len(cs), noun, joinAnd(deltas))
}

func joinAnd(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func signedThousands(n int64) string {
	sign := "+"
	if n < 0 {
		sign, n = "-", -n
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return sign + s
}

// carryPlan is what a publish carries for one change, and the marks it records once done.
type carryPlan struct {
	marks     Marks                    // column, grain and scope
	fromParts map[string]tsql.PartMark // the version being left, as measured
	carries   []tsql.Carry
	writeMark string // the engine's write mark of the version being left, before it was measured
	intoMark  string // and of the version being made live, before it was measured
	// intoScope are the scope's partitions of the version being made live, as measured; scopeWas
	// those of the version being left, as it went live, where they were not carried (NotCarried).
	intoScope map[string]tsql.PartMark
	scopeWas  map[string]tsql.PartMark
}

// ScopeChangedError refuses a swap: the live version's rows changed inside the backfill's scope
// since the build, and publishing would overwrite them.
type ScopeChangedError struct {
	Table, Version string
	Partitions     []Carried
	// Backfill is the backfill that built Version, whose latest run --catch-up recomputes.
	Backfill string
	// Since names when the live version was last alike, "" for Version's build: a swap back
	// to a version after a rollback compares with the live version as it went live again.
	Since string
}

func (e *ScopeChangedError) Error() string {
	parts := make([]string, len(e.Partitions))
	for i, p := range e.Partitions {
		parts[i] = p.String()
	}
	name := e.Backfill
	if name == "" {
		name = "NAME" // a version recorded without its backfill's name
	}
	since := e.Version + " was built"
	if e.Since != "" {
		since = e.Since
	}
	return fmt.Sprintf("%s changed inside the backfill's scope since %s: %s; publishing would overwrite those rows: recompute them with trueup backfill run %s --catch-up",
		e.Table, since, strings.Join(parts, ", "), name)
}

// Is makes errors.Is(err, fault.ErrConflict) true.
func (e *ScopeChangedError) Is(target error) bool { return target == fault.ErrConflict }

// planCarries works out, for each change of a publish of kind, what must be carried from the
// version being left into the one being made live, measuring the one being left (one scan) and
// the partitions to carry of the other. A change with nothing recorded to compare with carries
// nothing.
// The marks of every change are read in one statement (marksOfChanges).
func (s *Service) planCarries(ctx context.Context, changes []Change) error {
	return s.planCarriesWith(ctx, changes, nil)
}

// prefetchedMarks are the marks of a publish's changes, read while the publish reads something
// else (prefetchMarks).
type prefetchedMarks struct {
	changes []Change
	mss     map[string]map[markKey]Marks
	err     error
	done    chan struct{}
}

// prefetchMarks starts reading the marks of changes, the changes a publish expects to plan, at the
// same time as the caller reads what decides its plan: one statement of waiting fewer on the way
// (planCarriesWith).
func (s *Service) prefetchMarks(ctx context.Context, changes []Change) *prefetchedMarks {
	f := &prefetchedMarks{changes: changes, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.mss, f.err = s.store.marksOfChanges(ctx, s.target, changes)
	}()
	return f
}

// planCarriesWith is planCarries with the marks f read, when f read those of exactly changes; it
// reads them otherwise (the plan came out other than expected).
func (s *Service) planCarriesWith(ctx context.Context, changes []Change, f *prefetchedMarks) error {
	var mss map[string]map[markKey]Marks
	if f != nil {
		<-f.done
		same := slices.EqualFunc(f.changes, changes, func(a, b Change) bool {
			return a.Table == b.Table && a.From == b.From && a.To == b.To
		})
		if same && f.err == nil {
			mss = f.mss
		}
	}
	if mss == nil {
		var err error
		if mss, err = s.store.marksOfChanges(ctx, s.target, changes); err != nil {
			return err
		}
	}
	for i := range changes {
		if err := s.planCarryFrom(ctx, &changes[i], mss[changes[i].Table]); err != nil {
			return err
		}
	}
	return nil
}

// planCarry plans c's carry (planCarries), reading its marks.
func (s *Service) planCarry(ctx context.Context, c *Change) error {
	mss, err := s.store.marksOfChanges(ctx, s.target, []Change{*c})
	if err != nil {
		return err
	}
	return s.planCarryFrom(ctx, c, mss[c.Table])
}

// planCarryFrom plans c's carry given the marks ms of its two versions (marksOfChanges).
func (s *Service) planCarryFrom(ctx context.Context, c *Change, ms map[markKey]Marks) error {
	c.Carried, c.NotCarried, c.plan = nil, nil, nil
	if c.From == 0 || c.To == 0 {
		return nil
	}
	// What the version being left held when last alike the one being made live: as a build
	// carried it over (strict: the scope must not have changed), or as it went live, when that
	// came later (a rollback, a swap after one).
	var err error
	basis, hasBasis := ms[markKey{c.To, markBasis}]
	wentLive, hasLive := ms[markKey{c.From, markLive}]
	var ref, dest Marks
	strict := false
	switch {
	case hasLive && (!hasBasis || wentLive.takenAt.After(basis.takenAt)):
		ref = wentLive
		left, ok := ms[markKey{c.To, markLeft}]
		if dest = left; !ok {
			dest = wentLive
		}
	case hasBasis:
		ref, dest, strict = basis, basis, true
	default:
		return nil
	}
	from, to := Physical(c.Table, c.From), Physical(c.Table, c.To)
	plan := &carryPlan{marks: Marks{Column: ref.Column, Type: ref.Type, Grain: ref.Grain, Scope: ref.Scope}}
	if plan.writeMark, err = s.engine.WriteMark(ctx, from); err != nil {
		return err
	}
	if plan.fromParts, err = ref.measureRows(tsql.Yielding(ctx), s.engine, from, nil); err != nil {
		return err
	}
	var changed []string
	var inScope []Carried
	plan.scopeWas = map[string]tsql.PartMark{}
	for _, l := range slices.Sorted(maps.Keys(unionKeys(plan.fromParts, ref.Parts))) {
		now, was := plan.fromParts[l], ref.Parts[l]
		if now.Same(was) {
			continue
		}
		if ref.inScope(l) {
			switch {
			case strict:
				inScope = append(inScope, Carried{Partition: ref.show(l), Rows: now.Rows, Delta: now.Rows - was.Rows})
			case ref.ScopeParts:
				// written since it went live, where the version made live holds other rows
				c.NotCarried = append(c.NotCarried, Carried{Partition: ref.show(l), Rows: now.Rows, Delta: now.Rows - was.Rows})
				plan.scopeWas[l] = was
			}
			continue
		}
		changed = append(changed, l)
	}
	if len(inScope) > 0 {
		// The version's record names the backfill that built it (a strict basis is a build's).
		v, err := s.store.Get(ctx, s.target, c.Table, c.To)
		if err != nil {
			return fmt.Errorf("views: %s v%d changed inside the scope since the build; reading which backfill built it: %w", c.Table, c.To, err)
		}
		return &ScopeChangedError{Table: c.Table, Version: fmt.Sprintf("v%d", c.To), Partitions: inScope, Backfill: v.Backfill}
	}
	if plan.intoMark, err = s.engine.WriteMark(ctx, to); err != nil {
		return err
	}
	// The scope's partitions of the version made live are measured with those to carry: its live
	// mark records them, so that a publish leaving it can tell what was written there since.
	into, err := ref.measureRows(tsql.Yielding(ctx), s.engine, to, append(slices.Clone(changed), ref.Scope...))
	if err != nil {
		return err
	}
	plan.intoScope = map[string]tsql.PartMark{}
	for _, l := range ref.Scope {
		if pm, ok := into[l]; ok {
			plan.intoScope[l] = pm
		}
	}
	for _, l := range changed {
		now := plan.fromParts[l]
		if into[l].Same(now) {
			continue // written alike on both sides already
		}
		w, err := ref.window(l)
		if err != nil {
			return err
		}
		merge := !into[l].Same(dest.Parts[l]) // the version being made live was written there too
		carry := tsql.Carry{Into: to, From: from, Window: w, Merge: merge}
		if !merge {
			was := into[l]
			carry.IntoWas = &was // a writer still writing it meanwhile makes the carry plan again
		}
		plan.carries = append(plan.carries, carry)
		// What the version made live gains: a replace leaves it the rows of the version left (it
		// may hold some of them already: written there too, or caught up before).
		c.Carried = append(c.Carried, Carried{Partition: ref.show(l), Rows: now.Rows, Delta: now.Rows - into[l].Rows, Merged: merge})
	}
	// A merged partition adds to the version made live only the rows it lacks (what the version
	// left gained counts rows both sides were written).
	gains, err := s.engine.MergeGains(tsql.Yielding(ctx), plan.carries)
	if err != nil {
		return err
	}
	for i, carry := range plan.carries {
		if carry.Merge {
			c.Carried[i].Delta = gains[i]
		}
	}
	c.plan = plan
	return nil
}

// refuseHidden refuses a swap that would hide rows: a change whose version being left was
// written inside the scope of the version it makes live since it went live (a swap back after
// a rollback: Change.NotCarried), as the first swap after a build refuses it (ScopeChangedError).
// A rollback takes those rows back knowingly and names them instead.
func (s *Service) refuseHidden(ctx context.Context, changes []Change) error {
	for _, c := range changes {
		if len(c.NotCarried) == 0 {
			continue
		}
		v, err := s.store.Get(ctx, s.target, c.Table, c.To)
		if err != nil {
			return err
		}
		return &ScopeChangedError{Table: c.Table, Version: fmt.Sprintf("v%d", c.To), Partitions: c.NotCarried, Backfill: v.Backfill,
			Since: fmt.Sprintf("v%d went live again", c.From)}
	}
	return nil
}

func unionKeys(a, b map[string]tsql.PartMark) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// carryFirst carries p's partitions before its views are repointed, for an engine that cannot do
// both in one transaction: then it checks the engine's write mark of each version being left,
// and, when it moved (a write landed since the measure), plans and carries again, up to three
// times. A write landing after the last check is caught afterwards (Stale) and carried by
// CatchUp.
func (s *Service) carryFirst(ctx context.Context, p *Publish) error {
	for i := range p.Changes {
		c := &p.Changes[i]
		if c.plan == nil {
			continue
		}
		var done []Carried // what the rounds so far carried
		for attempt := 0; c.plan != nil; attempt++ {
			// A writer still writing the version being made live since it was measured: a
			// replace would delete its rows, so plan again first (the engines with transactions
			// check the same inside theirs: tsql.ErrCarryMoved).
			into, err := s.engine.WriteMark(ctx, Physical(c.Table, c.To))
			if err != nil {
				return err
			}
			if into != c.plan.intoMark && attempt < 2 {
				if err := s.planCarry(ctx, c); err != nil {
					return err
				}
				continue
			}
			if err := s.engine.CarryPartitions(ctx, c.plan.carries); err != nil {
				return fmt.Errorf("views: carry into %s: %w", Physical(c.Table, c.To), err)
			}
			done = mergeCarried(done, c.Carried)
			now, err := s.engine.WriteMark(ctx, Physical(c.Table, c.From))
			if err != nil {
				return err
			}
			if now == c.plan.writeMark || attempt == 2 {
				break
			}
			if err := s.planCarry(ctx, c); err != nil {
				return err
			}
		}
		c.Carried = done
	}
	return nil
}

// mergeCarried is what two rounds of carrying carried, by partition, the later round's count kept.
func mergeCarried(a, b []Carried) []Carried {
	out := slices.Clone(a)
	for _, c := range b {
		if i := slices.IndexFunc(out, func(x Carried) bool { return x.Partition == c.Partition }); i >= 0 {
			c.Delta += out[i].Delta
			out[i] = c
		} else {
			out = append(out, c)
		}
	}
	return out
}

// notedCarries is what the repoint's transaction carries into the version change c makes live.
func (c Change) notedCarries() []tsql.Carry {
	if c.plan == nil {
		return nil
	}
	return c.plan.carries
}

// recordMarks records the marks of publish p before the engine acts: each version it leaves as
// measured, each version it makes live as it will hold the partitions outside the scope. Written
// first, they survive a crash between the repoint and the outcome (recovery records the publish
// from the engine, not them). A publish that then fails leaves them harmless: a version's live
// mark is read only while it is live and its left mark only while it is not, and the next
// publish that makes it so writes them again.
func (s *Service) recordMarks(ctx context.Context, p Publish) error {
	if !slices.ContainsFunc(p.Changes, func(c Change) bool { return c.plan != nil }) {
		return nil
	}
	return s.ledger.Tx(ctx, func(tx *dbsql.Tx) error {
		for _, c := range p.Changes {
			if c.plan == nil {
				continue
			}
			left := c.plan.marks
			left.Parts, left.LeftFor = maps.Clone(c.plan.fromParts), c.To
			for l, was := range c.plan.scopeWas {
				// Not carried: the version left is recorded as it went live there, so that the
				// rows written since are stale (Stale) and stay named until dealt with.
				if was.Rows == 0 && was.Sum == "" {
					delete(left.Parts, l)
				} else {
					left.Parts[l] = was
				}
			}
			if err := s.store.saveMarks(ctx, tx, s.target, c.Table, c.From, markLeft, left); err != nil {
				return err
			}
			live := c.plan.marks
			live.Parts, live.ScopeParts = map[string]tsql.PartMark{}, true
			for l, pm := range c.plan.fromParts {
				if !live.inScope(l) {
					live.Parts[l] = pm
				}
			}
			maps.Copy(live.Parts, c.plan.intoScope)
			if err := s.store.saveMarks(ctx, tx, s.target, c.Table, c.To, markLive, live); err != nil {
				return err
			}
		}
		return nil
	})
}

// CarryLine says what a change of a publish of kind carries, "" when nothing: planned, "live
// changed since the build: 2 partitions, +1,174 and +192 rows — will be carried into v2"; done,
// "carried into v2 what live gained since the build: 2 partitions, …".
func (c Change) CarryLine(kind string, planned bool) string {
	if len(c.Carried) == 0 {
		return ""
	}
	since := "the build"
	if kind == KindRollback {
		since = "the swap"
	}
	if planned {
		return fmt.Sprintf("live changed since %s: %s — will be carried into v%d", since, CarriedSummary(c.Carried), c.To)
	}
	return fmt.Sprintf("carried into v%d what live gained since %s: %s", c.To, since, CarriedSummary(c.Carried))
}

// NotCarriedLine says which partitions inside the scope the version a change of a publish of kind
// leaves was written in since it went live, "" when none: they are not carried into the version
// made live, and their rows stay in the version left, not visible to readers. planned is the
// confirmation's wording, else the publish's.
func (c Change) NotCarriedLine(kind string, planned bool) string {
	if len(c.NotCarried) == 0 {
		return ""
	}
	since := "the swap"
	if kind == KindSwap {
		since = "it went live"
	}
	verb := "are not carried"
	if !planned {
		verb = "were not carried"
	}
	return fmt.Sprintf("v%d was written inside the backfill's scope since %s: %s; these rows %s into v%d (the versions differ there by design) and stay in %s, not visible to readers: trueup catch-up %s lists them",
		c.From, since, CarriedList(c.NotCarried), verb, c.To, Physical(c.Table, c.From), c.Table)
}

// NotCarriedSummary says what p did not carry, table by table: "orders 2026-07-12 +2 rows left in
// orders__v2", "" when nothing.
func (p Publish) NotCarriedSummary() string {
	var out []string
	for _, c := range p.Changes {
		if len(c.NotCarried) > 0 {
			out = append(out, fmt.Sprintf("%s %s left in %s", c.Table, CarriedList(c.NotCarried), Physical(c.Table, c.From)))
		}
	}
	return strings.Join(out, "; ")
}

// CarriedSummary says what p carried, table by table: "orders 1 partition, +5 rows carried into
// v2; daily_revenue …", "" when nothing.
func (p Publish) CarriedSummary() string {
	var out []string
	for _, c := range p.Changes {
		if len(c.Carried) > 0 {
			out = append(out, fmt.Sprintf("%s %s carried into v%d", c.Table, CarriedSummary(c.Carried), c.To))
		}
	}
	return strings.Join(out, "; ")
}
