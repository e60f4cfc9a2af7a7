package rules

import (
	"context"
	"fmt"
	"strings"
	"time"

	tsql "trueup/sql"
)

// completeness: expected partitions present, at least min_rows rows each, not_null columns
// without NULLs. Counts and NULL counts come from the relation's fused aggregate scan; the
// expected partitions from a date range, the calendar between the first and last partition,
// or a reference relation or SELECT.
func (c *check) completeness(targets Targets) {
	r := c.rule
	var aggs []aggExpr
	for _, col := range r.NotNull {
		// NULLs are the rows less the values: count(col) reads only the validity mask, cheaper
		// than testing every row
		aggs = append(aggs, aggExpr{"count(" + c.d.Quote(col) + ")", "sum"})
	}
	main := c.scan(c.partitionKey(), aggs...)
	var ref *need
	if r.Reference.IsSet() {
		re, err := c.referenceEngine(targets)
		if err != nil {
			c.err = err
			return
		}
		if r.Reference.Select != "" {
			ref = c.raw(re, r.Reference.Select, refCap)
		} else {
			col := r.Reference.Partition
			if col == "" {
				col = r.Partition
			}
			ref = c.agg(re, r.Reference.Relation, []string{partitionExpr(re.Dialect(), col, r.refPartType, r.Grain)})
		}
	}
	c.judge = func(_ context.Context, j *judgeEnv) verdict {
		if ref != nil && ref.truncated {
			return verdict{err: fmt.Errorf("the reference returned more than %d partitions", refCap)}
		}
		return c.judgeCompleteness(j, main, ref)
	}
}

