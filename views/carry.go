package views

import (
	"context"
	dbsql "database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"trueup/fault"
	"trueup/ledger"
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
//     makes live (live): a rollback carries back the partitions the live version gained
//     outside the scope since, a later swap those gained since the rollback, and a version
//     written after it stopped being live is caught (Stale) and carried over (CatchUp).
//
// A partition written on both sides since (a stale writer) is merged, adding the rows one side
// lacks (tsql.Carry.Merge); otherwise it is replaced whole.

// Mark kinds (the ledger's version_marks.mark).
const (
	markBasis = "basis"
	markLive  = "live"
	markLeft  = "left"
)

// Marks are the fingerprints of one version's partitions at one moment.
type Marks struct {
	Column string    `json:"column"`
	Type   tsql.Type `json:"type"`
	Grain  string    `json:"grain"`
	// Scope lists the partitions the backfill rebuilt: not carried, and, changed in the live
	// version since the build, a refusal.
	Scope []string                 `json:"scope,omitempty"`
	Parts map[string]tsql.PartMark `json:"parts"`

	takenAt time.Time
}

func (m Marks) inScope(label string) bool { return slices.Contains(m.Scope, label) }

// window is the window of the partition label names.
func (m Marks) window(label string) (tsql.Window, error) {
	t, err := time.Parse(time.RFC3339, label)
	if err != nil {
		return tsql.Window{}, fmt.Errorf("views: partition %q in a mark: %w", label, err)
	}
	return tsql.Window{Column: m.Column, Type: m.Type, Start: t, End: tsql.NextGrain(t, m.Grain)}, nil
}

// show is how people read partition label.
func (m Marks) show(label string) string {
	t, err := time.Parse(time.RFC3339, label)
	if err != nil {
		return label
	}
	return tsql.FormatGrain(t, m.Grain)
}

// measure fingerprints relation's partitions as m's (only those of labels, when given).
func (m Marks) measure(ctx context.Context, e tsql.Engine, relation string, labels []string) (map[string]tsql.PartMark, error) {
	var only []tsql.Window
	for _, l := range labels {
		w, err := m.window(l)
		if err != nil {
			return nil, err
		}
		only = append(only, w)
	}
	if labels != nil && len(only) == 0 {
		return map[string]tsql.PartMark{}, nil
	}
	got, err := tsql.MeasurePartitions(ctx, e, relation, m.Column, m.Grain, only)
	if err != nil {
		return nil, err
	}
	out := make(map[string]tsql.PartMark, len(got))
	for t, pm := range got {
		out[t.UTC().Format(time.RFC3339)] = pm
	}
	return out, nil
}

// RecordBasis measures live, the version a backfill run carries partitions from, and records it
// as the basis of version n of table, the one the run builds, whose scope lists the partitions
// the run rebuilds (as their starts). Call it before the carry: a row written between the two
// is in the new version and not in the basis, and is carried again, harmlessly, at the swap.
func (s Store) RecordBasis(ctx context.Context, e tsql.Engine, target, table string, n int, live, column string,
	typ tsql.Type, grain string, scope []time.Time) error {
	m := Marks{Column: column, Type: typ, Grain: grain}
	for _, t := range scope {
		m.Scope = append(m.Scope, t.UTC().Format(time.RFC3339))
	}
	parts, err := m.measure(ctx, e, live, nil)
	if err != nil {
		return err
	}
	m.Parts = parts
	return s.saveMarks(ctx, nil, target, table, n, markBasis, m)
}

// RefreshBasis records the live version's partitions of labels again in version n's basis: a
// catch-up recomputed them from what live holds now.
func (s Store) RefreshBasis(ctx context.Context, e tsql.Engine, target, table string, n int, live string, starts []time.Time) error {
	m, ok, err := s.marks(ctx, target, table, n, markBasis)
	if err != nil || !ok {
		return err
	}
	labels := make([]string, len(starts))
	for i, t := range starts {
		labels[i] = t.UTC().Format(time.RFC3339)
	}
	now, err := m.measure(ctx, e, live, labels)
	if err != nil {
		return err
	}
	for _, l := range labels {
		if pm, ok := now[l]; ok {
			m.Parts[l] = pm
		} else {
			delete(m.Parts, l)
		}
	}
	return s.saveMarks(ctx, nil, target, table, n, markBasis, m)
}

// saveMarks records m as version n's mark of kind, replacing the one before; in tx when given.
func (s Store) saveMarks(ctx context.Context, tx *dbsql.Tx, target, table string, n int, kind string, m Marks) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	const q = `INSERT OR REPLACE INTO version_marks (target, table_name, version, mark, taken_at, body)
		VALUES (?, ?, ?, ?, ?, ?)`
	args := []any{target, table, n, kind, s.L.Now(), string(body)}
	if tx != nil {
		_, err = tx.ExecContext(ctx, q, args...)
	} else {
		_, err = s.L.DB().ExecContext(ctx, q, args...)
	}
	if err != nil {
		return fmt.Errorf("views: record the partitions of %s: %w", Physical(table, n), err)
	}
	return nil
}

