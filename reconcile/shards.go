package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	tsql "trueup/sql"
)

// On a ClickHouse cluster both relations are Distributed tables over a local table on every
// node. When both are sharded by the same key, and that key is made of the diff's key columns, a
// row of one key is on the same shard on both sides: then the partition scan runs on each shard's
// local table (one replica per shard, all shards at once), the per-partition figures are summed
// over the shards, and the row-level comparison runs only on the (partition, shard) pairs whose
// figures differ, each on its shard. Partition.Shards names them. Otherwise (random placement, or
// different keys) the scans run through the Distributed tables as on one server, which aggregates
// every shard's rows. So does the row comparison of a partition where a differing shard holds a
// row its sharding key routes elsewhere (written to a local table past the Distributed one): a
// key's rows may then be on two shards.

// shardSide is one shard of both sides.
type shardSide struct {
	num  int // the shard's number in system.clusters
	node string
	plan *plan // the diff's plan with both sides on this shard's local tables
	// misplaced is, by side (old, new), the condition true of the local table's rows that the
	// sharding key routes to another shard (tsql.ShardSource.Misplaced).
	misplaced [2]string
	sums      [2]map[string]*summary
	parts     []*Partition // the differing partitions' figures on this shard
	differ    *differ
	fetched   int64
	rowDiffs  int
}

// shardsOf returns the shards to diff on, or nil when the diff reads the Distributed tables.
func (p *plan) shardsOf(ctx context.Context) ([]*shardSide, error) {
	if p.cross || p.fp != nil {
		return nil, nil
	}
	sr, ok := p.spec.Old.Engine.(tsql.ShardReader)
	if !ok {
		return nil, nil
	}
	var sides [2]*tsql.ShardLayout
	for s, new := range []bool{false, true} {
		sh, err := sr.ShardsOf(ctx, p.side(new).Relation)
		if err != nil || sh == nil {
			return nil, err
		}
		if !p.keyedBy(sh.KeyColumns, new) {
			return nil, nil
		}
		sides[s] = sh
	}
	if sides[0].Key != sides[1].Key || len(sides[0].Shards) != len(sides[1].Shards) {
		return nil, nil
	}
	var out []*shardSide
	for i, o := range sides[0].Shards {
		n := sides[1].Shards[i]
		if o.Node.Shard != n.Node.Shard || o.Misplaced == "" || n.Misplaced == "" {
			return nil, nil
		}
		sp := *p
		sp.spec.Old = Side{Engine: o.Engine, Relation: o.Relation, Target: p.spec.Old.Target}
		sp.spec.New = Side{Engine: o.Engine, Relation: n.Relation, Target: p.spec.New.Target}
		out = append(out, &shardSide{num: o.Node.Shard, node: o.Node.Addr, plan: &sp, misplaced: [2]string{o.Misplaced, n.Misplaced}})
	}
	return out, nil
}

// keyedBy reports whether the sharding key's columns are all key columns of the diff, by their
// names on the side.
func (p *plan) keyedBy(cols []string, new bool) bool {
	if len(cols) == 0 {
		return false
	}
	for _, c := range cols {
		if !slices.ContainsFunc(p.key, func(k pair) bool { return strings.EqualFold(k.side(new).Name, c) }) {
			return false
		}
	}
	return true
}

// summarizeShards runs the partition scan on every shard at once and sums the figures per
// partition: counts, NULL keys and measure totals add up, and so do the row-hash sums (mod 2^64).
func (p *plan) summarizeShards(ctx context.Context, shards []*shardSide) ([2]map[string]*summary, error) {
	out := [2]map[string]*summary{{}, {}}
	sums, err := onShards(shards, func(sh *shardSide) ([2]map[string]*summary, error) { return sh.plan.summarize(ctx) })
	if err != nil {
		return out, err
	}
	for i, sh := range shards {
		sh.sums = sums[i]
		for s := range 2 {
			for k, sm := range sh.sums[s] {
				t := out[s][k]
				if t == nil {
					t = &summary{value: sm.value, sums: make([]float64, len(sm.sums))}
					out[s][k] = t
				}
				t.count += sm.count
				t.nullKeys += sm.nullKeys
				t.hash += sm.hash
				for j, v := range sm.sums {
					t.sums[j] += v
				}
			}
		}
	}
	return out, nil
}

