package reconcile

import (
	"context"
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
// every shard's rows.

// shardSide is one shard of both sides.
type shardSide struct {
	num      int // the shard's number in system.clusters
	node     string
	plan     *plan // the diff's plan with both sides on this shard's local tables
	sums     [2]map[string]*summary
	parts    []*Partition // the differing partitions' figures on this shard
	differ   *differ
	fetched  int64
	rowDiffs int
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
		if o.Node.Shard != n.Node.Shard {
			return nil, nil
		}
		sp := *p
		sp.spec.Old = Side{Engine: o.Engine, Relation: o.Relation, Target: p.spec.Old.Target}
		sp.spec.New = Side{Engine: o.Engine, Relation: n.Relation, Target: p.spec.New.Target}
		out = append(out, &shardSide{num: o.Node.Shard, node: o.Node.Addr, plan: &sp})
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
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, sh := range shards {
		wg.Go(func() {
			sums, err := sh.plan.summarize(ctx)
			if err != nil {
				err = fmt.Errorf("shard %d (%s): %w", sh.num, sh.node, err)
			}
			sh.sums, errs[i] = sums, err
		})
	}
	wg.Wait()
	out := [2]map[string]*summary{{}, {}}
	for i, sh := range shards {
		if errs[i] != nil {
			return out, errs[i]
		}
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
// all shards at once, and merges what each found into df; each partition learns its shards.
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
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, sh := range shards {
		if len(sh.parts) == 0 {
			continue
		}
		sh.differ = newDiffer(sh.plan)
		sh.differ.rows = df.rows
		wg.Go(func() {
			n, err := sh.plan.rowDiff(ctx, sh.differ, sh.parts, false)
			if err == nil {
				err = sh.differ.err
			}
			if err != nil {
				err = fmt.Errorf("shard %d (%s): %w", sh.num, sh.node, err)
			}
			sh.fetched, errs[i] = n, err
		})
	}
	wg.Wait()
	var n int64
	for i, sh := range shards {
		if errs[i] != nil {
			return n, errs[i]
		}
		n += sh.fetched
		if sh.differ == nil {
			continue
		}
		for k, pd := range sh.differ.parts {
			df.part(k).merge(pd, df.limit)
		}
	}
	return n, nil
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