// marks reads version n's mark of kind; ok is false when there is none.
func (s Store) marks(ctx context.Context, target, table string, n int, kind string) (Marks, bool, error) {
	var body string
	var at time.Time
	err := s.L.DB().QueryRowContext(ctx, `SELECT body, taken_at FROM version_marks
		WHERE target = ? AND table_name = ? AND version = ? AND mark = ?`, target, table, n, kind).Scan(&body, &at)
	if errors.Is(err, dbsql.ErrNoRows) {
		return Marks{}, false, nil
	}
	if err != nil {
		return Marks{}, false, fmt.Errorf("views: read the partitions recorded of %s: %w", Physical(table, n), err)
	}
	var m Marks
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return Marks{}, false, fmt.Errorf("views: read the partitions recorded of %s: %w", Physical(table, n), err)
	}
	if m.Parts == nil {
		m.Parts = map[string]tsql.PartMark{}
	}
	m.takenAt = at
	return m, true, nil
}

// Carried is one partition a publish or a catch-up carried (or would carry) into the version it
// makes live.
type Carried struct {
	Partition string `json:"partition"`
	Rows      int64  `json:"rows"`  // the rows it holds where it was carried from
	Delta     int64  `json:"delta"` // rows gained (lost, when negative) since they were last alike
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
}

// ScopeChangedError refuses a swap: the live version's rows changed inside the backfill's scope
// since the build, and publishing would overwrite them.
type ScopeChangedError struct {
	Table, Version string
	Partitions     []Carried
}

func (e *ScopeChangedError) Error() string {
	parts := make([]string, len(e.Partitions))
	for i, p := range e.Partitions {
		parts[i] = p.String()
	}
	return fmt.Sprintf("%s changed inside the backfill's scope since %s was built: %s; publishing would overwrite those rows: recompute them with trueup backfill run --catch-up",
		e.Table, e.Version, strings.Join(parts, ", "))
}

// Is makes errors.Is(err, fault.ErrConflict) true.
func (e *ScopeChangedError) Is(target error) bool { return target == fault.ErrConflict }

