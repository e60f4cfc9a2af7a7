package rules

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strings"
	"time"

	tsql "trueup/sql"
)

// uniqueness: key columns unique over the table, or within each partition. Rows with a NULL
// key are ignored, as in ANSI UNIQUE and dbt's unique test. The duplicate groups come from a
// GROUP BY … HAVING count(*) > 1, or from an aggregate query grouped by the same keys; a key of
// one column over the whole table is first counted against its distinct values, and grouped
// only when they differ.
func (c *check) uniqueness() {
	r := c.rule
	keys := c.partitionKey()
	names := []string{}
	notNull := []string{}
	if r.Partition != "" {
		names = append(names, r.Partition)
		notNull = append(notNull, c.d.Quote(r.Partition))
	}
	for _, col := range r.Columns {
		keys = append(keys, c.d.Quote(col))
		notNull = append(notNull, c.d.Quote(col))
		names = append(names, col)
	}
	if r.NullsEqual {
		notNull = nil // NULLs group together, as dbt-utils' unique_combination_of_columns
	}
	sampleCols := append(names, "rows")
	dup := c.add(&need{mode: dupNeed, relation: r.Table, where: r.Where, keys: keys, notNull: notNull, limit: dupCap})
	var counts *need
	if r.Partition == "" && len(r.Columns) == 1 && !r.NullsEqual {
		// A key of one column over the whole table that no aggregate scan groups by is first
		// counted, as one would by hand: its non-NULL values against its distinct values. Equal,
		// the key is unique and no 20M groups were kept and sorted; else the duplicate groups
		// are read after all.
		col := keys[0]
		aggs := []aggExpr{{"count(" + col + ")", "sum"}, {c.d.DistinctCount(col), ""}}
		if r.keyType == tsql.TypeFloat {
			// NaN is one key, as GROUP BY has it on both engines, but ClickHouse's uniqExact
			// counts each NaN apart: the numbers are counted, and the NaNs beside them
			num := "CASE WHEN " + c.d.IsNaN(col) + " THEN NULL ELSE " + col + " END"
			aggs = []aggExpr{{"count(" + num + ")", "sum"}, {c.d.DistinctCount(num), ""}, {c.d.CountIf(c.d.IsNaN(col)), "sum"}}
		}
		counts = c.add(&need{mode: aggNeed, relation: r.Table, where: r.Where, conditional: true, aggs: aggs})
		dup.alt = []*need{counts}
	}
	c.judge = func(_ context.Context, j *judgeEnv) verdict {
		if counts == nil || counts.served == nil {
			return c.judgeDuplicates(j, dup, keys, notNull, sampleCols)
		}
		if n := counts.rows; len(n) == 1 && tsql.AsInt64(n[0][1]) == tsql.AsInt64(n[0][2]) && (len(n[0]) < 4 || tsql.AsInt64(n[0][3]) <= 1) {
			return verdict{}
		}
		inner := dupSQL(c.d, r.Table, r.Where, keys, notNull)
		later := c.follow(inner+" ORDER BY "+countAlias+" DESC, "+keyAlias(0), dupCap)
		c.finish = func(v *verdict) { *v = c.judgeDuplicates(j, later, keys, notNull, sampleCols) }
		return verdict{}
	}
}

