package reconcile

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	tsql "trueup/sql"
)

// rowDiffWide is the first, single-pass row comparison inside one engine: the given partitions
// (values nil: every partition in scope) of both sides are joined on (partition, key) carrying
// every compared column, and only the pairs that differ are read out, sorted. A row whose
// partition changed comes out as one removed and one added. (Joining on the key alone costs no
// less, and pairs every day of a key that repeats from day to day, as in a daily snapshot.)
//
// A pair is exact when each key has at most one row a side. Where a key has more, the pairs do
// not say how many rows each side holds: the equal pairs are not read out, and a key's extra
// row on one side may pair only with equal rows (and come out never, or once). So each row read
// brings its row hash as the partition summary computes it, and the partitions involved are
// returned for the exact comparison (rowDiffExact) when a key came out more than once, or when
// the rows read do not make up a partition's summary (accountsFor): the rows left out must be
// equal pairs, as many rows on each side and hashing alike. It returns the number of table rows
// read (a pair is two).
func (p *plan) rowDiffWide(ctx context.Context, df *differ, parts []*Partition, values []any) (int64, []*Partition, error) {
	e := p.spec.Old.Engine
	d := e.Dialect()
	b := newBinder()
	cols := p.joinColumns()
	names := make([]string, len(cols))
	for i := range cols {
		names[i] = "__j" + strconv.Itoa(i)
	}
	// joined[i] is the position among the join columns of compared column i, or -1: join columns
	// are read once, merged, rather than from each side.
	joined := make([]int, len(p.compared))
	var rest []int // the compared columns that are not join columns
	for i, c := range p.compared {
		joined[i] = -1
		for j, jc := range cols {
			if jc.Name == c.Name {
				joined[i] = j
			}
		}
		if joined[i] < 0 {
			rest = append(rest, i)
		}
	}
	hashes, carried := p.wideHashes(d, names, joined)
	side := func(new bool) string {
		prefix, presence := "__o", "__po"
		if new {
			prefix, presence = "__n", "__pn"
		}
		sel := make([]string, 0, len(cols)+len(p.compared)+1)
		for i, c := range cols {
			sel = append(sel, p.selectExpr(d, c, new)+" AS "+d.Quote(names[i]))
		}
		sel = append(sel, "1 AS "+d.Quote(presence))
		for i, c := range p.compared {
			if joined[i] < 0 {
				sel = append(sel, p.selectExpr(d, c, new)+" AS "+d.Quote(prefix+strconv.Itoa(i)))
			}
		}
		sel = append(sel, carried[sideIndex(new)]...)
		// Rows whose key has a NULL match nothing and come out unpaired; they are dropped in Go,
		// which is cheaper than a filter over every row.
		return "SELECT " + strings.Join(sel, ", ") + " FROM " + d.QuoteRelation(p.side(new).Relation) +
			where(p.filter(), p.partFilter(d, b, new, values))
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = d.Quote(n)
	}
	out := append([]string(nil), quoted...)
	out = append(out, d.Quote("__po"), d.Quote("__pn"))
	var eqs []string
	for _, i := range rest {
		out = append(out, d.Quote("__o"+strconv.Itoa(i)))
		eqs = append(eqs, d.NullSafeEqual(d.Quote("__o"+strconv.Itoa(i)), d.Quote("__n"+strconv.Itoa(i))))
	}
	for _, i := range rest {
		out = append(out, d.Quote("__n"+strconv.Itoa(i)))
	}
	// computed on the rows read out only, after the filter
	out = append(out, hashes[0]+" AS "+d.Quote("__ho"), hashes[1]+" AS "+d.Quote("__hn"))
	differs := d.Quote("__po") + " IS NULL OR " + d.Quote("__pn") + " IS NULL"
	if len(eqs) > 0 {
		differs += " OR NOT (" + strings.Join(eqs, " AND ") + ")"
	}
	text := "SELECT " + strings.Join(out, ", ") + " FROM (" + side(false) + ") AS o FULL OUTER JOIN (" + side(true) +
		") AS n USING (" + strings.Join(quoted, ", ") + ") WHERE " + differs + " ORDER BY " + strings.Join(quoted, ", ")
	q, args, err := b.expand(d, text)
	if err != nil {
		return 0, nil, err
	}
	var n int64
	k, r := len(names), len(rest)
	vals := make([]any, len(p.compared))
	// fill lays one side's values out in plan order: join columns from the merged ones.
	fill := func(row []any, from int) []any {
		for i, j := range joined {
			if j >= 0 {
				vals[i] = row[j]
			}
		}
		for x, i := range rest {
			vals[i] = row[from+x]
		}
		return vals
	}
	keyed := func(row []any) bool {
		for j, c := range cols {
			if row[j] == nil && p.isKey(c.Name) {
				return false
			}
		}
		return true
	}
	// Keys that came out more than once have several rows on a side: the partitions of all
	// their rows go to the exact comparison.
	again := map[string]bool{}
	var lastKey, lastParts, rowParts []any
	part := func(vals []any) any {
		if df.partIdx < 0 {
			return nil
		}
		return vals[df.partIdx]
	}
	h := k + 2 + 2*r // where the row hashes are
	err = e.Each(ctx, q, args, func(row []any) error {
		if !keyed(row) {
			for s := range 2 {
				if row[k+s] != nil {
					df.readApart(s == 1, fill(row, k+2+s*r), tsql.AsUint64(row[h+s]))
				}
			}
			return nil
		}
		rowParts = rowParts[:0]
		if row[k] != nil {
			n++
			vals := fill(row, k+2)
			rowParts = append(rowParts, part(vals))
			df.addHashed(false, vals, tsql.AsUint64(row[h]))
		}
		if row[k+1] != nil {
			n++
			vals := fill(row, k+2+r)
			rowParts = append(rowParts, part(vals))
			df.addHashed(true, vals, tsql.AsUint64(row[h+1]))
		}
		if lastKey != nil && sameValues(lastKey, row[:k]) {
			for _, v := range append(rowParts, lastParts...) {
				if p.part != nil {
					v = p.partOf(v)
				}
				again[valueKey(v)] = true
			}
		}
		lastKey = append(lastKey[:0], row[:k]...)
		lastParts = append(lastParts[:0], rowParts...)
		return nil
	})
	if err != nil {
		return n, nil, fmt.Errorf("reconcile: row diff of %s and %s: %w", p.spec.Old.Relation, p.spec.New.Relation, err)
	}
	df.flush()
	var redo, check []*Partition
	for _, pt := range parts {
		// At a grain the differ keeps its findings per row's own value, not per partition,
		// and the hashes of the rows read are not checked against the partition's: such a
		// partition is compared exactly.
		if again[valueKey(pt.value)] || p.grain != "" || p.partDiffOf(df, pt).rows.DuplicateKeys > 0 {
			redo = append(redo, pt)
		} else {
			check = append(check, pt)
		}
	}
	if err := p.sumNullKeys(ctx, df, check); err != nil {
		return n, nil, err
	}
	for _, pt := range check {
		if !p.partDiffOf(df, pt).accountsFor(pt) {
			redo = append(redo, pt)
		}
	}
	return n, redo, nil
}