// planCarries works out, for each change of a publish of kind, what must be carried from the
// version being left into the one being made live, measuring the one being left (one scan) and
// the partitions to carry of the other. A change with nothing recorded to compare with carries
// nothing.
func (s *Service) planCarries(ctx context.Context, changes []Change) error {
	for i := range changes {
		if err := s.planCarry(ctx, &changes[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) planCarry(ctx context.Context, c *Change) error {
	c.Carried, c.plan = nil, nil
	if c.From == 0 || c.To == 0 {
		return nil
	}
	// What the version being left held when last alike the one being made live: as a build
	// carried it over (strict: the scope must not have changed), or as it went live, when that
	// came later (a rollback, a swap after one).
	basis, hasBasis, err := s.store.marks(ctx, s.target, c.Table, c.To, markBasis)
	if err != nil {
		return err
	}
	wentLive, hasLive, err := s.store.marks(ctx, s.target, c.Table, c.From, markLive)
	if err != nil {
		return err
	}
	var ref, dest Marks
	strict := false
	switch {
	case hasLive && (!hasBasis || wentLive.takenAt.After(basis.takenAt)):
		ref = wentLive
		left, ok, err := s.store.marks(ctx, s.target, c.Table, c.To, markLeft)
		if err != nil {
			return err
		}
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
	if plan.fromParts, err = ref.measure(ctx, s.engine, from, nil); err != nil {
		return err
	}
	var changed []string
	var inScope []Carried
	for _, l := range slices.Sorted(maps.Keys(unionKeys(plan.fromParts, ref.Parts))) {
		now, was := plan.fromParts[l], ref.Parts[l]
		if now == was {
			continue
		}
		if ref.inScope(l) {
			if strict {
				inScope = append(inScope, Carried{Partition: ref.show(l), Rows: now.Rows, Delta: now.Rows - was.Rows})
			}
			continue
		}
		changed = append(changed, l)
	}
	if len(inScope) > 0 {
		return &ScopeChangedError{Table: c.Table, Version: fmt.Sprintf("v%d", c.To), Partitions: inScope}
	}
	into, err := ref.measure(ctx, s.engine, to, changed)
	if err != nil {
		return err
	}
	for _, l := range changed {
		now := plan.fromParts[l]
		if into[l] == now {
			continue // written alike on both sides already
		}
		w, err := ref.window(l)
		if err != nil {
			return err
		}
		merge := into[l] != dest.Parts[l] // the version being made live was written there too
		plan.carries = append(plan.carries, tsql.Carry{Into: to, From: from, Window: w, Merge: merge})
		c.Carried = append(c.Carried, Carried{Partition: ref.show(l), Rows: now.Rows, Delta: now.Rows - ref.Parts[l].Rows, Merged: merge})
	}
	c.plan = plan
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
		for attempt := 0; c.plan != nil; attempt++ {
			if err := s.engine.CarryPartitions(ctx, c.plan.carries); err != nil {
				return fmt.Errorf("views: carry into %s: %w", Physical(c.Table, c.To), err)
			}
			now, err := s.engine.WriteMark(ctx, Physical(c.Table, c.From))
			if err != nil {
				return err
			}
			if now == c.plan.writeMark || attempt == 2 {
				break
			}
			done := c.Carried
			if err := s.planCarry(ctx, c); err != nil {
				return err
			}
			c.Carried = mergeCarried(done, c.Carried)
		}
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
			left.Parts = c.plan.fromParts
			if err := s.store.saveMarks(ctx, tx, s.target, c.Table, c.From, markLeft, left); err != nil {
				return err
			}
			live := c.plan.marks
			live.Parts = map[string]tsql.PartMark{}
			for l, pm := range c.plan.fromParts {
				if !live.inScope(l) {
					live.Parts[l] = pm
				}
			}
			if err := s.store.saveMarks(ctx, tx, s.target, c.Table, c.To, markLive, live); err != nil {
				return err
			}
		}
		return nil
	})
}

// StaleVersion is a version written after it stopped being live: its rows in Partitions are not
// visible to readers.
type StaleVersion struct {
	Table      string    `json:"table"`
	Version    int       `json:"version"`
	Live       int       `json:"live"`
	Partitions []Carried `json:"partitions"`
	// InScope are partitions of the scope of the backfill that replaced it: not carried by
	// CatchUp (the backfill rebuilt them), listed for the operator.
	InScope []Carried `json:"in_scope,omitempty"`
}

func (v StaleVersion) String() string {
	parts := make([]string, len(v.Partitions)+len(v.InScope))
	for i, p := range append(slices.Clone(v.Partitions), v.InScope...) {
		parts[i] = p.String()
	}
	return fmt.Sprintf("%s changed after it stopped being live: %s not visible to readers",
		Physical(v.Table, v.Version), strings.Join(parts, ", "))
}

// Stale finds the versions of table written after they stopped being live: each version not
// live, not retired, whose partitions differ from those recorded as it was left.
func (s *Service) Stale(ctx context.Context, table string) ([]StaleVersion, error) {
	vs, err := s.store.List(ctx, s.target, table)
	if err != nil {
		return nil, err
	}
	live := 0
	for _, v := range vs {
		if v.State == StateLive {
			live = v.N
		}
	}
	var out []StaleVersion
	for _, v := range vs {
		if v.State == StateLive || v.State == StateRetired || live == 0 {
			continue
		}
		left, ok, err := s.store.marks(ctx, s.target, table, v.N, markLeft)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		now, err := left.measure(ctx, s.engine, v.Physical(), nil)
		if err != nil {
			return nil, err
		}
		sv := StaleVersion{Table: table, Version: v.N, Live: live}
		for _, l := range slices.Sorted(maps.Keys(unionKeys(now, left.Parts))) {
			if now[l] == left.Parts[l] {
				continue
			}
			c := Carried{Partition: left.show(l), Rows: now[l].Rows, Delta: now[l].Rows - left.Parts[l].Rows, label: l}
			if left.inScope(l) {
				sv.InScope = append(sv.InScope, c)
			} else {
				sv.Partitions = append(sv.Partitions, c)
			}
		}
		if len(sv.Partitions)+len(sv.InScope) > 0 {
			out = append(out, sv)
		}
	}
	return out, nil
}

// CatchUpResult is what a catch-up carried into table's live version.
type CatchUpResult struct {
	Table   string         `json:"table"`
	Live    int            `json:"live"`
	Carried []StaleVersion `json:"carried"`
}

// CatchUp carries into table's live version the partitions written to its other versions after
// they stopped being live (Stale), outside the scopes of the backfills that replaced them: each
// replaced whole when the live version was not written there since, merged otherwise. It is
// recorded in the audit log. Partitions inside a scope are listed, not carried.
func (s *Service) CatchUp(ctx context.Context, table, actor string) (CatchUpResult, error) {
	actor = orLocal(actor)
	_, unlock, err := s.lock([]string{table}, actor, "catch-up")
	if err != nil {
		return CatchUpResult{}, err
	}
	defer unlock()
	stale, err := s.Stale(ctx, table)
	if err != nil {
		return CatchUpResult{}, err
	}
	res := CatchUpResult{Table: table, Carried: []StaleVersion{}}
	for _, sv := range stale {
		res.Live = sv.Live
		left, _, err := s.store.marks(ctx, s.target, table, sv.Version, markLeft)
		if err != nil {
			return res, err
		}
		liveMarks, _, err := s.store.marks(ctx, s.target, table, sv.Live, markLive)
		if err != nil {
			return res, err
		}
		from, into := Physical(table, sv.Version), Physical(table, sv.Live)
		var carries []tsql.Carry
		done := sv.Partitions
		for _, c := range done {
			w, err := left.window(c.label)
			if err != nil {
				return res, err
			}
			carries = append(carries, tsql.Carry{Into: into, From: from, Window: w})
		}
		if len(carries) == 0 {
			continue
		}
		intoNow, err := left.measure(ctx, s.engine, into, labelsOf(carries))
		if err != nil {
			return res, err
		}
		for i := range carries {
			l := carries[i].Window.Start.UTC().Format(time.RFC3339)
			if intoNow[l] != liveMarks.Parts[l] {
				carries[i].Merge, done[i].Merged = true, true
			}
		}
		if err := s.engine.CarryPartitions(ctx, carries); err != nil {
			return res, fmt.Errorf("views: catch up %s: %w", table, err)
		}
		// The version left is taken as it is now: what it holds is in the live version.
		now, err := left.measure(ctx, s.engine, from, nil)
		if err != nil {
			return res, err
		}
		for _, c := range carries {
			l := c.Window.Start.UTC().Format(time.RFC3339)
			if pm, ok := now[l]; ok {
				left.Parts[l] = pm
			} else {
				delete(left.Parts, l)
			}
		}
		if err := s.store.saveMarks(ctx, nil, s.target, table, sv.Version, markLeft, left); err != nil {
			return res, err
		}
		sv.Partitions = done
		res.Carried = append(res.Carried, sv)
		detail := fmt.Sprintf("carried %s from %s into %s", CarriedSummary(done), from, into)
		s.ledger.Audit(ctx, ledger.Entry{Actor: actor, Action: "view.catch-up", Target: table, Outcome: ledger.OutcomeOK, Detail: detail,
			Params: map[string]any{"target": s.target, "from": sv.Version, "into": sv.Live, "partitions": done}})
	}
	return res, nil
}

func labelsOf(cs []tsql.Carry) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Window.Start.UTC().Format(time.RFC3339)
	}
	return out
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