// judgeDuplicates judges the duplicate groups (keys…, count) of a uniqueness rule; when they
// came back truncated, it asks for their count (and partitions) in the next round.
func (c *check) judgeDuplicates(j *judgeEnv, dup *need, keys, notNull, sampleCols []string) verdict {
	r := c.rule
	var v verdict
	parts := newPartitions()
	for _, row := range dup.rows {
		if r.Partition != "" {
			parts.add(row[0])
		}
		if len(v.sample) < j.sample {
			v.sample = append(v.sample, rowOf(sampleCols, row))
		}
	}
	v.failing = parts.sorted()
	v.violations = int64(len(dup.rows))
	if dup.truncated {
		inner := dupSQL(c.d, r.Table, r.Where, keys, notNull)
		count := c.follow("SELECT count(*) AS "+countAlias+" FROM ("+inner+") AS _tu_d", 1)
		var distinct *need
		if r.Partition != "" {
			distinct = c.follow("SELECT DISTINCT "+keyAlias(0)+" FROM ("+inner+") AS _tu_d", refCap)
		}
		c.finish = func(v *verdict) {
			if len(count.rows) > 0 {
				v.violations = tsql.AsInt64(count.rows[0][0])
			}
			if distinct != nil {
				p := newPartitions()
				for _, row := range distinct.rows {
					p.add(row[0])
				}
				v.failing = p.sorted()
			}
			v.message = plural(v.violations, "key occurs", "keys occur") + " more than once"
		}
	}
	v.failed = v.violations > 0
	if v.failed {
		v.message = plural(v.violations, "key occurs", "keys occur") + " more than once"
	}
	return v
}

// dupSQL groups a relation by keys and keeps the groups of more than one row.
func dupSQL(d tsql.Dialect, relation, where string, keys, notNull []string) string {
	var sel, group, conds []string
	for i, k := range keys {
		sel = append(sel, k+" AS "+keyAlias(i))
		group = append(group, keyAlias(i))
	}
	for _, c := range notNull {
		conds = append(conds, c+" IS NOT NULL")
	}
	from := d.QuoteRelation(relation)
	if w := andWhere(where, strings.Join(conds, " AND ")); w != "" {
		from += " WHERE " + w
	}
	return "SELECT " + strings.Join(sel, ", ") + ", count(*) AS " + countAlias + " FROM " + from + " GROUP BY " + strings.Join(group, ", ") + " HAVING count(*) > 1"
}

