package reconcile

import (
	"math"
	"strings"
	"time"

	tsql "trueup/sql"
)

// differ classifies rows by key. Rows arrive grouped: every row of one (partition, key) from
// both sides before the next key. Only keys that may differ are fed to it; it never sees the
// rows that checksums already proved equal.
type differ struct {
	p       *plan
	partIdx int     // position of the partition column in plan.compared, -1 without one
	keyIdx  []int   // positions of the key columns
	limit   int     // samples per kind per partition
	scale   float64 // 10^Spec.Scale: numbers without a tolerance are equal when they round alike
	parts   map[string]*partDiff

	old, new [][]any   // the rows of the current key
	sums     [2]uint64 // their row hashes summed, where the rows came with them (addHashed)

	lastPart  *partDiff // the partition of the previous key, and its value
	lastValue any

	rows func(RowLine) error // Spec.Rows: every differing row, as it is found
	err  error               // the first error rows returned: the diff stops with it
}

// partDiff is what the row-level comparison found in one partition.
type partDiff struct {
	rows       RowCounts
	changedBy  []int64 // changed rows per compared column
	samples    Samples
	fetchedOld int64 // rows read for keys that may differ, per side
	fetchedNew int64
	sums       [2]uint64 // the row hashes of the rows read for those keys, per side
	nullSums   [2]uint64 // and of the rows read whose key has a NULL, and how many
	nullRead   [2]int64
	dups       map[string]bool // duplicate keys found, so the follow-up does not count them twice
}

func newDiffer(p *plan) *differ {
	df := &differ{p: p, partIdx: p.partIndex(), limit: p.spec.samples(), parts: map[string]*partDiff{},
		scale: math.Pow10(p.spec.scale()), rows: p.spec.Rows}
	for i, c := range p.compared {
		if p.isKey(c.Name) {
			df.keyIdx = append(df.keyIdx, i)
		}
	}
	return df
}

func (df *differ) partKey(vals []any) string {
	if df.partIdx < 0 {
		return valueKey(nil)
	}
	return valueKey(partValue(df.p.part.Old.Kind, vals[df.partIdx]))
}

func (df *differ) groupKey(vals []any) string {
	var b strings.Builder
	b.WriteString(df.partKey(vals))
	for _, i := range df.keyIdx {
		b.WriteByte(0x1f)
		b.WriteString(valueKey(vals[i]))
	}
	return b.String()
}

func (df *differ) part(key string) *partDiff {
	pd := df.parts[key]
	if pd == nil {
		pd = &partDiff{changedBy: make([]int64, len(df.p.compared)), dups: map[string]bool{}}
		df.parts[key] = pd
	}
	return pd
}

// reset forgets what was found in a partition, before it is compared again.
func (df *differ) reset(partKey string) {
	delete(df.parts, partKey)
	df.lastPart, df.lastValue = nil, nil
}

// add takes one row of one side; vals are the compared columns in plan order and are copied.
func (df *differ) add(new bool, vals []any) {
	if df.old == nil && df.new == nil || !df.sameGroup(vals) {
		df.flush()
	}
	row := append([]any(nil), vals...)
	if new {
		df.new = append(df.new, row)
	} else {
		df.old = append(df.old, row)
	}
}

// addHashed is add of a row read with its row hash as the partition summary computes it, which
// the partition's sums of rows read take (accountsFor).
func (df *differ) addHashed(new bool, vals []any, hash uint64) {
	df.add(new, vals)
	df.sums[sideIndex(new)] += hash
}

// readApart takes the row hash of a row read whose key has a NULL: it is not compared by key,
// but it is in the partition's summary like any other.
func (df *differ) readApart(new bool, vals []any, hash uint64) {
	pd := df.partFor(vals)
	pd.nullSums[sideIndex(new)] += hash
	pd.nullRead[sideIndex(new)]++
}

// sideIndex is a side's position in pairs of figures: 0 old, 1 new.
func sideIndex(new bool) int {
	if new {
		return 1
	}
	return 0
}

// partFor is the partition of a row, looked up again only when its value changes.
func (df *differ) partFor(vals []any) *partDiff {
	if pd := df.lastPart; pd != nil && (df.partIdx < 0 || sameValue(df.lastValue, vals[df.partIdx])) {
		return pd
	}
	pd := df.part(df.partKey(vals))
	df.lastPart = pd
	if df.partIdx >= 0 {
		df.lastValue = vals[df.partIdx]
	}
	return pd
}

// sameGroup reports whether vals have the partition and key of the rows held for the current key.
func (df *differ) sameGroup(vals []any) bool {
	var cur []any
	switch {
	case len(df.old) > 0:
		cur = df.old[0]
	case len(df.new) > 0:
		cur = df.new[0]
	default:
		return false
	}
	if df.partIdx >= 0 && !sameValue(cur[df.partIdx], vals[df.partIdx]) {
		return false
	}
	for _, i := range df.keyIdx {
		if !sameValue(cur[i], vals[i]) {
			return false
		}
	}
	return true
}

