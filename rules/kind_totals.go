package rules

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	tsql "trueup/sql"
)

// totals: an aggregate per partition (and group_by columns, or of the whole table) equals a
// reference aggregate within a tolerance. The measure rides on the relation's fused aggregate
// scan; a reference relation gets its own (fusable) aggregate, a reference SELECT runs as written.
func (c *check) totals(targets Targets) {
	r := c.rule
	main := c.scan(r.groupKeys(c.d, r.Partition, r.partitionType), aggExpr{r.Measure, rollupOf(r.Measure)})
	re, err := c.referenceEngine(targets)
	if err != nil {
		c.err = err
		return
	}
	var ref *need
	if r.Reference.Select != "" {
		ref = c.raw(re, r.Reference.Select, refCap)
	} else {
		col, m := r.Reference.Partition, r.Reference.Measure
		if col == "" {
			col = r.Partition
		}
		if m == "" {
			m = r.Measure
		}
		ref = c.agg(re, r.Reference.Relation, r.groupKeys(re.Dialect(), col, r.refPartType), aggExpr{m, rollupOf(m)})
	}
	c.judge = func(_ context.Context, j *judgeEnv) verdict {
		return c.judgeTotals(j, main, ref)
	}
}

// totalGroup is one group a totals rule compares: its key values, the value and the reference.
type totalGroup struct {
	keys      []any
	got, want any
}

func (c *check) judgeTotals(j *judgeEnv, main, ref *need) verdict {
	r := c.rule
	if ref.truncated {
		return verdict{err: fmt.Errorf("the reference returned more than %d rows", refCap)}
	}
	nk := len(r.GroupBy)
	if r.Partition != "" {
		nk++
	}
	groups := map[string]*totalGroup{}
	group := func(keys []any) *totalGroup {
		keys = append([]any{}, keys...)
		if r.Partition != "" {
			keys[0] = truncValue(keys[0], r.Grain)
		}
		k := groupKey(keys)
		if g, ok := groups[k]; ok {
			return g
		}
		g := &totalGroup{keys: keys}
		groups[k] = g
		return g
	}
	for _, row := range main.rows {
		group(row[:nk]).got = row[nk+1] // keys, count, measure
	}
	valueCol := nk + 1
	if ref.mode == rawNeed {
		if len(ref.cols) < nk+1 {
			return verdict{err: fmt.Errorf("the reference SELECT returns %d columns; want %s", len(ref.cols), r.totalsColumns())}
		}
		valueCol = nk
	}
	seen := map[*totalGroup]bool{}
	for _, row := range ref.rows {
		g := group(row[:nk])
		if seen[g] && ref.mode == rawNeed {
			return verdict{err: fmt.Errorf("the reference SELECT returns %s twice (values %v and %v): group it by %s", groupText(g.keys), sampleValue(g.want), sampleValue(row[valueCol]), r.totalsColumns())}
		}
		seen[g] = true
		g.want = row[valueCol]
	}
	if nk == 0 && len(groups) == 0 {
		group(nil)
	}
	sorted := make([]*totalGroup, 0, len(groups))
	for _, g := range groups {
		sorted = append(sorted, g)
	}
	sort.Slice(sorted, func(a, b int) bool { return compareRows(sorted[a].keys, sorted[b].keys) < 0 })
	var v verdict
	var rows []Row
	failing := newPartitions()
	for _, g := range sorted {
		a, b := tsql.AsFloat(g.got), tsql.AsFloat(g.want)
		if r.Tolerance.Allows(a, b) {
			continue
		}
		v.violations++
		var row Row
		if r.Partition != "" {
			failing.add(g.keys[0])
			row = append(row, Field{Name: "partition", Value: partitionText(g.keys[0])})
		}
		for i, col := range r.GroupBy {
			row = append(row, Field{Name: col, Value: sampleValue(g.keys[nk-len(r.GroupBy)+i])})
		}
		row = append(row, Field{Name: "value", Value: sampleValue(g.got)}, Field{Name: "reference", Value: sampleValue(g.want)}, Field{Name: "difference", Value: round6(a - b)})
		if b != 0 {
			row = append(row, Field{Name: "difference_pct", Value: math.Round((a-b)/math.Abs(b)*1e4) / 1e2})
		}
		rows = append(rows, row)
	}
	v.failing = failing.sorted()
	v.failed = v.violations > 0
	v.sample = limitSample(rows, j.sample)
	if v.failed {
		what := "partition"
		if len(r.GroupBy) > 0 {
			what = "group"
		}
		verb := "differs"
		if v.violations > 1 {
			verb = "differ"
		}
		v.message = fmt.Sprintf("%s of %d %s from the reference by more than %s",
			plural(v.violations, what, what+"s"), len(sorted), verb, r.Tolerance)
		if nk == 0 {
			v.message = fmt.Sprintf("%s is %v, the reference %v: more than %s apart", r.Measure, sampleValue(sorted[0].got), sampleValue(sorted[0].want), r.Tolerance)
		}
	}
	return v
}

// groupText names a group by its key values.
func groupText(keys []any) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = partitionText(k)
	}
	return strings.Join(parts, ", ")
}

func (t Tolerance) String() string {
	if t.Relative {
		return fmt.Sprintf("%g%%", t.Value*100)
	}
	if t.Value == 0 {
		return "0 (exact)"
	}
	return fmt.Sprintf("%g", t.Value)
}
