package rules

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	tsql "trueup/sql"
)

// The row kinds — accepted_values, accepted_range, expression, pattern — each say which rows
// violate them as one SQL condition, counted per partition by the relation's fused aggregate
// scan (count_if); a failing rule then reads a sample of its rows. A row whose value (or whose
// expression) is NULL passes, as in dbt's accepted_values, accepted_range and
// expression_is_true. A NaN is a value, outside every range and other than every number, on
// both engines alike. not_constant and row_count ride on the same scan as min and max, and as
// the row count every scan carries.

// violation is the SQL condition that holds on the rows breaking a row kind's rule.
func violation(d tsql.Dialect, r *Rule) string {
	col := d.Quote(r.Column)
	switch r.Kind {
	case AcceptedValues:
		return col + " IS NOT NULL AND " + col + " NOT IN (" + strings.Join(r.Values, ", ") + ")"
	case AcceptedRange:
		lo, hi := " < ", " > "
		if r.Exclusive {
			lo, hi = " <= ", " >= "
		}
		var out []string
		if r.columnType == tsql.TypeFloat {
			// NaN lies in no range: without this DuckDB, which orders it above every number,
			// would fail it against a max only, and ClickHouse, comparing it false, never
			out = append(out, d.IsNaN(col))
		}
		if r.Min != "" {
			out = append(out, col+lo+"("+r.Min+")")
		}
		if r.Max != "" {
			out = append(out, col+hi+"("+r.Max+")")
		}
		return col + " IS NOT NULL AND (" + strings.Join(out, " OR ") + ")"
	case Expression:
		// NOT NULL is NULL, which count_if does not count: a row where it is NULL passes
		return "NOT (" + r.Expr + ")"
	case Pattern:
		re, _ := d.Literal(tsql.String(r.Regex))
		m := d.Matches(col, re)
		if r.Negate {
			return col + " IS NOT NULL AND " + m
		}
		return col + " IS NOT NULL AND NOT " + m
	}
	return ""
}

// rowKind compiles accepted_values, accepted_range, expression and pattern.
func (c *check) rowKind() {
	r := c.rule
	cond := violation(c.d, r)
	main := c.scan(c.partitionKey(), aggExpr{c.d.CountIf("(" + cond + ")"), "sum"})
	c.judge = func(_ context.Context, j *judgeEnv) verdict {
		var v verdict
		p := newPartitions()
		for _, row := range main.rows {
			n := tsql.AsInt64(row[len(row)-1])
			v.violations += n
			if n > 0 && r.Partition != "" {
				p.add(row[0])
			}
		}
		v.failing = p.sorted()
		v.failed = v.violations > 0
		if !v.failed {
			return v
		}
		// the rows without a partition are named: no partition says where they are
		nulls := nullPartitionCount(r, main.rows)
		v.message = c.rowMessage(v.violations)
		if nulls > 0 {
			v.message += fmt.Sprintf(" (%s with a NULL %s)", plural(nulls, "row", "rows"), r.Partition)
		}
		if r.Kind == AcceptedValues || r.Kind == Pattern {
			// the offending values with their row counts say more than rows do
			col := c.d.Quote(r.Column)
			limit := j.sample
			if r.Kind == AcceptedValues {
				limit = dupCap // their number is the violations, as dbt counts them
			}
			rows := v.violations
			values := c.follow("SELECT "+col+", count(*) AS "+countAlias+" FROM "+c.filtered(cond)+
				" GROUP BY "+col+" ORDER BY "+countAlias+" DESC, "+col, limit)
			c.finish = func(v *verdict) {
				for _, row := range limitRows(values.rows, j.sample) {
					v.sample = append(v.sample, Row{{Name: r.Column, Value: sampleValue(row[0])}, {Name: "rows", Value: tsql.AsInt64(row[1])}})
				}
				if r.Kind != AcceptedValues {
					return
				}
				v.violations = int64(len(values.rows))
				v.message = c.valuesMessage(v.violations, rows, nulls)
				if values.truncated {
					distinct := c.follow("SELECT "+c.d.DistinctCount(col)+" FROM "+c.filtered(cond), 1)
					c.finish = func(v *verdict) {
						if len(distinct.rows) > 0 {
							v.violations = tsql.AsInt64(distinct.rows[0][0])
							v.message = c.valuesMessage(v.violations, rows, nulls)
						}
					}
				}
			}
			return v
		}
		sample := c.follow("SELECT * FROM "+c.filtered(cond), j.sample)
		c.finish = func(v *verdict) {
			for _, row := range sample.rows {
				v.sample = append(v.sample, rowOf(sample.cols, row))
			}
		}
		return v
	}
}