// sameValue is value identity for grouping: cheap for the common types, valueKey otherwise.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	return valueKey(a) == valueKey(b)
}

// flush classifies the rows of the current key.
func (df *differ) flush() {
	m, n := len(df.old), len(df.new)
	if m+n == 0 {
		return
	}
	first := df.new
	if m > 0 {
		first = df.old
	}
	pd := df.partFor(first[0])
	pd.fetchedOld += int64(m)
	pd.fetchedNew += int64(n)
	pd.sums[0] += df.sums[0]
	pd.sums[1] += df.sums[1]
	df.sums = [2]uint64{}
	switch {
	case (m > 1 || n > 1) && df.sameRows():
		// A key repeated alike on both sides is no difference. (Inside one engine such keys
		// never reach here; across engines they come with the other rows of a bucket.)
	case m > 1 || n > 1:
		pd.dups[df.groupKey(first[0])] = true
		pd.rows.DuplicateKeys++
		extra := df.surplus()
		for _, x := range extra {
			if m > 0 && n > 0 {
				df.streamSurplus(x.new, x.vals, x.times)
			} else {
				df.stream(x.new, x.vals, x.times)
			}
		}
		if len(pd.samples.Duplicates) < df.limit {
			pd.samples.Duplicates = append(pd.samples.Duplicates, Duplicate{Key: df.keyOf(first[0]), OldRows: int64(m), NewRows: int64(n),
				Surplus: df.surplusSamples(extra)})
		}
	case m == 0:
		pd.rows.Added++
		df.stream(true, df.new[0], 1)
		if len(pd.samples.Added) < df.limit {
			pd.samples.Added = append(pd.samples.Added, Row{Key: df.keyOf(first[0]), Values: df.valuesOf(df.new[0], true)})
		}
	case n == 0:
		pd.rows.Removed++
		df.stream(false, df.old[0], 1)
		if len(pd.samples.Removed) < df.limit {
			pd.samples.Removed = append(pd.samples.Removed, Row{Key: df.keyOf(first[0]), Values: df.valuesOf(df.old[0], false)})
		}
	default:
		o, nw := df.old[0], df.new[0]
		changed := false
		for i := range df.p.compared {
			if !df.equal(i, o[i], nw[i]) {
				changed = true
				pd.changedBy[i]++
			}
		}
		if changed {
			df.stream(false, o, 1)
			df.stream(true, nw, 1)
			pd.rows.Changed++
			if len(pd.samples.Changed) < df.limit {
				var cols []ColumnChange
				for i, c := range df.p.compared {
					if !df.equal(i, o[i], nw[i]) {
						cols = append(cols, ColumnChange{Column: c.Name, Old: df.shown(c, false, o[i]), New: df.shown(c, true, nw[i])})
					}
				}
				pd.samples.Changed = append(pd.samples.Changed, Change{Key: df.keyOf(o), Columns: cols})
			}
		}
	}
	df.old, df.new = df.old[:0], df.new[:0]
}

// sameRows reports whether the current key has the same rows on both sides, as many of each.
func (df *differ) sameRows() bool {
	if len(df.old) != len(df.new) {
		return false
	}
	used := make([]bool, len(df.new))
	for _, o := range df.old {
		if !df.partner(used, o) {
			return false
		}
	}
	return true
}

// partner marks in used the first row of new equal to o that has no partner yet; false when
// there is none.
func (df *differ) partner(used []bool, o []any) bool {
	for j, nw := range df.new {
		if !used[j] && df.equalRows(o, nw) {
			used[j] = true
			return true
		}
	}
	return false
}

func (df *differ) equalRows(a, b []any) bool {
	for i := range df.p.compared {
		if !df.equal(i, a[i], b[i]) {
			return false
		}
	}
	return true
}

// duplicate records a key found by the duplicate follow-up query (rows identical on both sides
// but not as many of them).
func (df *differ) duplicate(partKey, groupKey string, key Fields, oldRows, newRows int64, extra []extraRow) {
	pd := df.part(partKey)
	if pd.dups[groupKey] {
		return
	}
	pd.dups[groupKey] = true
	pd.rows.DuplicateKeys++
	for _, x := range extra {
		df.streamSurplus(x.new, x.vals, x.times) // both sides hold the key (see duplicateKeys)
	}
	if len(pd.samples.Duplicates) < df.limit {
		pd.samples.Duplicates = append(pd.samples.Duplicates, Duplicate{Key: key, OldRows: oldRows, NewRows: newRows, Surplus: df.surplusSamples(extra)})
	}
}

// changed is the partition's changed rows per column name, nil when none.
func (df *differ) changed(pd *partDiff) map[string]int64 {
	var out map[string]int64
	for i, n := range pd.changedBy {
		if n > 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[df.p.compared[i].Name] = n
		}
	}
	return out
}

// keyed reports whether a row's key has no NULL: rows whose key has one are not compared by key.
func (df *differ) keyed(vals []any) bool {
	for _, i := range df.keyIdx {
		if vals[i] == nil {
			return false
		}
	}
	return true
}

