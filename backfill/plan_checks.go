package backfill

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"trueup/fault"
	tsql "trueup/sql"
)

// transform is one backfill a run executes — the planned one, then each downstream one — with
// the partition windows it runs for. The plan checks each the same way.
type transform struct {
	b       *Backfill
	windows []tsql.Window
	parts   []string
	err     error // why its windows are unknown
}

// label prefixes messages about a downstream transform with its table.
func (t transform) label() string {
	if t.parts == nil {
		return ""
	}
	return "downstream " + t.b.Table + ": "
}

// name is how messages call the transform.
func (t transform) name() string {
	if t.parts == nil {
		return "the transform"
	}
	return "the transform of downstream " + t.b.Table
}

// downstreamTransforms are the downstream backfills of a plan in build order, each with the
// partitions it refreshes, their inputs checked (except the tables built before it in the same
// run: they are rebuilt, not read as they are).
func (pl Planner) downstreamTransforms(ctx context.Context, b *Backfill, p *Plan) []transform {
	var out []transform
	built := map[string]bool{b.Table: true}
	for _, tr := range p.RefreshesByTable() {
		db := pl.Set.ForTable(tr.Table)
		t := transform{b: db, parts: []string{}}
		for _, r := range p.Downstream {
			if r.Table == tr.Table {
				t.parts = append(t.parts, r.Partition)
			}
		}
		_, typ, err := pl.liveVersion(ctx, db.Table, db.Partition)
		for _, part := range t.parts {
			start, perr := ParsePartition(part, db.Grain)
			if err == nil && perr == nil {
				t.windows = append(t.windows, window(db.Partition, typ, start, db.Grain))
			}
		}
		if err != nil {
			t.err = err // checkOutput reports it
		} else if len(t.windows) > 0 {
			pl.checkInputs(ctx, t, p, built)
		}
		built[db.Table] = true
		out = append(out, t)
	}
	return out
}

// checkInputs checks that every relation a transform reads has rows in every partition it
// runs for (when it has the partition column) or at all (when it does not). Relations in
// built are rebuilt earlier in the same run and not checked.
func (pl Planner) checkInputs(ctx context.Context, t transform, p *Plan, built map[string]bool) {
	b, label := t.b, t.label()
	parts := t.parts
	if parts == nil {
		parts = p.Partitions
	}
	fail := func(format string, args ...any) {
		p.InputsOK = false
		p.block(label+format, args...)
	}
	rels, err := pl.Engine.Relations(ctx)
	if err != nil {
		fail("input check: %v", err)
		return
	}
	known := map[string]bool{}
	for _, r := range rels {
		known[r.Name] = true
	}
	d := pl.Engine.Dialect()
	first, last := t.windows[0], t.windows[len(t.windows)-1]
	for _, ref := range tsql.TableRefs(b.SQL) {
		if built[ref] {
			continue
		}
		if !known[ref] {
			fail("input %s does not exist in target %s", ref, pl.Target)
			continue
		}
		in := Input{Relation: ref}
		if t.parts != nil {
			in.Table = b.Table
		}
		cols, err := pl.Engine.Columns(ctx, ref)
		if err != nil {
			fail("input %s: %v", ref, err)
			continue
		}
		if slices.ContainsFunc(cols, func(c tsql.Column) bool { return c.Name == b.Partition }) {
			in.Partitioned = true
			part := d.TruncTime(d.Quote(b.Partition), b.Grain)
			q, args, err := tsql.Expand(d, "SELECT "+part+" AS p, count(*) AS n FROM "+d.QuoteRelation(ref)+
				" WHERE "+d.Quote(b.Partition)+" >= $start AND "+d.Quote(b.Partition)+" < $end GROUP BY "+part,
				tsql.Window{Type: first.Type, Start: first.Start, End: last.End}.Params())
			if err != nil {
				fail("input %s: %v", ref, err)
				continue
			}
			res, err := pl.Engine.Query(ctx, q, args...)
			if err != nil {
				fail("input %s: %v", ref, err)
				continue
			}
			have := map[string]bool{}
			for _, r := range res.Rows {
				if tsql.AsInt64(r[1]) > 0 {
					have[formatPartition(tsql.TruncGrain(tsql.AsTime(r[0]), b.Grain), b.Grain)] = true
				}
			}
			for _, part := range parts {
				if !have[part] {
					in.Missing = append(in.Missing, part)
				}
			}
			if len(in.Missing) > 0 {
				fail("input %s has no rows for %d %s of the scope: %s", ref, len(in.Missing), pluralOf("partition", len(in.Missing)), strings.Join(in.Missing, ", "))
			}
		} else {
			res, err := pl.Engine.Query(ctx, "SELECT count(*) FROM (SELECT 1 AS x FROM "+d.QuoteRelation(ref)+" LIMIT 1) AS s")
			if err != nil || tsql.AsInt64(res.Rows[0][0]) == 0 {
				in.Empty = true
				fail("input %s is empty", ref)
			}
		}
		p.Inputs = append(p.Inputs, in)
	}
}

