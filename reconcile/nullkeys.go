package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	tsql "trueup/sql"
)

// settleNullKeys looks at the rows with a NULL key of partitions where the row comparison found
// no difference but the checksums differ (a change within tolerance): those rows cannot be
// matched by key, so the partition is unchanged only if they are the same rows on both sides.
func (p *plan) settleNullKeys(ctx context.Context, parts []*Partition) error {
	open, values := partsWhere(parts, func(pt *Partition) bool {
		return pt.Rows != nil && pt.Rows.Zero() && pt.OldCount == pt.NewCount && pt.OldNullKeys > 0 && pt.OldNullKeys == pt.NewNullKeys
	})
	sums, err := p.nullKeySums(ctx, values, p.rowHash)
	if err != nil {
		return err
	}
	for _, pt := range open {
		k := valueKey(pt.value)
		pt.nullKeysAlike = sums[0][k] == sums[1][k]
	}
	return nil
}

// sumNullKeys sums the row hashes of the rows with a NULL key apart, as accountsFor needs them,
// for the partitions where the wide join did not read them all: ClickHouse 18.16's FULL JOIN
// leaves out the rows of its right side whose key has a NULL (the summary counts them). One
// grouped scan of those partitions' rows with a NULL key per side.
func (p *plan) sumNullKeys(ctx context.Context, df *differ, parts []*Partition) error {
	open, values := partsWhere(parts, func(pt *Partition) bool {
		return df.part(valueKey(pt.value)).nullRead != [2]int64{pt.OldNullKeys, pt.NewNullKeys}
	})
	sums, err := p.nullKeySums(ctx, values, p.summaryHash)
	if err != nil {
		return err
	}
	for _, pt := range open {
		k := valueKey(pt.value)
		df.part(k).nullSums = [2]uint64{sums[0][k], sums[1][k]}
	}
	return nil
}

// partsWhere is the partitions of parts that keep takes, and their values (as partFilter takes
// them): the partitions a pass over the rows with a NULL key reads.
func partsWhere(parts []*Partition, keep func(*Partition) bool) ([]*Partition, []any) {
	var open []*Partition
	var values []any
	for _, pt := range parts {
		if keep(pt) {
			open = append(open, pt)
			values = append(values, pt.value)
		}
	}
	return open, values
}

// nullKeySums is, per side and partition (by valueKey), the sum of hash over the rows whose key
// has a NULL in the given partitions. With no partitions it reads nothing and the sums are empty.
func (p *plan) nullKeySums(ctx context.Context, values []any, hash func(tsql.Dialect, bool) string) ([2]map[string]uint64, error) {
	var sums [2]map[string]uint64
	if len(values) == 0 {
		return sums, nil
	}
	err := onBothSides(func(s int, new bool) error {
		side := p.side(new)
		d := side.Engine.Dialect()
		b := newBinder()
		sel, group := "", ""
		if p.part != nil {
			sel = p.partExpr(d, new) + ", "
			group = " GROUP BY " + p.partExpr(d, new)
		}
		text := "SELECT " + sel + d.HashSum(hash(d, new)) + " FROM " + d.QuoteRelation(side.Relation) +
			where(p.filter(), p.partFilter(d, b, new, values), p.keyIsNull(d, new)) + group
		q, args, err := b.expand(d, text)
		if err != nil {
			return err
		}
		m := map[string]uint64{}
		sums[s] = m
		return side.Engine.Each(ctx, q, args, func(row []any) error {
			var v any
			if p.part != nil {
				v = p.partOf(row[0])
			}
			m[valueKey(v)] = tsql.AsUint64(row[len(row)-1])
			return nil
		})
	})
	if err != nil {
		return sums, fmt.Errorf("reconcile: rows with a NULL key of %s and %s: %w", p.spec.Old.Relation, p.spec.New.Relation, err)
	}
	return sums, nil
}

