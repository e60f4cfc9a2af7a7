package reconcile

// The rows one side holds and the other does not: a duplicate key's surplus, and every
// differing row as Spec.Rows streams it.

// extraRow is a row one side holds times more often than the other.
type extraRow struct {
	new   bool
	times int64
	vals  []any
}

// surplus lists the current key's rows that have no equal partner on the other side, equal rows
// once with how many times more one side holds them.
func (df *differ) surplus() []extraRow {
	var out []extraRow
	used := make([]bool, len(df.new))
	var extraOld [][]any
	for _, o := range df.old {
		if !df.partner(used, o) {
			extraOld = append(extraOld, o)
		}
	}
	var extraNew [][]any
	for j, nw := range df.new {
		if !used[j] {
			extraNew = append(extraNew, nw)
		}
	}
	for _, side := range []struct {
		new  bool
		rows [][]any
	}{{false, extraOld}, {true, extraNew}} {
		first := len(out)
	rows:
		for _, r := range side.rows {
			for g := first; g < len(out); g++ {
				if df.equalRows(out[g].vals, r) {
					out[g].times++
					continue rows
				}
			}
			out = append(out, extraRow{new: side.new, times: 1, vals: append([]any(nil), r...)})
		}
	}
	return out
}

// surplusSamples are the first of a key's surplus rows as a sample shows them.
func (df *differ) surplusSamples(extra []extraRow) []Surplus {
	out := []Surplus{}
	for _, x := range extra {
		if len(out) == df.limit {
			break
		}
		out = append(out, Surplus{Side: sideName(x.new), Times: x.times, Values: df.valuesOf(x.vals, x.new)})
	}
	return out
}

// stream hands a differing row to Spec.Rows, times times, when it is set: "-" a row of old,
// "+" one of new. The first error it returns stops the diff.
func (df *differ) stream(new bool, vals []any, times int64) { df.streamLine(new, vals, times, false) }

// streamSurplus is stream for the copies of a row one side holds more often than the other,
// which holds it too (RowLine.Surplus).
func (df *differ) streamSurplus(new bool, vals []any, times int64) {
	df.streamLine(new, vals, times, true)
}

func (df *differ) streamLine(new bool, vals []any, times int64, surplus bool) {
	if df.rows == nil || df.err != nil {
		return
	}
	line := RowLine{Sign: "-", Partition: WholeRelation, Values: df.valuesOf(vals, new), Surplus: surplus}
	if new {
		line.Sign = "+"
	}
	if df.partIdx >= 0 {
		line.Partition = df.p.label(df.p.partOf(vals[df.partIdx]))
	}
	for range times {
		if df.err = df.rows(line); df.err != nil {
			return
		}
	}
}

func sideName(new bool) string {
	if new {
		return "new"
	}
	return "old"
}