// CatchUpBuild brings version n of table, built by a backfill run, up to what the live version
// holds now: the partitions outside the run's scope that changed in live since the build are
// carried into it (and recorded so in its basis), and the partitions inside the scope whose live
// rows changed are returned, by their starts, for the backfill to recompute (see
// RefreshBasis); a swap would refuse them (ScopeChangedError). Nothing without a basis.
func (s Store) CatchUpBuild(ctx context.Context, e tsql.Engine, target, table string, n int) ([]time.Time, []Carried, error) {
	basis, ok, err := s.marks(ctx, target, table, n, markBasis)
	if err != nil || !ok {
		return nil, nil, err
	}
	live, err := e.ViewSource(ctx, table)
	if err != nil {
		return nil, nil, err
	}
	now, err := basis.measure(ctx, e, live, nil)
	if err != nil {
		return nil, nil, err
	}
	var inScope []time.Time
	var carries []tsql.Carry
	var carried []Carried
	for _, l := range slices.Sorted(maps.Keys(unionKeys(now, basis.Parts))) {
		if now[l] == basis.Parts[l] {
			continue
		}
		w, err := basis.window(l)
		if err != nil {
			return nil, nil, err
		}
		if basis.inScope(l) {
			inScope = append(inScope, w.Start)
			continue
		}
		carries = append(carries, tsql.Carry{Into: Physical(table, n), From: live, Window: w})
		carried = append(carried, Carried{Partition: basis.show(l), Rows: now[l].Rows, Delta: now[l].Rows - basis.Parts[l].Rows})
		if pm, ok := now[l]; ok {
			basis.Parts[l] = pm
		} else {
			delete(basis.Parts, l)
		}
	}
	if len(carries) > 0 {
		if err := e.CarryPartitions(ctx, carries); err != nil {
			return nil, nil, fmt.Errorf("views: carry into %s: %w", Physical(table, n), err)
		}
		if err := s.saveMarks(ctx, nil, target, table, n, markBasis, basis); err != nil {
			return nil, nil, err
		}
	}
	return inScope, carried, nil
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

// Watched reports whether trueup recorded a version of table as it stopped being live: whether
// Stale has anything to compare with.
func (s Store) Watched(ctx context.Context, target, table string) (bool, error) {
	var n int
	err := s.L.DB().QueryRowContext(ctx, `SELECT count(*) FROM version_marks WHERE target = ? AND table_name = ? AND mark = ?`,
		target, table, markLeft).Scan(&n)
	return n > 0, err
}

// WriteTarget is the version writers of table must insert into now: the one its view reads, as
// the engine says, read without a lock or a repair so that a pipeline may ask before every
// batch while swaps go on. 0 when the table has no view.
func (s *Service) WriteTarget(ctx context.Context, table string) (int, error) {
	src, err := s.engine.ViewSource(ctx, table)
	if errors.Is(err, fault.ErrNotFound) {
		if vs, lerr := s.store.List(ctx, s.target, table); lerr != nil || len(vs) > 0 {
			return 0, lerr // versions, and no view: nothing to write to yet
		}
		return 0, notFoundf("%s is not a logical table in target %s", table, s.target)
	}
	if err != nil {
		return 0, err
	}
	name, n, ok := ParseVersion(src)
	if !ok || name != table {
		return 0, fault.New(fault.Conflict, "%s reads %s, not a version of it: trueup adopt %s makes it one", table, src, table)
	}
	return n, nil
}

// Hold takes tables of target for a writer inside trueup (trueup run) as a swap takes them,
// waiting up to wait while a swap, rollback or catch-up holds one: no publish measures, carries
// or repoints them while the writer writes, so its rows are in the version a swap makes live.
func Hold(ctx context.Context, l *ledger.Ledger, target string, tables []string, actor string, wait time.Duration) (func(), error) {
	s := &Service{target: target, ledger: l, locks: locksOf(l, target)}
	deadline := time.Now().Add(wait)
	for {
		_, unlock, err := s.lock(tables, actor, "write")
		if err == nil {
			return unlock, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Scope is the scope recorded in the basis of version n of table, by partition start; ok is
// false when no basis is recorded (a version not built by a run, or not prepared yet).
func (s Store) Scope(ctx context.Context, target, table string, n int) ([]time.Time, bool, error) {
	m, ok, err := s.marks(ctx, target, table, n, markBasis)
	if err != nil || !ok {
		return nil, ok, err
	}
	out := make([]time.Time, 0, len(m.Scope))
	for _, l := range m.Scope {
		t, err := time.Parse(time.RFC3339, l)
		if err != nil {
			return nil, false, err
		}
		out = append(out, t)
	}
	return out, true, nil
}