// relationships: every non-NULL value of column exists in the parent's column. When the
// relation's aggregate scan already groups by the column (a distribution by it), the orphans
// are the groups whose value is not among the parent's values, which a small query reads.
// When the keys are integers and the relation has an aggregate scan anyway, that scan carries
// the column's min and max per partition and a small query reads the parent's min, max and
// distinct count: parent keys that fill their range without a gap, with every child value
// inside it, prove there is no orphan without a join (surrogate keys often are such a range);
// otherwise the anti-join runs after all. Keys that are not both integers, of a parent of at
// most smallParent rows (counted when the rules load), on an engine where a join fused into a
// scan pays, are instead LEFT JOINed by their distinct values into the aggregate scan, which
// counts the rows without a match; only when there are some does the anti-join read them. (On
// DuckDB, 2M rows, 100k integer keys: the join doubled the 20 rules' CPU time, the range proof
// costs nearly nothing, so integers keep the proof.) Without any, the orphans come from their own
// anti-join, grouped by partition and value: a NOT IN filter lets the engine drop matching
// rows early, where folding it into the aggregate scan would mark every row (four times
// slower on DuckDB). One query gives the count, the failing partitions and the sample unless
// there are more than dupCap orphan groups.
func (c *check) relationships() {
	r := c.rule
	col := c.d.Quote(r.Column)
	pc := c.d.Quote(r.ParentCol)
	cond := col + " IS NOT NULL AND " + col + " NOT IN (SELECT " + pc + " FROM " + c.d.QuoteRelation(r.Parent) + " WHERE " + pc + " IS NOT NULL)"
	keys := append(c.partitionKey(), col)
	grouped := func(keys []string) string {
		var sel, group []string
		for i, k := range keys {
			sel = append(sel, k+" AS "+keyAlias(i))
			group = append(group, keyAlias(i))
		}
		q := "SELECT " + strings.Join(append(sel, "count(*) AS "+countAlias), ", ") + " FROM " + c.filtered(cond)
		if len(group) > 0 {
			q += " GROUP BY " + strings.Join(group, ", ")
		}
		return q
	}
	antiJoin := grouped(keys) + " ORDER BY " + countAlias + " DESC, " + strings.Join(aliases(len(keys)), ", ")
	orphans := &need{engine: c.engine, mode: rawNeed, sql: antiJoin, limit: dupCap, conditional: true}
	parent := &need{engine: c.engine, mode: rawNeed, limit: refCap, conditional: true,
		sql: "SELECT DISTINCT " + pc + " FROM " + c.d.QuoteRelation(r.Parent) + " WHERE " + pc + " IS NOT NULL"}
	ride := c.add(&need{mode: aggNeed, relation: r.Table, where: r.Where, keys: keys, rideOnly: true, with: []*need{parent}, alt: []*need{orphans}})
	c.add(parent)
	c.add(orphans)
	var span, parentSpan *need
	if r.columnType == tsql.TypeInt && r.parentType == tsql.TypeInt {
		parentSpan = c.add(&need{mode: rawNeed, limit: 1, conditional: true,
			sql: "SELECT min(" + pc + "), max(" + pc + "), " + c.d.DistinctCount(pc) + " FROM " + c.d.QuoteRelation(r.Parent) + " WHERE " + pc + " IS NOT NULL"})
		span = c.add(&need{mode: aggNeed, relation: r.Table, where: r.Where, keys: c.partitionKey(), rideOnly: true, conditional: true,
			aggs: []aggExpr{{"min(" + col + ")", "min"}, {"max(" + col + ")", "max"}},
			with: []*need{parentSpan}, alt: []*need{orphans}})
		ride.alt = []*need{span}
	}
	var join *need
	if span == nil && r.lookupJoin(c.d) {
		// a small parent's keys, which no range can prove (text, or not both integers), join
		// the relation's aggregate scan, which counts the misses
		alias := lookupAlias(r.Parent, r.ParentCol, r.Column)
		lk := &lookup{alias: alias, sql: "LEFT JOIN (SELECT DISTINCT " + pc + " AS _tu_p, 1 AS _tu_m FROM " + c.d.QuoteRelation(r.Parent) +
			" WHERE " + pc + " IS NOT NULL) AS " + alias + " ON " + col + " = " + alias + "._tu_p"}
		join = c.add(&need{mode: aggNeed, relation: r.Table, where: r.Where, keys: c.partitionKey(), rideOnly: true, conditional: true, join: lk,
			aggs: []aggExpr{{c.d.CountIf(col + " IS NOT NULL AND " + alias + "._tu_m IS NULL"), "sum"}}, alt: ride.alt})
		ride.alt = []*need{join}
	}
	// fallback runs the anti-join after the first judgement; when it comes back truncated,
	// judgeOrphans asks for the orphans' count per partition in the next round.
	fallback := func(j *judgeEnv) verdict {
		later := c.follow(antiJoin, dupCap)
		c.finish = func(v *verdict) { *v = c.judgeOrphans(j, later.rows, later.truncated, grouped) }
		return verdict{}
	}
	c.judge = func(_ context.Context, j *judgeEnv) verdict {
		rows, truncated := orphans.rows, orphans.truncated
		if join != nil && join.served != nil {
			var misses int64
			for _, row := range join.rows {
				misses += tsql.AsInt64(row[len(row)-1])
			}
			if misses == 0 {
				return verdict{}
			}
			return fallback(j) // the orphans' values and partitions, for the sample
		}
		if span != nil && span.served != nil {
			if insideGaplessRange(span.rows, len(span.keys), parentSpan.rows) {
				return verdict{}
			}
			return fallback(j)
		}
		if ride.served != nil {
			if parent.truncated {
				// too many parent keys to hold: ask the engine after all
				return fallback(j)
			}
			rows, truncated = orphanGroups(ride.rows, len(keys), parent.rows), false
		}
		return c.judgeOrphans(j, rows, truncated, grouped)
	}
}

// smallParent is the most rows a relationships parent may have for its keys to be joined into
// the relation's aggregate scan (a dimension); a larger one is read on its own.
const smallParent = 5_000_000

// lookupJoin reports whether the rule's parent is small enough, as counted when the rules
// loaded, to be joined into the relation's aggregate scan on an engine where that pays.
func (r *Rule) lookupJoin(d tsql.Dialect) bool {
	return r.parentRows >= 0 && r.parentRows <= smallParent && r.parentCounted && d.FusesLookupJoin()
}

