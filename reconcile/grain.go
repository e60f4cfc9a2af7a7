package reconcile

import (
	"strconv"
	"strings"
	"time"

	tsql "trueup/sql"
)

// A grain (Spec.Grain) makes a partition a span of a date or timestamp column's values — a month
// of days, an hour of timestamps — rather than each value: the partition scan groups by the
// truncated value, so a backfill by month is compared one month at a time, as it was built. Rows
// are still matched on (the column's own value, key) and the row comparison's findings, kept per
// value, are read per partition (partDiffOf), so the row level is the same with or without one.

// resolveGrain checks Spec.Grain against the partition column and sets p.grain; a date column at
// a day or hour grain needs none (each value is its day).
func (p *plan) resolveGrain() error {
	g := p.spec.Grain
	if g == "" && p.part != nil && p.part.Old.Kind == tsql.TypeTimestamp {
		// A timestamp's own values are nearly as many as its rows: a partition of each would
		// be a summary as large as the table. A timestamp column is compared by day unless
		// the spec asks for an hour or a month.
		g = "day"
	}
	if g == "" {
		return nil
	}
	if !tsql.ValidGrain(g) {
		return badInput("grain %q: want day, month or hour", g)
	}
	if p.part == nil || (p.part.Old.Kind != tsql.TypeDate && p.part.Old.Kind != tsql.TypeTimestamp) {
		return badInput("grain %s needs a date or timestamp partition column", g)
	}
	if p.part.Old.Kind == tsql.TypeDate && g != "month" {
		return nil // a date is its day: no finer grain splits it
	}
	p.grain = g
	return nil
}

// partExpr is the partition of a side's rows in SQL: the column, or its value truncated to the
// grain.
func (p *plan) partExpr(d tsql.Dialect, new bool) string {
	col := d.Quote(p.part.side(new).Name)
	if p.grain == "" {
		return col
	}
	return d.TruncTime(col, p.grain)
}

// partOf is the partition a value read from either engine belongs to (partValue, then the start
// of its grain).
func (p *plan) partOf(v any) any {
	v = partValue(p.part.Old.Kind, v)
	if t, ok := v.(time.Time); ok && p.grain != "" {
		return tsql.TruncGrain(t, p.grain)
	}
	return v
}

// partEnd is the start of the partition after the one starting at v (a grain's partition is the
// span [v, partEnd(v))).
func (p *plan) partEnd(v time.Time) time.Time { return tsql.NextGrain(v, p.grain) }

// grainRanges matches the rows of the partitions starting at values: a range of the column per
// partition, which an engine prunes by as it does a list of values; a nil value matches NULL.
func (p *plan) grainRanges(d tsql.Dialect, b *binder, new bool, values []any) string {
	col := d.Quote(p.part.side(new).Name)
	var ors []string
	for _, v := range values {
		ors = append(ors, p.grainRange(d, b, col, v))
	}
	if len(ors) == 0 {
		return "1 = 0"
	}
	return strings.Join(ors, " OR ")
}

// grainRange matches the rows of column col (SQL) in the partition starting at v; a nil value
// matches NULL.
func (p *plan) grainRange(d tsql.Dialect, b *binder, col string, v any) string {
	t, ok := v.(time.Time)
	if !ok {
		return col + " IS NULL"
	}
	return "(" + col + " >= " + b.value(d, p.param(t)) + " AND " + col + " < " + b.value(d, p.param(p.partEnd(t))) + ")"
}

// partDiffOf is what the row comparison found in partition pt. The differ keeps its findings by
// each row's own partition value (compare.go); at a grain, those of the values inside pt are
// summed into one.
func (p *plan) partDiffOf(df *differ, pt *Partition) *partDiff {
	if p.grain == "" {
		return df.part(valueKey(pt.value))
	}
	out := &partDiff{changedBy: make([]int64, len(p.compared)), dups: map[string]bool{}}
	for _, k := range p.keysIn(df, pt) {
		out.merge(df.parts[k], df.limit)
	}
	return out
}

// resetPart forgets what the row comparison found in partition pt, before it is compared again.
func (p *plan) resetPart(df *differ, pt *Partition) {
	if p.grain == "" {
		df.reset(valueKey(pt.value))
		return
	}
	for _, k := range p.keysIn(df, pt) {
		df.reset(k)
	}
}

// keysIn lists the differ's partition keys whose values lie in partition pt.
func (p *plan) keysIn(df *differ, pt *Partition) []string {
	want := valueKey(pt.value)
	var out []string
	for k := range df.parts {
		if t, ok := keyTime(k); ok && valueKey(p.partOf(t)) == want {
			out = append(out, k)
		}
	}
	return out
}

// keyTime reads back the time a valueKey was made of.
func keyTime(k string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(k, "t")
	if !ok {
		return time.Time{}, false
	}
	secs, nanos, ok := strings.Cut(rest, ".")
	if !ok {
		return time.Time{}, false
	}
	s, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(nanos, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(s, n).UTC(), true
}

// inWindows reports whether partition v lies in one of ws: at a grain, whether it shares an
// instant with one (a month partition is inside a scope of some of its days).
func (p *plan) inWindows(v any, ws []tsql.Window) bool {
	t, ok := v.(time.Time)
	if p.grain == "" || !ok {
		return inWindows(v, ws)
	}
	for _, w := range ws {
		if t.Before(w.End) && p.partEnd(t).After(w.Start) {
			return true
		}
	}
	return false
}

// inRanges reports whether partition v lies in one of the inclusive ranges; at a grain, whether
// it holds a value of one.
func (p *plan) inRanges(v any, ranges [][2]any) bool {
	t, ok := v.(time.Time)
	if p.grain == "" || !ok {
		return inRanges(v, ranges)
	}
	for _, r := range ranges {
		from, fok := r[0].(time.Time)
		to, tok := r[1].(time.Time)
		if fok && tok && !t.After(to) && p.partEnd(t).After(from) {
			return true
		}
	}
	return false
}