// valuesMessage says how many values of an accepted_values column are not accepted, in how
// many rows (and how many of those have no partition).
func (c *check) valuesMessage(values, rows, nulls int64) string {
	r := c.rule
	verb := "is"
	if values != 1 {
		verb = "are"
	}
	where := plural(rows, "row", "rows")
	if nulls > 0 {
		where += fmt.Sprintf(", %d with a NULL %s", nulls, r.Partition)
	}
	return fmt.Sprintf("%s of %s %s not one of %s (%s)", plural(values, "value", "values"), r.Column, verb, strings.Join(r.Values, ", "), where)
}

func limitRows(rows [][]any, n int) [][]any {
	if len(rows) > n {
		return rows[:n]
	}
	return rows
}

// nullPartitionCount is the violations in the group of rows whose partition is NULL.
func nullPartitionCount(r *Rule, rows [][]any) int64 {
	if r.Partition == "" {
		return 0
	}
	for _, row := range rows {
		if row[0] == nil {
			return tsql.AsInt64(row[2])
		}
	}
	return 0
}

func (c *check) rowMessage(n int64) string {
	r := c.rule
	rows := plural(n, "row", "rows")
	switch r.Kind {
	case AcceptedValues:
		return fmt.Sprintf("%s whose %s is not one of %s", rows, r.Column, strings.Join(r.Values, ", "))
	case AcceptedRange:
		return fmt.Sprintf("%s whose %s is outside %s", rows, r.Column, r.rangeText())
	case Expression:
		return fmt.Sprintf("%s where %s is false", rows, r.Expr)
	case Pattern:
		if r.Negate {
			return fmt.Sprintf("%s whose %s matches %s", rows, r.Column, r.Regex)
		}
		return fmt.Sprintf("%s whose %s does not match %s", rows, r.Column, r.Regex)
	}
	return rows
}

func (r *Rule) rangeText() string {
	lo, hi := "[", "]"
	if r.Exclusive {
		lo, hi = "(", ")"
	}
	min, max := r.Min, r.Max
	if min == "" {
		min, lo = "-∞", "("
	}
	if max == "" {
		max, hi = "∞", ")"
	}
	return lo + min + ", " + max + hi
}

// notConstant: a column holds more than one distinct value (per partition). As in dbt-utils'
// not_constant, NULLs are no value: a column of one value and NULLs fails, an all-NULL or
// empty one passes. The scan carries the column's min and max, which differ exactly when
// there are two values, and which add up over a wider grouping where count(DISTINCT) would not.
// NaN is one value (as DuckDB's DISTINCT has it): a float column's min and max are of its
// numbers and its NaNs are counted beside them, as ClickHouse's min and max of a column holding
// NaN depend on the order it reads the rows in, and no comparison of NaN says equal on both.
func (c *check) notConstant() {
	r := c.rule
	col := c.d.Quote(r.Column)
	num := col
	float := r.columnType == tsql.TypeFloat
	if float {
		num = "CASE WHEN " + c.d.IsNaN(col) + " THEN NULL ELSE " + col + " END"
	}
	aggs := []aggExpr{{"min(" + num + ")", "min"}, {"max(" + num + ")", "max"}}
	if float {
		aggs = append(aggs, aggExpr{c.d.CountIf(c.d.IsNaN(col)), "sum"})
	}
	main := c.scan(c.partitionKey(), aggs...)
	c.judge = func(_ context.Context, j *judgeEnv) verdict {
		var v verdict
		p := newPartitions()
		var rows []Row
		for _, row := range main.rows {
			var part any
			if r.Partition != "" {
				part, row = row[0], row[1:]
			}
			lo, hi := row[1], row[2]
			var nans int64
			if float {
				nans = tsql.AsInt64(row[3])
			}
			value := lo
			switch {
			case lo == nil && nans == 0: // no value
				continue
			case lo == nil:
				value = math.NaN()
			case nans > 0 || compareValues(lo, hi) != 0: // two values or more
				continue
			}
			v.violations++
			sample := Row{{Name: r.Column, Value: sampleValue(value)}, {Name: "rows", Value: tsql.AsInt64(row[0])}}
			if r.Partition != "" {
				p.add(part)
				sample = append(Row{{Name: "partition", Value: partitionText(part)}}, sample...)
			}
			rows = append(rows, sample)
		}
		v.failing = p.sorted()
		v.failed = v.violations > 0
		v.sample = limitSample(byPartition(rows), j.sample)
		if v.failed {
			if r.Partition == "" {
				v.message = fmt.Sprintf("%s holds one value only, %v", r.Column, tsql.AsText(rows[0].Get(r.Column)))
			} else {
				v.message = fmt.Sprintf("%s of %d where %s holds one value only", plural(v.violations, "partition", "partitions"), len(main.rows), r.Column)
			}
		}
		return v
	}
}

