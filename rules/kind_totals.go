package rules

import (
	"context"
	"fmt"
	"math"

	tsql "trueup/sql"
)

// totals: an aggregate per partition equals a reference aggregate within a tolerance. The
// measure rides on the relation's fused aggregate scan; a reference relation gets its own
// (fusable) aggregate, a reference SELECT runs as written.
func (c *check) totals(targets Targets) {
	r := c.rule
	main := c.scan(c.partitionKey(), aggExpr{r.Measure, rollupOf(r.Measure)})
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
		ref = c.agg(re, r.Reference.Relation, []string{partitionExpr(re.Dialect(), col, r.refPartType, r.Grain)}, aggExpr{m, rollupOf(m)})
	}
	c.judge = func(_ context.Context, j *judgeEnv) verdict {
		return c.judgeTotals(j, main, ref)
	}
}

func (c *check) judgeTotals(j *judgeEnv, main, ref *need) verdict {
	r := c.rule
	if ref.truncated {
		return verdict{err: fmt.Errorf("the reference returned more than %d rows", refCap)}
	}
	parts := newPartitions()
	got := map[string]any{}
	for _, row := range main.rows {
		got[parts.add(row[0])] = row[2]
	}
	want := map[string]any{}
	valueCol := 2 // partition, count, measure
	if ref.mode == rawNeed {
		if len(ref.cols) < 2 {
			return verdict{err: fmt.Errorf("the reference SELECT returns %d columns; want partition and value", len(ref.cols))}
		}
		valueCol = 1
	}
	for _, row := range ref.rows {
		k := parts.add(truncValue(row[0], r.Grain))
		if prev, dup := want[k]; dup && ref.mode == rawNeed {
			return verdict{err: fmt.Errorf("the reference SELECT returns partition %s twice (values %v and %v): group it by partition", k, sampleValue(prev), sampleValue(row[valueCol]))}
		}
		want[k] = row[valueCol]
	}
	var v verdict
	var rows []Row
	for _, k := range parts.sorted() {
		a, b := tsql.AsFloat(got[k]), tsql.AsFloat(want[k])
		if r.Tolerance.Allows(a, b) {
			continue
		}
		v.failing = append(v.failing, k)
		row := Row{{"partition", k}, {"value", sampleValue(got[k])}, {"reference", sampleValue(want[k])}, {"difference", round6(a - b)}}
		if b != 0 {
			row = append(row, Field{"difference_pct", math.Round((a-b)/math.Abs(b)*1e4) / 1e2})
		}
		rows = append(rows, row)
	}
	v.violations = int64(len(v.failing))
	v.failed = v.violations > 0
	v.sample = limitSample(rows, j.sample)
	if v.failed {
		verb := "differs"
		if v.violations > 1 {
			verb = "differ"
		}
		v.message = fmt.Sprintf("%s of %d %s from the reference by more than %s",
			plural(v.violations, "partition", "partitions"), len(parts.vals), verb, r.Tolerance)
	}
	return v
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
