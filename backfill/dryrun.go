package backfill

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"trueup/fault"
	"trueup/reconcile"
	tsql "trueup/sql"
)

// Preview is what a dry run or a reproducibility check found, table by table.
type Preview struct {
	Backfill string         `json:"backfill"`
	Plan     *Plan          `json:"plan,omitempty"`
	Tables   []PreviewTable `json:"tables"`
	OK       bool           `json:"ok"` // dry run: expectations met; verify: nothing differs
	Notes    []string       `json:"notes,omitempty"`
}

// PreviewTable is one table's diff against its live version.
type PreviewTable struct {
	Table  string            `json:"table"`
	Live   string            `json:"live"`
	Result *reconcile.Result `json:"diff"`
}

// scratchName is a table of trueup's own, never a version readers could see.
func scratchName(table string) string {
	b := make([]byte, 4)
	rand.Read(b)
	return table + "__scratch_" + hex.EncodeToString(b)
}

// readWindow is a window a downstream transform reads of its upstream table: a partition of
// the downstream table, at its grain.
type readWindow struct {
	start time.Time
	grain string
}

// buildScratch computes a backfill's transform for the given partitions into a new scratch
// table shaped like the live version, and returns its name; the caller drops it. The windows
// read, those of downstream partitions coarser than b's (a month of days), are first filled
// with the live version's rows, so that a downstream transform reading the scratch sees the
// whole window as a run would build it: the partitions rebuilt, the others as they are.
func (r *Runner) buildScratch(ctx context.Context, b *Backfill, parts []time.Time, rewrite map[string]string, read []readWindow) (string, string, []tsql.Window, error) {
	e := r.Planner.Engine
	live, err := e.ViewSource(ctx, b.Table)
	if err != nil {
		return "", "", nil, fmt.Errorf("table %s: %w", b.Table, err)
	}
	typ, err := r.partitionType(ctx, live, b.Partition)
	if err != nil {
		return "", "", nil, err
	}
	sql, err := r.Planner.pointAt(ctx, b.SQL, rewrite)
	if err != nil {
		return "", "", nil, err
	}
	scratch := scratchName(b.Table)
	if err := e.CreateTableLike(ctx, scratch, live); err != nil {
		return "", "", nil, fmt.Errorf("scratch for %s: %w", b.Table, err)
	}
	var windows []tsql.Window
	var writes []tsql.PartitionWrite
	fail := func(err error) (string, string, []tsql.Window, error) {
		e.DropTable(context.WithoutCancel(ctx), scratch)
		return "", "", nil, err
	}
	var fill []tsql.PartitionWrite
	for _, rw := range read {
		fill = append(fill, tsql.PartitionWrite{Window: window(b.Partition, typ, rw.start, rw.grain), Query: "SELECT * FROM " + e.Dialect().QuoteRelation(live)})
	}
	if len(fill) > 0 {
		if _, err := e.ReplacePartitions(ctx, scratch, fill); err != nil {
			return fail(fmt.Errorf("scratch for %s: the live rows downstream tables read: %w", b.Table, err))
		}
	}
	for i, p := range parts {
		w := window(b.Partition, typ, p, b.Grain)
		windows = append(windows, w)
		q, args, err := tsql.Expand(e.Dialect(), sql, w.Params())
		if err != nil {
			return fail(fmt.Errorf("%s partition %s: %w", b.Table, formatPartition(p, b.Grain), err))
		}
		writes = append(writes, tsql.PartitionWrite{Window: w, Query: q, Args: args})
		// a commit per maxBatch partitions: a preview writes nothing anyone reads yet
		if len(writes) == maxBatch || i == len(parts)-1 {
			if _, err := e.ReplacePartitions(ctx, scratch, writes); err != nil {
				return fail(fmt.Errorf("%s partitions %s..%s: %w", b.Table, formatPartition(writes[0].Window.Start, b.Grain), formatPartition(p, b.Grain), err))
			}
			writes = writes[:0]
		}
	}
	return scratch, live, windows, nil
}

