package reconcile

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	tsql "trueup/sql"
)

// rowDiffExact compares, inside the one engine both sides live in, the rows of the given
// partitions by key, exactly however many rows a key has. A narrow FULL JOIN of (partition,
// key, row hash) finds the keys whose rows may differ; every row of those keys is read out,
// sorted so each key's rows arrive together, with its row hash as the partition summary
// computes it, and so are the row hashes of the rows whose key has a NULL: what the rows read
// leave of a partition's summary is then the keys whose rows are all equal (accountsFor). It
// returns the number of rows read.
func (p *plan) rowDiffExact(ctx context.Context, df *differ, values []any) (int64, error) {
	e := p.spec.Old.Engine
	d := e.Dialect()
	b := newBinder()

	names := p.joinNames()
	side := func(new bool, hashAlias string) string {
		sel := make([]string, 0, len(names)+1)
		for i, c := range p.joinColumns() {
			sel = append(sel, p.selectExpr(d, c, new)+" AS "+d.Quote(names[i]))
		}
		sel = append(sel, p.rowHash(d, new)+" AS "+d.Quote(hashAlias))
		return "SELECT " + strings.Join(sel, ", ") + " FROM " + d.QuoteRelation(p.side(new).Relation) +
			where(p.filter(), p.partFilter(d, b, new, values), p.keyNotNull(d, new))
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = d.Quote(n)
	}
	keys := "SELECT " + strings.Join(quoted, ", ") + " FROM (" + side(false, "__ho") + ") AS o FULL OUTER JOIN (" +
		side(true, "__hn") + ") AS n USING (" + strings.Join(quoted, ", ") + ") WHERE NOT " + d.NullSafeEqual(d.Quote("__ho"), d.Quote("__hn"))
	with, ref := d.Materialize("__reconcile_keys", keys)

	fetch := func(new bool) string {
		sel := []string{"0 AS " + d.Quote("__s"), p.summaryHash(d, new) + " AS " + d.Quote("__h")}
		if new {
			sel[0], sel[1] = "1", p.summaryHash(d, new)
		}
		for i, c := range p.compared {
			x := p.selectExpr(d, c, new)
			if !new {
				x += " AS " + d.Quote("__c"+strconv.Itoa(i))
			}
			sel = append(sel, x)
		}
		// Matching on the key alone (not the partition) reads a few more rows when a key moved
		// between differing partitions, but every group of a differing key whole, and is faster.
		var tuple, names []string
		for i, c := range p.joinColumns() {
			if p.isKey(c.Name) {
				tuple = append(tuple, p.selectExpr(d, c, new))
				names = append(names, quoted[i])
			}
		}
		in := "(" + strings.Join(tuple, ", ") + ") IN (SELECT " + strings.Join(names, ", ") + " FROM " + ref + ")"
		if null := p.keyIsNull(d, new); null != "" {
			in = "(" + null + ") OR " + in // a NULL is in nothing
		}
		return "SELECT " + strings.Join(sel, ", ") + " FROM " + d.QuoteRelation(p.side(new).Relation) +
			where(p.filter(), p.partFilter(d, b, new, values), in)
	}
	var order []string
	if df.partIdx >= 0 {
		order = append(order, d.Quote("__c"+strconv.Itoa(df.partIdx)))
	}
	for _, i := range df.keyIdx {
		order = append(order, d.Quote("__c"+strconv.Itoa(i)))
	}
	text := with + "SELECT * FROM (" + fetch(false) + " UNION ALL " + fetch(true) + ") AS u ORDER BY " + strings.Join(order, ", ")
	q, args, err := b.expand(d, text)
	if err != nil {
		return 0, err
	}
	var n int64
	err = e.Each(ctx, q, args, func(row []any) error {
		new, hash, vals := tsql.AsInt64(row[0]) == 1, tsql.AsUint64(row[1]), row[2:]
		if !df.keyed(vals) {
			df.readApart(new, vals, hash)
			return nil
		}
		n++
		df.addHashed(new, vals, hash)
		return df.err
	})
	if err != nil {
		return n, fmt.Errorf("reconcile: row diff of %s and %s: %w", p.spec.Old.Relation, p.spec.New.Relation, err)
	}
	df.flush()

	return n, nil
}

