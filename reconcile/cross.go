package reconcile

import (
	"context"
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	tsql "trueup/sql"
)

// leafRows is the bucket size at which a differing bucket is read out rather than split again.
const leafRows = 32

// maxLevels bounds the splitting; a bucket still large after it (one key with very many rows)
// is read out whole.
const maxLevels = 4

// bucket is a slice of one partition: the rows whose portable key hash is b modulo mod.
type bucket struct {
	part any
	mod  uint64 // 1 is the whole partition
	b    uint64
	rows int64 // the larger side's row count
}

// rowDiffAcross compares rows of differing partitions held in two engines. Rows cannot be joined
// across engines, so each partition is split into buckets by the portable hash of the key;
// per-bucket counts and portable checksums are computed in each engine and compared, differing
// buckets are split again until they are small, and only those buckets' rows are read out and
// matched in Go. It returns the number of rows read.
func (p *plan) rowDiffAcross(ctx context.Context, df *differ, parts []*Partition) (int64, error) {
	var pending, leaves []bucket
	for _, pt := range parts {
		pending = append(pending, bucket{part: pt.value, mod: 1, rows: max(pt.OldCount, pt.NewCount)})
	}
	for level := 0; len(pending) > 0; level++ {
		var large []bucket
		var biggest int64
		for _, u := range pending {
			if u.rows <= leafRows || level == maxLevels {
				leaves = append(leaves, u)
				continue
			}
			large = append(large, u)
			biggest = max(biggest, u.rows)
		}
		if len(large) == 0 {
			break
		}
		// Split so the biggest bucket lands near leafRows, by a power of two up to 4096.
		factor := uint64(1) << min(12, max(1, bits.Len64(uint64((biggest+leafRows-1)/leafRows)-1)))
		split, err := p.splitBuckets(ctx, large, factor)
		if err != nil {
			return 0, err
		}
		// A bucket where more than half the sub-buckets differ is cheaper to read whole.
		children := map[string][]bucket{}
		for _, c := range split {
			k := valueKey(c.part) + "/" + strconv.FormatUint(c.b%large[0].mod, 10)
			children[k] = append(children[k], c)
		}
		pending = pending[:0]
		for _, u := range large {
			kids := children[valueKey(u.part)+"/"+strconv.FormatUint(u.b, 10)]
			if uint64(len(kids)) > factor/2 {
				leaves = append(leaves, u)
				continue
			}
			pending = append(pending, kids...)
		}
	}
	if len(leaves) == 0 {
		return 0, nil
	}

	return p.mergeBuckets(ctx, df, leaves)
}

// bucketCondition matches the rows of the given buckets, which all share one modulus; kh is the
// key hash expression and col the partition column.
func (p *plan) bucketCondition(d tsql.Dialect, b *binder, col, kh string, units []bucket) string {
	byPart := map[string][]bucket{}
	var order []string
	for _, u := range units {
		k := valueKey(u.part)
		if byPart[k] == nil {
			order = append(order, k)
		}
		byPart[k] = append(byPart[k], u)
	}
	var ors []string
	for _, k := range order {
		us := byPart[k]
		cond := ""
		switch {
		case p.part != nil && p.grain != "":
			cond = p.grainRange(d, b, col, us[0].part)
		case p.part != nil:
			cond = col + " = " + b.bind(p.param(us[0].part))
		}
		if us[0].mod > 1 {
			ids := make([]string, len(us))
			for i, u := range us {
				ids[i] = strconv.FormatUint(u.b, 10)
			}
			cond = and(cond, fmt.Sprintf("%s %% %d IN (%s)", kh, us[0].mod, strings.Join(ids, ", ")))
		}
		if cond == "" {
			cond = "1 = 1"
		}
		ors = append(ors, "("+cond+")")
	}
	return strings.Join(ors, " OR ")
}