// rowDiffShards compares rows of the differing partitions only on the shards where they differ,
// all shards at once, and merges what each found into df; each partition learns its shards. A
// partition whose rows are not all where the sharding key puts them is compared through the
// Distributed tables instead.
func (p *plan) rowDiffShards(ctx context.Context, df *differ, shards []*shardSide, parts []*Partition) (int64, error) {
	for _, sh := range shards {
		sh.parts = nil
		for _, pt := range parts {
			k := valueKey(pt.value)
			o, n := sh.sums[0][k], sh.sums[1][k]
			if o == nil && n == nil || o != nil && n != nil && o.count == n.count && o.hash == n.hash {
				continue
			}
			if o == nil {
				o = &summary{}
			}
			if n == nil {
				n = &summary{}
			}
			pt.Shards = append(pt.Shards, sh.num)
			sh.parts = append(sh.parts, &Partition{Partition: pt.Partition, value: pt.value, Presence: PresenceBoth,
				OldCount: o.count, NewCount: n.count, OldNullKeys: o.nullKeys, NewNullKeys: n.nullKeys, oldSum: o.hash, newSum: n.hash})
		}
	}
	// A row written past the Distributed table to another shard's local table would read as
	// removed on one shard and added on the other (or, a key's second row, as added): where a
	// shard's differing partitions hold such rows on either side, those partitions are compared
	// through the Distributed tables, every shard's rows together.
	apart, err := onShards(shards, func(sh *shardSide) (bool, error) { return sh.holdsMisplaced(ctx) })
	if err != nil {
		return 0, err
	}
	whole := map[string]bool{}
	for i, sh := range shards {
		if apart[i] {
			for _, pt := range sh.parts {
				whole[valueKey(pt.value)] = true
			}
		}
	}
	var together []*Partition
	for _, pt := range parts {
		if whole[valueKey(pt.value)] {
			together = append(together, pt)
		}
	}
	for _, sh := range shards {
		sh.differ = nil
		sh.parts = slices.DeleteFunc(sh.parts, func(pt *Partition) bool { return whole[valueKey(pt.value)] })
		if len(sh.parts) > 0 {
			sh.differ = newDiffer(sh.plan)
			sh.differ.rows = df.rows
		}
	}
	fetched, err := onShards(shards, func(sh *shardSide) (int64, error) {
		if sh.differ == nil {
			return 0, nil
		}
		n, err := sh.plan.rowDiff(ctx, sh.differ, sh.parts, false)
		if err == nil {
			err = sh.differ.err
		}
		return n, err
	})
	if err != nil {
		return 0, err
	}
	var n int64
	for i, sh := range shards {
		n += fetched[i]
		if sh.differ == nil {
			continue
		}
		for k, pd := range sh.differ.parts {
			df.part(k).merge(pd, df.limit)
		}
	}
	if len(together) > 0 {
		m, err := p.rowDiff(ctx, df, together, false)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// onShards runs fn on every shard at once, and returns what each returned, by shard; an error
// names its shard.
func onShards[T any](shards []*shardSide, fn func(sh *shardSide) (T, error)) ([]T, error) {
	out := make([]T, len(shards))
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, sh := range shards {
		wg.Go(func() {
			out[i], errs[i] = fn(sh)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("shard %d (%s): %w", sh.num, sh.node, errs[i])
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// holdsMisplaced reports whether the shard's differing partitions hold, on either side, a row
// the sharding key routes to another shard.
func (sh *shardSide) holdsMisplaced(ctx context.Context) (bool, error) {
	if len(sh.parts) == 0 {
		return false, nil
	}
	p := sh.plan
	e := p.spec.Old.Engine
	d := e.Dialect()
	b := newBinder()
	values := partValues(sh.parts)
	side := func(new bool) string {
		return "SELECT 1 FROM " + d.QuoteRelation(p.side(new).Relation) +
			where(p.filter(), p.partFilter(d, b, new, values), "("+sh.misplaced[sideIndex(new)]+")") + " LIMIT 1"
	}
	q, args, err := b.expand(d, "SELECT count(*) FROM ("+side(false)+" UNION ALL "+side(true)+") AS m")
	if err != nil {
		return false, err
	}
	res, err := e.Query(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("reconcile: rows placed on another shard: %w", err)
	}
	return len(res.Rows) == 1 && tsql.AsInt64(res.Rows[0][0]) > 0, nil
}

// merge adds what another shard found in the same partition.
func (pd *partDiff) merge(o *partDiff, limit int) {
	pd.rows.add(o.rows)
	for i, c := range o.changedBy {
		pd.changedBy[i] += c
	}
	pd.fetchedOld += o.fetchedOld
	pd.fetchedNew += o.fetchedNew
	for s := range 2 {
		pd.sums[s] += o.sums[s]
		pd.nullSums[s] += o.nullSums[s]
		pd.nullRead[s] += o.nullRead[s]
	}
	for k := range o.dups {
		pd.dups[k] = true
	}
	pd.samples.Added = appendUpTo(pd.samples.Added, o.samples.Added, limit)
	pd.samples.Removed = appendUpTo(pd.samples.Removed, o.samples.Removed, limit)
	pd.samples.Changed = appendUpTo(pd.samples.Changed, o.samples.Changed, limit)
	pd.samples.Duplicates = appendUpTo(pd.samples.Duplicates, o.samples.Duplicates, limit)
}