// rowCount: the rows of the table (per partition) are within min and max, or compared with
// another relation's (compare_to, counted by its own scan, which its other rules share). A
// partition that has no rows on either side is not seen, so min: applies to the partitions
// present; compared, a partition on one side only counts 0 on the other.
func (c *check) rowCount(targets Targets) {
	r := c.rule
	main := c.scan(c.partitionKey())
	var other *need
	if r.Reference.Relation != "" {
		re, err := c.referenceEngine(targets)
		if err != nil {
			c.err = err
			return
		}
		var keys []string
		if r.Partition != "" {
			keys = []string{partitionExpr(re.Dialect(), r.Partition, r.refPartType, r.Grain)}
		}
		other = c.agg(re, r.Reference.Relation, keys)
	}
	c.judge = func(_ context.Context, j *judgeEnv) verdict {
		parts := newPartitions()
		ours, theirs := map[string]int64{}, map[string]int64{}
		read := func(n *need, into map[string]int64) {
			for _, row := range n.rows {
				var k string
				if r.Partition != "" {
					k, row = parts.add(truncValue(row[0], r.Grain)), row[1:]
				}
				into[k] += tsql.AsInt64(row[0])
			}
		}
		read(main, ours)
		if other != nil {
			read(other, theirs)
		}
		keys := parts.sorted()
		if r.Partition == "" {
			keys = []string{""}
		}
		var v verdict
		var failing []string
		var rows []Row
		for _, k := range keys {
			n, m := ours[k], theirs[k]
			if r.rowsWithin(n, m) {
				continue
			}
			v.violations++
			sample := Row{{Name: "rows", Value: n}}
			if other != nil {
				sample = append(sample, Field{Name: r.Reference.Relation, Value: m})
			} else {
				sample = append(sample, Field{Name: "min", Value: countBound(r.MinCount)}, Field{Name: "max", Value: countBound(r.MaxCount)})
			}
			if r.Partition != "" {
				failing = append(failing, k)
				sample = append(Row{{Name: "partition", Value: k}}, sample...)
			}
			rows = append(rows, sample)
		}
		v.failing = failing
		v.failed = v.violations > 0
		v.sample = limitSample(rows, j.sample)
		if v.failed {
			if r.Partition == "" {
				v.message = fmt.Sprintf("%s has %s, outside %s", r.Table, plural(ours[""], "row", "rows"), r.countText(theirs[""]))
			} else {
				v.message = fmt.Sprintf("%s of %d with a row count outside %s", plural(v.violations, "partition", "partitions"), len(keys), r.countText(-1))
			}
		}
		return v
	}
}

// rowsWithin reports whether n rows are within the rule's bounds, m being compare_to's count.
// With inclusive: false a count equal to a bound is outside it (dbt-utils' fewer_rows_than).
func (r *Rule) rowsWithin(n, m int64) bool {
	below := func(a, b float64) bool { return a < b || r.Exclusive && a == b } // a is outside a lower bound b
	if (r.MinCount != nil && below(float64(n), float64(*r.MinCount))) || (r.MaxCount != nil && below(float64(*r.MaxCount), float64(n))) {
		return false
	}
	if r.Reference.Relation == "" {
		return true
	}
	a, b := float64(n), float64(m)
	switch {
	case r.MinCompare || r.MaxCompare:
		slack := r.Tolerance.Value
		if r.Tolerance.Relative {
			slack *= b
		}
		return !(r.MinCompare && below(a, b-slack)) && !(r.MaxCompare && below(b+slack, a))
	}
	return r.Tolerance.Allows(a, b)
}

// countText says the bounds; m is compare_to's count (-1 when it differs by partition).
func (r *Rule) countText(m int64) string {
	other := r.Reference.Relation
	if m >= 0 && other != "" {
		other = fmt.Sprintf("%s's %d", other, m)
	}
	min, max := "", ""
	switch {
	case r.MinCompare:
		min = other
	case r.MinCount != nil:
		min = strconv.FormatInt(*r.MinCount, 10)
	}
	switch {
	case r.MaxCompare:
		max = other
	case r.MaxCount != nil:
		max = strconv.FormatInt(*r.MaxCount, 10)
	}
	switch {
	case min != "" && max != "" && r.Exclusive:
		return "strictly between " + min + " and " + max
	case min != "" && max != "":
		return min + ".." + max
	case min != "" && r.Exclusive:
		return "more than " + min
	case min != "":
		return "at least " + min
	case max != "" && r.Exclusive:
		return "fewer than " + max
	case max != "":
		return "at most " + max
	case r.Tolerance.Value > 0:
		return "equal to " + other + " within " + r.Tolerance.String()
	}
	return "equal to " + other
}

// byPartition orders sample rows by their partition, which engines return in any order.
func byPartition(rows []Row) []Row {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i].Get("partition"), rows[j].Get("partition")
		if a == "NULL" || b == "NULL" {
			return a == "NULL" && b != "NULL"
		}
		return compareValues(a, b) < 0
	})
	return rows
}

func countBound(n *int64) any {
	if n == nil {
		return nil
	}
	return *n
}