// sampleNullKeys lists, in the samples of the partitions that differ, the rows whose key has a
// NULL that one side holds and the other does not (as many times): such rows cannot be matched
// by key, so they are matched whole, by row hash, and shown as removed or added like any other
// row. They stay counted apart (old_null_keys, new_null_keys; null_key_added and
// null_key_removed in the row counts), not in the rows added and removed.
func (p *plan) sampleNullKeys(ctx context.Context, parts []*Partition) (int64, error) {
	open, values := partsWhere(parts, func(pt *Partition) bool {
		return !(pt.ChecksumMatch || pt.nullKeysAlike || pt.OldNullKeys+pt.NewNullKeys == 0 || (p.part != nil && pt.value == nil))
	})
	if len(open) == 0 {
		return 0, nil
	}
	type group struct {
		count [2]int64
		vals  [2][]any
	}
	var groups [2]map[string]*group // per side: partition and row hash → rows
	var read [2]int64
	err := onBothSides(func(s int, new bool) error {
		side := p.side(new)
		d := side.Engine.Dialect()
		b := newBinder()
		sel := make([]string, 0, len(p.compared)+3)
		pcol := "0"
		if p.part != nil {
			pcol = p.partExpr(d, new)
		}
		sel = append(sel, pcol, d.ToText(p.rowHash(d, new)), "count(*)")
		// a whole relation groups by the hash alone: GROUP BY 0 would be a column position
		groupBy := p.rowHash(d, new)
		if p.part != nil {
			groupBy = pcol + ", " + groupBy
		}
		for _, c := range p.compared {
			sel = append(sel, "min("+p.selectExpr(d, c, new)+")")
		}
		text := "SELECT " + strings.Join(sel, ", ") + " FROM " + d.QuoteRelation(side.Relation) +
			where(p.filter(), p.partFilter(d, b, new, values), p.keyIsNull(d, new)) +
			" GROUP BY " + groupBy
		q, args, err := b.expand(d, text)
		if err != nil {
			return err
		}
		m := map[string]*group{}
		groups[s] = m
		return side.Engine.Each(ctx, q, args, func(row []any) error {
			read[s]++
			var v any
			if p.part != nil {
				v = p.partOf(row[0])
			}
			m[valueKey(v)+"\x1e"+tsql.AsText(row[1])] = &group{count: [2]int64{tsql.AsInt64(row[2])}, vals: [2][]any{append([]any(nil), row[3:]...)}}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("reconcile: rows with a NULL key of %s and %s: %w", p.spec.Old.Relation, p.spec.New.Relation, err)
	}
	all := groups[0]
	for k, g := range groups[1] {
		if o := all[k]; o != nil {
			o.count[1], o.vals[1] = g.count[0], g.vals[0]
		} else {
			all[k] = &group{count: [2]int64{0, g.count[0]}, vals: [2][]any{nil, g.vals[0]}}
		}
	}
	df := newDiffer(p)
	byPart := map[string]*Partition{}
	for _, pt := range open {
		byPart[valueKey(pt.value)] = pt
	}
	limit := p.spec.samples()
	for _, k := range slices.Sorted(maps.Keys(all)) {
		g := all[k]
		pt := byPart[strings.SplitN(k, "\x1e", 2)[0]]
		if pt == nil || g.count[0] == g.count[1] {
			continue
		}
		if pt.Samples == nil {
			pt.Samples = &Samples{}
		}
		new := g.count[1] > g.count[0]
		list := &pt.Samples.Removed
		vals := g.vals[0]
		if pt.Rows == nil {
			pt.Rows = &RowCounts{}
		}
		surplus := max(g.count[0], g.count[1]) - min(g.count[0], g.count[1])
		counted := &pt.Rows.NullKeyRemoved
		if new {
			list, vals, counted = &pt.Samples.Added, g.vals[1], &pt.Rows.NullKeyAdded
		}
		*counted += surplus
		stream := df.stream
		if min(g.count[0], g.count[1]) > 0 {
			stream = df.streamSurplus
		}
		if stream(new, vals, surplus); df.err != nil {
			return 0, df.err
		}
		for range surplus {
			if len(*list) >= limit {
				break
			}
			*list = append(*list, Row{Partition: pt.Partition, Key: df.keyOf(vals), Values: df.valuesOf(vals, new)})
		}
	}
	for _, pt := range open {
		if pt.Samples != nil {
			pt.Samples.setPartition(pt.Partition)
		}
	}
	return read[0] + read[1], nil
}