// wideHashes are the two sides' row hashes (old, new) as the partition summary computes them,
// over the wide join's output, and the columns each side must carry through the join for them.
// A column read as the relation stores it is hashed from the join's column (a join column only
// when it is so on both sides, the join merging them); one read otherwise (as text, as a double)
// is carried as stored, under its own name.
func (p *plan) wideHashes(d tsql.Dialect, names []string, joined []int) (hashes [2]string, carried [2][]string) {
	plain := func(c pair, new bool) bool { return p.selectExpr(d, c, new) == d.Quote(c.side(new).Name) }
	for s, new := range []bool{false, true} {
		prefix := "__o"
		if new {
			prefix = "__n"
		}
		as := map[string]string{}
		hashed, _ := p.summaryHashed(new)
		for x, hc := range hashed {
			alias := ""
			for i, c := range p.compared {
				switch {
				case c.side(new).Name != hc.Name || !plain(c, new):
				case joined[i] < 0:
					alias = prefix + strconv.Itoa(i)
				case plain(c, !new) && c.sameType():
					alias = names[joined[i]]
				}
			}
			if alias == "" {
				alias = "__r" + prefix[2:] + strconv.Itoa(x)
				carried[s] = append(carried[s], d.Joinable(d.Quote(hc.Name), hc)+" AS "+d.Quote(alias))
			}
			as[hc.Name] = alias
		}
		hashes[s] = p.joinedSummaryHash(d, new, func(name string) string { return as[name] })
	}
	return hashes, carried
}

// sameValues reports whether two rows of key values are the same key.
func sameValues(a, b []any) bool {
	for i := range a {
		if !sameValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

// accountsFor reports whether the rows read for a partition make up its summary. The rows not
// read belong to keys whose rows the comparison found equal on both sides, as many of each: as
// many rows on each side, which hash alike, so the counts left over must be equal and the row
// hashes read must differ by what the partition's row-hash sums differ by. When they do not, some
// key has more rows on one side than the comparison saw, even where another key's surplus on
// the other side makes the counts balance.
//
// The rows with a NULL key are in the summary's sums too, so theirs must be known: read with the
// others, or else summed apart (sumNullKeys).
func (pd *partDiff) accountsFor(pt *Partition) bool {
	return pt.OldCount-pt.OldNullKeys-pd.fetchedOld == pt.NewCount-pt.NewNullKeys-pd.fetchedNew &&
		(pt.oldSum-pd.nullSums[0])-(pt.newSum-pd.nullSums[1]) == pd.sums[0]-pd.sums[1]
}