// keyOf is a row's key as samples show it, in --key order.
func (df *differ) keyOf(vals []any) Fields {
	out := make(Fields, len(df.keyIdx))
	for j, i := range df.keyIdx {
		out[j] = Field{Name: df.p.key[j].Name, Value: sampleValue(df.p.key[j].Old.Kind, vals[i])}
	}
	return out
}

// shown is a value of column c of one side as samples show it: as that side's table holds it,
// also when it left a join inside one engine as text (Dialect.Unjoined).
func (df *differ) shown(c pair, new bool, v any) any {
	if !df.p.cross {
		v = df.p.side(new).Engine.Dialect().Unjoined(v, c.side(new))
	}
	return sampleValue(c.side(new).Kind, v)
}

// valuesOf is one side's row as samples show it, in the order the columns are compared.
func (df *differ) valuesOf(vals []any, new bool) Fields {
	out := make(Fields, len(df.p.compared))
	for i, c := range df.p.compared {
		out[i] = Field{Name: c.Name, Value: df.shown(c, new, vals[i])}
	}
	return out
}

// equal compares one column's values at the column's precision, as the checksums do: NULL
// equals NULL, NaN equals NaN; numbers within the column's tolerance, or rounded at its decimal
// places; timestamps as instants truncated to its fractional digits; anything else as text.
func (df *differ) equal(i int, a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	a, b = boolToInt(a), boolToInt(b)
	if x, ok := a.(int64); ok {
		if y, ok := b.(int64); ok {
			if t, has := df.p.tol[df.p.compared[i].Name]; has {
				return within(float64(x), float64(y), t)
			}
			return x == y
		}
	}
	if x, ok := a.(uint64); ok { // above the largest BIGINT (smaller ones read as int64)
		if y, ok := b.(uint64); ok {
			if t, has := df.p.tol[df.p.compared[i].Name]; has {
				return within(float64(x), float64(y), t)
			}
			return x == y
		}
	}
	if x, ok := a.(tsql.Decimal); ok {
		if y, ok := b.(tsql.Decimal); ok { // exactly, at the column's decimal places
			if t, has := df.p.tol[df.p.compared[i].Name]; has {
				return within(x.Float64(), y.Float64(), t)
			}
			digits := df.p.spec.scale()
			if pr := df.p.prec[i]; pr.stated {
				digits = pr.Digits
			}
			return x.EqualAt(y, digits)
		}
	}
	if fa, ok := number(a); ok {
		if fb, ok := number(b); ok {
			if math.IsNaN(fa) || math.IsNaN(fb) { // NaN is a value, as in the engines' comparisons
				return math.IsNaN(fa) && math.IsNaN(fb)
			}
			pr := df.p.prec[i]
			fa, fb = pr.numbers(fa, fb)
			if t, has := df.p.tol[df.p.compared[i].Name]; has {
				return within(fa, fb, t)
			}
			scale := df.scale
			if pr.stated {
				scale = math.Pow10(pr.Digits)
			}
			return fa == fb || math.Round(fa*scale) == math.Round(fb*scale)
		}
	}
	if x, ok := a.(time.Time); ok {
		if y, ok := b.(time.Time); ok {
			return df.p.prec[i].equalTimes(x, y)
		}
	}
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			return x == y
		}
	}
	// Values of different Go types (a date held as text on the other side): as text, the way
	// tsql.AsText renders them. This is not how samples print (sampleValue): printing a
	// timestamp's fraction must not make a changed row of it. A DuckDB STRUCT (read as a map)
	// and a ClickHouse Tuple (a list) compare field by field in the order their types declare.
	if c := df.p.compared[i]; tsql.Composite(a) || tsql.Composite(b) {
		return sameNested(tsql.Positional(a, c.Old.Type), tsql.Positional(b, c.New.Type))
	}
	return tsql.AsText(a) == tsql.AsText(b)
}

func within(a, b float64, t Tolerance) bool {
	d := math.Abs(a - b)
	if d <= t.Abs {
		return true
	}
	return t.Rel > 0 && d <= t.Rel*math.Max(math.Abs(a), math.Abs(b))
}

func boolToInt(v any) any {
	if x, ok := v.(bool); ok {
		if x {
			return int64(1)
		}
		return int64(0)
	}
	return v
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	case tsql.Decimal: // beside a double: compared as doubles
		return x.Float64(), true
	}
	return 0, false
}

// sameNested compares values that may be lists or structs element by element, NULL apart from
// every value: as text (AsText) a list's elements are joined by spaces, so ['a', 'b c'] and
// ['a b', 'c'], or an empty list and a list of one empty string, would read alike.
func sameNested(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameNested(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !sameNested(v, w) {
				return false
			}
		}
		return true
	}
	// A boolean beside a number (DuckDB's BOOLEAN[] beside ClickHouse's Array(UInt8)) is 1 or 0,
	// as the scalar columns compare.
	if _, ok := number(b); ok {
		a = boolToInt(a)
	}
	if _, ok := number(a); ok {
		b = boolToInt(b)
	}
	return !tsql.Composite(b) && tsql.AsText(a) == tsql.AsText(b)
}