// score gives the backfillability score 0–4, one point each for: parameterised by window,
// idempotent write, historical inputs present, no clock or current-state dependency. A point
// needs every transform the run executes (the downstream ones too): any of them failing at run
// time fails the run.
func (pl Planner) score(ctx context.Context, closure []transform, p *Plan) {
	var unparameterised, notIdempotent, unchecked, clock []string
	for _, t := range closure {
		ph := tsql.Placeholders(t.b.SQL)
		if !slices.Contains(ph, "start") || !slices.Contains(ph, "end") {
			unparameterised = append(unparameterised, t.name())
			p.warn("%sthe transform does not use both $start and $end: every partition recomputes from all inputs", t.label())
		}
		if err := pl.checkOutput(ctx, t); err != nil {
			var np notPrepared
			if errors.As(err, &np) {
				unchecked = append(unchecked, t.label()+err.Error())
			} else {
				notIdempotent = append(notIdempotent, t.label()+err.Error())
			}
			p.block("%stransform: %v", t.label(), err)
		} else {
			pl.checkColumns(ctx, t, p)
		}
		if calls := tsql.ClockCalls(t.b.SQL); len(calls) > 0 {
			clock = append(clock, t.label()+strings.Join(calls, ", "))
			p.block("%sthe transform reads the clock or current state (%s): a backfill must be a function of its window and inputs", t.label(), strings.Join(calls, ", "))
		}
	}
	missing := func(why string) { p.ScoreMissing = append(p.ScoreMissing, why) }
	if len(unparameterised) == 0 {
		p.Score++
	} else {
		missing("not parameterised by window: " + strings.Join(unparameterised, ", ") + " should filter on $start and $end, so each partition reads only its own inputs")
	}
	switch {
	case len(notIdempotent) > 0:
		missing("write is not idempotent: " + strings.Join(notIdempotent, "; "))
	case len(unchecked) > 0:
		missing("write not checked, the transform did not prepare: " + strings.Join(unchecked, "; "))
	default:
		p.Score++
	}
	if p.InputsOK {
		p.Score++
	} else {
		missing("historical inputs missing: some input has no rows for part of the scope")
	}
	if len(clock) == 0 {
		p.Score++
	} else {
		missing("reads the clock or current state (" + strings.Join(clock, "; ") + "): a rerun would not give the same rows")
	}
}

// notPrepared is checkOutput's error when the transform could not be prepared at all, so
// whether its rows can replace a partition is not known.
type notPrepared struct{ error }

func (e notPrepared) Unwrap() error { return e.error }

// checkOutput prepares a transform for its first partition and checks that its rows carry
// the partition column and the key, so each partition can be replaced as a whole.
func (pl Planner) checkOutput(ctx context.Context, t transform) error {
	b := t.b
	if t.err != nil {
		return notPrepared{t.err}
	}
	if len(t.windows) == 0 {
		return notPrepared{errors.New("no partition to prepare the transform for")}
	}
	q, args, err := tsql.Expand(pl.Engine.Dialect(), b.SQL, t.windows[0].Params())
	if err != nil {
		return notPrepared{err}
	}
	res, err := pl.Engine.Query(ctx, "SELECT * FROM ("+q+") AS q LIMIT 0", args...)
	if err != nil {
		return notPrepared{fmt.Errorf("does not prepare: %s", fault.FirstLine(err.Error()))}
	}
	for _, c := range append([]string{b.Partition}, b.Key...) {
		if !slices.Contains(res.Columns, c) {
			return fmt.Errorf("its rows have no column %s (they have %s)", c, strings.Join(res.Columns, ", "))
		}
	}
	return nil
}