// findDuplicates looks for keys with more than one row in the given partitions of both sides and
// records those the row diff did not already see. It is needed only where the rows read do not
// make up the partition's summary (accountsFor): identical rows present a different number of
// times. A key the row diff did not read has the same rows on both sides, so it is a duplicate
// only with more of them on one side; as many on each is a key repeated alike, no difference.
func (p *plan) findDuplicates(ctx context.Context, df *differ, values []any) error {
	counts := [2]map[string]int64{{}, {}}
	firsts := map[string][]any{}
	for s, new := range []bool{false, true} {
		side := p.side(new)
		d := side.Engine.Dialect()
		b := newBinder()
		var cols []string
		for _, c := range p.joinColumns() {
			cols = append(cols, p.selectExpr(d, c, new))
		}
		text := "SELECT " + strings.Join(cols, ", ") + ", count(*) FROM " + d.QuoteRelation(side.Relation) +
			where(p.filter(), p.partFilter(d, b, new, values), p.keyNotNull(d, new)) +
			" GROUP BY " + strings.Join(cols, ", ") + " HAVING count(*) > 1"
		q, args, err := b.expand(d, text)
		if err != nil {
			return err
		}
		err = side.Engine.Each(ctx, q, args, func(row []any) error {
			vals := df.fromJoinColumns(row)
			k := df.groupKey(vals)
			counts[s][k] = tsql.AsInt64(row[len(row)-1])
			if firsts[k] == nil {
				firsts[k] = vals
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reconcile: duplicate keys in %s: %w", side.Relation, err)
		}
	}
	surplus, err := p.surplusRows(ctx, df, values, firsts)
	if err != nil {
		return err
	}
	for k, vals := range firsts {
		m, n := counts[0][k], counts[1][k]
		// Not a duplicate on a side means exactly one row there: with none the key would have
		// differed and been read by the row diff.
		if m == 0 {
			m = 1
		}
		if n == 0 {
			n = 1
		}
		if m == n {
			continue
		}
		df.duplicate(df.partKey(vals), k, df.keyOf(vals), m, n, surplus[k])
	}
	return nil
}

// surplusRows says, for the duplicate keys found by findDuplicates (keys), which of their rows
// one side holds more times than the other. Every distinct row of such a key is on both sides
// (else the row diff would have read the key), so a row seen once on a side is not listed by
// the HAVING and counts 1 there. Rows are told apart by the row hash, at the columns' precisions.
func (p *plan) surplusRows(ctx context.Context, df *differ, values []any, keys map[string][]any) (map[string][]extraRow, error) {
	type row struct {
		vals  []any
		count [2]int64
	}
	rows := map[string]*row{}
	var order []string
	for s, new := range []bool{false, true} {
		side := p.side(new)
		d := side.Engine.Dialect()
		b := newBinder()
		var sel, group []string
		for _, c := range p.compared {
			sel = append(sel, "min("+p.selectExpr(d, c, new)+")")
		}
		for _, c := range p.joinColumns() {
			group = append(group, p.selectExpr(d, c, new))
		}
		group = append(group, p.rowHash(d, new))
		text := "SELECT " + strings.Join(sel, ", ") + ", count(*) FROM " + d.QuoteRelation(side.Relation) +
			where(p.filter(), p.partFilter(d, b, new, values), p.keyNotNull(d, new)) +
			" GROUP BY " + strings.Join(group, ", ") + " HAVING count(*) > 1"
		q, args, err := b.expand(d, text)
		if err != nil {
			return nil, err
		}
		err = side.Engine.Each(ctx, q, args, func(r []any) error {
			vals := append([]any(nil), r[:len(p.compared)]...)
			k := df.groupKey(vals)
			if keys[k] == nil {
				return nil
			}
			id := k + "\x1e" + fmt.Sprint(len(order))
			// the same row on the other side: equal at the columns' precisions
			for _, o := range order {
				if x := rows[o]; df.groupKey(x.vals) == k && df.equalRows(x.vals, vals) {
					id = o
				}
			}
			x := rows[id]
			if x == nil {
				x = &row{vals: vals, count: [2]int64{1, 1}}
				rows[id] = x
				order = append(order, id)
			}
			x.count[s] = tsql.AsInt64(r[len(r)-1])
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reconcile: duplicate rows in %s: %w", side.Relation, err)
		}
	}
	out := map[string][]extraRow{}
	for _, id := range order {
		x := rows[id]
		k := df.groupKey(x.vals)
		if m, n := x.count[0], x.count[1]; m != n {
			out[k] = append(out[k], extraRow{new: n > m, times: max(m, n) - min(m, n), vals: x.vals})
		}
	}
	return out, nil
}

// joinColumns are the columns rows are matched on: the partition column, then the key.
func (p *plan) joinColumns() []pair {
	var out []pair
	if p.part != nil {
		out = append(out, *p.part)
	}
	for _, k := range p.key {
		if p.part == nil || k.Name != p.part.Name {
			out = append(out, k)
		}
	}
	return out
}

// partIndex is the position of the partition column among the compared columns.
func (p *plan) partIndex() int {
	for i, c := range p.compared {
		if p.part != nil && c.Name == p.part.Name {
			return i
		}
	}
	return -1
}

func (p *plan) isKey(name string) bool {
	for _, k := range p.key {
		if k.Name == name {
			return true
		}
	}
	return false
}

// joinNames are the names the join columns go by inside the join, the same on both sides.
func (p *plan) joinNames() []string {
	cols := p.joinColumns()
	out := make([]string, len(cols))
	for i := range cols {
		out[i] = "__j" + strconv.Itoa(i)
	}
	return out
}

// fromJoinColumns places a row of join-column values at their positions among the compared
// columns, so groupKey and keyOf can read it.
func (df *differ) fromJoinColumns(row []any) []any {
	vals := make([]any, len(df.p.compared))
	for i, c := range df.p.joinColumns() {
		for j, cc := range df.p.compared {
			if cc.Name == c.Name {
				vals[j] = row[i]
			}
		}
	}
	return vals
}

// partFilter restricts a side to the given partitions; nil values (or a diff without partitions)
// means every partition in scope.
func (p *plan) partFilter(d tsql.Dialect, b *binder, new bool, values []any) string {
	if p.part == nil || values == nil {
		return p.scopeFilter(d, b, new)
	}
	return p.inList(d, b, new, values)
}