// DryRun computes the backfill's new rows for its scope into scratch tables — the live and
// versioned tables are not touched — and diffs them with the live version, judged against the
// expectations. Downstream tables that are not cumulative are previewed the same way.
func (r *Runner) DryRun(ctx context.Context, name string, scope *Scope) (*Preview, error) {
	b, err := r.Planner.Set.Get(name)
	if err != nil {
		return nil, err
	}
	plan, err := r.Planner.Plan(ctx, b, scope)
	if err != nil {
		return nil, err
	}
	pv := &Preview{Backfill: name, Plan: plan, OK: true}
	if plan.Blocked() {
		pv.OK = false
		return pv, nil
	}
	parts := map[string][]time.Time{}
	for _, p := range plan.Partitions {
		t, _ := ParsePartition(p, b.Grain)
		parts[b.Table] = append(parts[b.Table], t)
	}
	order := []*Backfill{b}
	for _, d := range plan.Downstream {
		db := r.Planner.Set.ForTable(d.Table)
		if _, seen := parts[d.Table]; !seen {
			order = append(order, db)
		}
		t, _ := ParsePartition(d.Partition, db.Grain)
		parts[d.Table] = append(parts[d.Table], t)
	}
	// The windows each table's downstream tables read of it, where coarser than its partitions.
	read := map[string][]readWindow{}
	for _, d := range plan.Downstream {
		db := r.Planner.Set.ForTable(d.Table)
		t, _ := ParsePartition(d.Partition, db.Grain)
		for _, up := range order {
			if up != db && tsql.CoarserGrain(db.Grain, up.Grain) && slices.Contains(tsql.TableRefs(db.SQL), up.Table) {
				read[up.Table] = append(read[up.Table], readWindow{start: t, grain: db.Grain})
			}
		}
	}
	rewrite := map[string]string{}
	var scratches []string
	defer func() {
		for _, s := range scratches {
			r.Planner.Engine.DropTable(context.WithoutCancel(ctx), s)
		}
	}()
	for _, tb := range order {
		if tb.Cumulative {
			pv.Notes = append(pv.Notes, fmt.Sprintf("%s is cumulative: it is not previewed (its partitions read every earlier one)", tb.Table))
			continue
		}
		scratch, live, windows, err := r.buildScratch(ctx, tb, parts[tb.Table], rewrite, read[tb.Table])
		if err != nil {
			return nil, err
		}
		scratches = append(scratches, scratch)
		rewrite[tb.Table] = scratch
		res, err := r.diffScratch(ctx, tb, live, scratch, windows, tb.Expect)
		if err != nil {
			return nil, err
		}
		res.New.Relation = tb.Table + " (dry run)"
		if !res.ExpectationsMet {
			pv.OK = false
		}
		pv.Tables = append(pv.Tables, PreviewTable{Table: tb.Table, Live: live, Result: res})
	}
	return pv, nil
}

// Verify recomputes the partitions from..to with the backfill's transform into scratch space
// and diffs them with the live version, writing nothing. Any difference means the live table is
// no longer a function of its inputs and code.
func (r *Runner) Verify(ctx context.Context, name string, from, to time.Time) (*Preview, error) {
	b, err := r.Planner.Set.Get(name)
	if err != nil {
		return nil, err
	}
	parts := partitionsBetween(tsql.TruncGrain(from, b.Grain), tsql.TruncGrain(to, b.Grain), b.Grain)
	scratch, live, windows, err := r.buildScratch(ctx, b, parts, nil, nil)
	if err != nil {
		return nil, err
	}
	defer r.Planner.Engine.DropTable(context.WithoutCancel(ctx), scratch)
	res, err := r.diffScratch(ctx, b, live, scratch, windows, "")
	if err != nil {
		return nil, err
	}
	res.New.Relation = b.Table + " (recomputed)"
	return &Preview{Backfill: name, Tables: []PreviewTable{{Table: b.Table, Live: live, Result: res}}, OK: !res.Differs}, nil
}

func (r *Runner) diffScratch(ctx context.Context, b *Backfill, live, scratch string, windows []tsql.Window, expect string) (*reconcile.Result, error) {
	spec, err := r.diffSpec(ctx, b, live, scratch, live, windows, windows, expect)
	if err != nil {
		return nil, err
	}
	return reconcile.Diff(ctx, spec)
}

// diffSpec is the diff of relation new against live over the windows of scope, reading only
// those of windows (nil: all), with the measures of relation measured and the expectations
// expect states. Its partitions are the backfill's: a month backfill is compared, and judged,
// a month at a time, as it was built.
func (r *Runner) diffSpec(ctx context.Context, b *Backfill, live, new, measured string, scope, windows []tsql.Window, expect string) (reconcile.Spec, error) {
	e := r.Planner.Engine
	measures, err := r.measures(ctx, measured)
	if err != nil {
		return reconcile.Spec{}, err
	}
	spec := reconcile.Spec{
		Old: reconcile.Side{Engine: e, Relation: live, Target: r.Planner.Target},
		New: reconcile.Side{Engine: e, Relation: new, Target: r.Planner.Target},
		Key: b.Key, Partition: b.Partition, Grain: b.Grain, Measures: measures, Scope: scope, Windows: windows,
	}
	if expect != "" {
		exp, err := reconcile.ParseExpectations(expect)
		if err != nil {
			return reconcile.Spec{}, fault.New(fault.Invalid, "%s: expect: %w", b.Path, err)
		}
		spec.Expect = exp
	}
	return spec, nil
}