// splitBuckets computes, on both sides, count and checksum per sub-bucket (modulus times factor)
// of the given buckets, and returns the sub-buckets that differ.
func (p *plan) splitBuckets(ctx context.Context, units []bucket, factor uint64) ([]bucket, error) {
	mod := units[0].mod * factor
	type stat struct {
		part  any
		b     uint64
		count int64
		hash  uint64
	}
	var res [2]map[string]stat
	err := onBothSides(func(s int, new bool) error {
		side := p.side(new)
		d := side.Engine.Dialect()
		b := newBinder()
		pcol := "0"
		if p.part != nil {
			pcol = d.Quote(p.part.side(new).Name)
		}
		values := make([]any, 0, len(units))
		for _, u := range units {
			values = append(values, u.part)
		}
		inner := "SELECT " + pcol + " AS " + d.Quote("__p") + ", " + p.keyHash(d, new) + " AS " + d.Quote("__kh") + ", " +
			p.rowHash(d, new) + " AS " + d.Quote("__h") + " FROM " + d.QuoteRelation(side.Relation) +
			where(p.filter(), p.partFilter(d, b, new, values), p.keyNotNull(d, new))
		kh := d.Quote("__kh")
		part := d.Quote("__p") // at a grain, the partition is the start of the row's span
		if p.part != nil && p.grain != "" {
			part = d.TruncTime(part, p.grain)
		}
		text := fmt.Sprintf("SELECT %s, %s %% %d, count(*), %s FROM (%s) AS t%s GROUP BY %s, %s %% %d",
			part, kh, mod, d.HashSum(d.Quote("__h")), inner,
			where(p.bucketCondition(d, b, d.Quote("__p"), kh, units)), part, kh, mod)
		q, args, err := b.expand(d, text)
		if err != nil {
			return err
		}
		m := map[string]stat{}
		res[s] = m
		err = side.Engine.Each(ctx, q, args, func(row []any) error {
			st := stat{b: tsql.AsUint64(row[1]), count: tsql.AsInt64(row[2]), hash: tsql.AsUint64(row[3])}
			if p.part != nil {
				st.part = p.partOf(row[0])
			}
			m[valueKey(st.part)+"/"+strconv.FormatUint(st.b, 10)] = st
			return nil
		})
		if err != nil {
			return fmt.Errorf("reconcile: bucket checksums of %s: %w", side.Relation, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []bucket
	for k, o := range res[0] {
		n, ok := res[1][k]
		if !ok || n.count != o.count || n.hash != o.hash {
			out = append(out, bucket{part: o.part, mod: mod, b: o.b, rows: max(o.count, n.count)})
		}
	}
	for k, n := range res[1] {
		if _, ok := res[0][k]; !ok {
			out = append(out, bucket{part: n.part, mod: mod, b: n.b, rows: n.count})
		}
	}
	return out, nil
}

// eachBucketRow reads one side's rows of the given buckets, compared columns in plan order,
// ordered by the portable key hash, and hands each to fn with its key hash (the row slice is
// reused between calls).
func (p *plan) eachBucketRow(ctx context.Context, new bool, units []bucket, fn func(kh uint64, row []any) error) error {
	side := p.side(new)
	d := side.Engine.Dialect()
	b := newBinder()
	byMod := map[uint64][]bucket{}
	for _, u := range units {
		byMod[u.mod] = append(byMod[u.mod], u)
	}
	values := make([]any, 0, len(units))
	seen := map[string]bool{}
	for _, u := range units {
		if k := valueKey(u.part); !seen[k] {
			seen[k] = true
			values = append(values, u.part)
		}
	}
	sel := make([]string, 0, len(p.compared)+1)
	outer := make([]string, 0, len(p.compared)+1)
	for i, c := range p.compared {
		name := d.Quote("__c" + strconv.Itoa(i))
		sel = append(sel, readExpr(d, c, new)+" AS "+name)
		outer = append(outer, name)
	}
	sel = append(sel, p.keyHash(d, new)+" AS "+d.Quote("__kh"))
	outer = append(outer, d.Quote("__kh"))
	pcol := "0"
	if p.part != nil {
		pcol = d.Quote("__c" + strconv.Itoa(p.partIndex()))
	}
	var conds []string
	mods := make([]uint64, 0, len(byMod))
	for m := range byMod {
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i] < mods[j] })
	for _, m := range mods {
		conds = append(conds, p.bucketCondition(d, b, pcol, d.Quote("__kh"), byMod[m]))
	}
	text := "SELECT " + strings.Join(outer, ", ") + " FROM (SELECT " + strings.Join(sel, ", ") + " FROM " +
		d.QuoteRelation(side.Relation) + where(p.filter(), p.partFilter(d, b, new, values), p.keyNotNull(d, new)) + ") AS t" +
		where(strings.Join(conds, " OR ")) + " ORDER BY " + d.Quote("__kh")
	q, args, err := b.expand(d, text)
	if err != nil {
		return err
	}
	err = side.Engine.Each(ctx, q, args, func(row []any) error {
		n := len(row) - 1
		return fn(tsql.AsUint64(row[n]), row[:n])
	})
	if err != nil {
		return fmt.Errorf("reconcile: read differing rows of %s: %w", side.Relation, err)
	}
	return nil
}