func (c *check) judgeCompleteness(j *judgeEnv, main, ref *need) verdict {
	r := c.rule
	var v verdict
	parts := newPartitions()
	rows := map[string]int64{}
	nulls := map[string][]int64{}
	var total int64
	for _, row := range main.rows {
		var k string
		if r.Partition != "" {
			k = parts.add(row[0])
			row = row[1:]
		}
		rows[k] = tsql.AsInt64(row[0])
		total += rows[k]
		for i := range r.NotNull {
			nulls[k] = append(nulls[k], rows[k]-tsql.AsInt64(row[1+i]))
		}
	}
	problems := map[string][]string{}
	var problemRows []Row
	note := func(part, problem string, n int64) {
		if _, seen := problems[part]; !seen {
			v.failing = append(v.failing, part)
		}
		problems[part] = append(problems[part], problem)
		problemRows = append(problemRows, Row{{Name: "partition", Value: part}, {Name: "rows", Value: n}, {Name: "problem", Value: problem}})
	}

	expected, err := c.expected(j.now, parts, ref)
	if err != nil {
		return verdict{err: err}
	}
	var missing, unplaced, short int64
	nullIn := make([]int64, len(r.NotNull)) // rows NULL in each not_null column, over all partitions
	for _, k := range expected.sorted() {
		if rows[k] == 0 {
			missing++
			parts.add(expected.vals[k])
		}
	}
	for _, k := range parts.sorted() {
		_, want := expected.vals[k]
		n := rows[k]
		noPartition := r.Partition != "" && parts.vals[k] == nil
		switch {
		case noPartition:
			// a row without a partition belongs to no day: every one is a violation
			note(k, fmt.Sprintf("%s with a NULL %s", plural(n, "row", "rows"), r.Partition), n)
			v.violations += n
			unplaced += n
		case want && n == 0:
			note(k, "missing", 0)
		case r.MinRows > 0 && n < r.MinRows && r.Partition != "":
			note(k, fmt.Sprintf("%s, fewer than min_rows %d", plural(n, "row", "rows"), r.MinRows), n)
			v.violations++
			short++
		}
		for i, col := range r.NotNull {
			if noPartition && col == r.Partition {
				continue // counted above
			}
			if i < len(nulls[k]) && nulls[k][i] > 0 {
				note(k, fmt.Sprintf("%s NULL in %s", plural(nulls[k][i], "row", "rows"), col), n)
				v.violations += nulls[k][i]
				nullIn[i] += nulls[k][i]
			}
		}
	}
	v.violations += missing
	if r.Partition == "" {
		// a whole-table rule has no partitions to name: its one group has the key ""
		v.failing = nil
		if r.MinRows > 0 && total < r.MinRows {
			problemRows = append(problemRows, Row{{Name: "rows", Value: total}, {Name: "problem", Value: fmt.Sprintf("fewer than min_rows %d", r.MinRows)}})
			v.violations++
			short++
		}
		for i, col := range r.NotNull {
			if i < len(nulls[""]) && nulls[""][i] > 0 {
				n := nulls[""][i]
				problemRows = append(problemRows, Row{{Name: "rows", Value: total}, {Name: "problem", Value: fmt.Sprintf("%s NULL in %s", plural(n, "row", "rows"), col)}})
				v.violations += n
				nullIn[i] += n
			}
		}
	}
	v.failed = v.violations > 0
	v.sample = limitSample(problemRows, j.sample)
	if v.failed {
		var parts []string
		if missing > 0 {
			parts = append(parts, plural(missing, "expected partition missing", "expected partitions missing"))
		}
		if unplaced > 0 {
			parts = append(parts, fmt.Sprintf("%s with a NULL %s", plural(unplaced, "row", "rows"), r.Partition))
		}
		rest := v.violations - missing - unplaced - short
		for i, col := range r.NotNull {
			if nullIn[i] > 0 {
				parts = append(parts, fmt.Sprintf("%s NULL in %s", plural(nullIn[i], "row", "rows"), col))
				rest -= nullIn[i]
			}
		}
		if short > 0 {
			what := plural(short, "partition", "partitions")
			if r.Partition == "" {
				what = "the table"
			}
			parts = append(parts, fmt.Sprintf("%s with fewer than min_rows %d", what, r.MinRows))
		}
		if rest > 0 {
			parts = append(parts, plural(rest, "other violation", "other violations"))
		}
		v.message = strings.Join(parts, ", ")
	}
	if len(r.NotNull) > 0 && len(v.sample) < j.sample && v.violations > missing {
		var conds []string
		for _, col := range r.NotNull {
			conds = append(conds, c.d.Quote(col)+" IS NULL")
		}
		nullRows := c.follow("SELECT * FROM "+c.filtered(strings.Join(conds, " OR ")), j.sample-len(v.sample))
		c.finish = func(v *verdict) {
			for _, row := range nullRows.rows {
				v.sample = append(v.sample, rowOf(nullRows.cols, row))
			}
		}
	}
	return v
}

// expected returns the partitions the rule expects, keyed by their text.
func (c *check) expected(now time.Time, present *partitions, ref *need) (*partitions, error) {
	r := c.rule
	out := newPartitions()
	if ref != nil {
		for _, row := range ref.rows {
			if len(row) > 0 && row[0] != nil {
				out.add(truncValue(row[0], r.Grain))
			}
		}
	}
	e := r.Expect
	if e == nil {
		return out, nil
	}
	from, to := e.From, e.To
	if e.Continuous {
		// a NULL partition (sorted first) is no day of the calendar
		var keys []string
		for _, k := range present.sorted() {
			if present.vals[k] != nil {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			return out, nil
		}
		from, to = tsql.AsTime(present.vals[keys[0]]), tsql.AsTime(present.vals[keys[len(keys)-1]])
	}
	switch e.ToRelative {
	case "today":
		to = now.UTC().Truncate(24 * time.Hour)
	case "yesterday":
		to = now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	}
	t := tsql.TruncGrain(from, r.Grain)
	for n := 0; !t.After(to); n++ {
		if n > refCap {
			return nil, fmt.Errorf("expect spans more than %d partitions", refCap)
		}
		out.add(t)
		t = tsql.NextGrain(t, r.Grain)
	}
	return out, nil
}

// truncValue brings a reference partition value to the rule's grain when both are times.
func truncValue(v any, grain string) any {
	if t, ok := v.(time.Time); ok {
		return tsql.TruncGrain(t, grain)
	}
	return v
}