// lookupAlias names a parent's join in a scan after what it joins, so that two rules on the
// same foreign key share it.
func lookupAlias(parent, parentCol, col string) string {
	h := fnv.New32a()
	h.Write([]byte(parent + "\x00" + parentCol + "\x00" + col))
	return fmt.Sprintf("_tu_l%08x", h.Sum32())
}

// insideGaplessRange reports whether the parent's integer keys (one row: min, max, distinct
// count) fill their range without a gap and every group's (keys…, count, min, max) values lie
// inside it, which proves every child value is a parent key.
func insideGaplessRange(groups [][]any, nkeys int, parent [][]any) bool {
	if len(parent) != 1 || len(parent[0]) != 3 {
		return false
	}
	lo, ok1 := exactInt(parent[0][0])
	hi, ok2 := exactInt(parent[0][1])
	n, ok3 := exactInt(parent[0][2])
	if !ok1 || !ok2 || !ok3 || hi < lo || hi-lo < 0 || hi-lo != n-1 {
		return false
	}
	for _, g := range groups {
		if g[nkeys+1] == nil { // no non-NULL value in the group
			continue
		}
		min, ok1 := exactInt(g[nkeys+1])
		max, ok2 := exactInt(g[nkeys+2])
		if !ok1 || !ok2 || min < lo || max > hi {
			return false
		}
	}
	return true
}

// exactInt reads an integer value that fits in an int64; anything else is not one.
func exactInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case uint64:
		return int64(x), x <= math.MaxInt64
	}
	return 0, false
}

// orphanGroups keeps the groups (keys…, count) whose last key is not NULL and not a parent value.
func orphanGroups(groups [][]any, nkeys int, parent [][]any) [][]any {
	known := map[string]bool{}
	for _, p := range parent {
		known[partitionText(p[0])] = true
	}
	var out [][]any
	for _, g := range groups {
		v := g[nkeys-1]
		if v != nil && !known[partitionText(v)] {
			out = append(out, g[:nkeys+1])
		}
	}
	return out
}

// judgeOrphans judges rows of (partition…, value, count) of orphan rows.
func (c *check) judgeOrphans(j *judgeEnv, rows [][]any, truncated bool, grouped func([]string) string) verdict {
	r := c.rule
	var v verdict
	parts := newPartitions()
	byValue := newPartitions()
	counts := map[string]int64{}
	for _, row := range rows {
		n := tsql.AsInt64(row[len(row)-1])
		v.violations += n
		if r.Partition != "" {
			parts.add(row[0])
		}
		counts[byValue.add(row[len(row)-2])] += n
	}
	v.failing = parts.sorted()
	v.failed = v.violations > 0
	if !v.failed {
		return v
	}
	var sample []Row
	for _, k := range byValue.sorted() {
		sample = append(sample, Row{{Name: r.Column, Value: sampleValue(byValue.vals[k])}, {Name: "rows", Value: counts[k]}})
	}
	sort.SliceStable(sample, func(a, b int) bool { return sample[a][1].Value.(int64) > sample[b][1].Value.(int64) })
	v.sample = limitSample(sample, j.sample)
	v.message = fmt.Sprintf("%s whose %s is not in %s.%s", plural(v.violations, "row", "rows"), r.Column, r.Parent, r.ParentCol)
	if truncated {
		// too many orphan groups to fetch: count them per partition instead
		byPart := c.follow(grouped(c.partitionKey()), refCap)
		c.finish = func(v *verdict) { c.countOrphans(v, byPart) }
	}
	return v
}

// countOrphans sets the count and failing partitions from rows of (partition…, count) of orphan rows.
func (c *check) countOrphans(v *verdict, byPart *need) {
	r := c.rule
	p := newPartitions()
	v.violations = 0
	for _, row := range byPart.rows {
		v.violations += tsql.AsInt64(row[len(row)-1])
		if r.Partition != "" {
			p.add(row[0])
		}
	}
	v.failing = p.sorted()
	v.message = fmt.Sprintf("%s whose %s is not in %s.%s", plural(v.violations, "row", "rows"), r.Column, r.Parent, r.ParentCol)
}

func aliases(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = keyAlias(i)
	}
	return out
}

// freshness: the newest value of a date or timestamp column is at most max_age old, in the
// table or in each group of group_by. A date counts as midnight UTC of its day; a value in the
// future is fresh unless allow_future: false. The max rides on the relation's aggregate scan.
func (c *check) freshness() {
	r := c.rule
	var keys []string
	for _, g := range r.GroupBy {
		keys = append(keys, c.d.Quote(g))
	}
	main := c.scan(keys, aggExpr{"max(" + c.d.Quote(r.Column) + ")", "max"})
	c.judge = func(_ context.Context, j *judgeEnv) verdict {
		if len(main.rows) == 0 || (len(keys) == 0 && tsql.AsInt64(main.rows[0][0]) == 0) {
			if r.Where != "" {
				return verdict{failed: true, violations: 1, message: "no row of " + r.Table + " meets where: " + r.Where}
			}
			return verdict{failed: true, violations: 1, message: r.Table + " is empty"}
		}
		var v verdict
		var stale []Row
		var problem string
		for _, row := range main.rows {
			groups, newest := row[:len(keys)], row[len(keys)+1]
			sample := Row{}
			for i, g := range r.GroupBy {
				sample = append(sample, Field{Name: g, Value: sampleValue(groups[i])})
			}
			if newest == nil {
				v.violations++
				problem = fmt.Sprintf("%s has no value: it is NULL in every row", r.Column)
				stale = append(stale, append(sample, Field{Name: "newest", Value: nil}, Field{Name: "age", Value: nil}, Field{Name: "max_age", Value: formatAge(r.MaxAge)}))
				continue
			}
			age := j.now.Sub(tsql.AsTime(newest))
			sample = append(sample, Field{Name: "newest", Value: sampleValue(newest)}, Field{Name: "age", Value: formatAge(age)}, Field{Name: "max_age", Value: formatAge(r.MaxAge)})
			switch {
			case age > r.MaxAge:
				problem = fmt.Sprintf("newest %s %s is %s old, more than max_age %s", r.Column, tsql.AsText(newest), formatAge(age), formatAge(r.MaxAge))
			case age < 0 && r.NoFuture:
				problem = fmt.Sprintf("newest %s %s is in the future (allow_future: false)", r.Column, tsql.AsText(newest))
			default:
				if len(keys) == 0 {
					v.sample = []Row{sample}
				}
				continue
			}
			v.violations++
			stale = append(stale, sample)
		}
		v.failed = v.violations > 0
		if !v.failed {
			return v
		}
		sort.SliceStable(stale, func(a, b int) bool { return compareRows(rowValues(stale[a]), rowValues(stale[b])) < 0 })
		v.sample = limitSample(stale, j.sample)
		v.message = problem
		if len(keys) > 0 {
			future := ""
			if r.NoFuture {
				future = " or in the future"
			}
			v.message = fmt.Sprintf("%s of %d not fresh: the newest %s is older than max_age %s%s, or there is none",
				plural(v.violations, "group", "groups"), len(main.rows), r.Column, formatAge(r.MaxAge), future)
		}
		return v
	}
}

func rowValues(r Row) []any {
	out := make([]any, len(r))
	for i, f := range r {
		out[i] = f.Value
	}
	return out
}

func formatAge(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	d = d.Truncate(time.Minute)
	days, hours, mins := d/(24*time.Hour), d%(24*time.Hour)/time.Hour, d%time.Hour/time.Minute
	var b strings.Builder
	if days > 0 {
		fmt.Fprintf(&b, "%dd", days)
	}
	if hours > 0 {
		fmt.Fprintf(&b, "%dh", hours)
	}
	if mins > 0 || b.Len() == 0 {
		fmt.Fprintf(&b, "%dm", mins)
	}
	return sign + b.String()
}
