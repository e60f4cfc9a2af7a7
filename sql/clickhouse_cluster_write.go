package sql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"trueup/fault"
)

// A backfill's writes on a cluster target (issue #23). The tables written are a version's
// Distributed table and, under it, its local tables; every write goes to the local tables, shard
// by shard, on one replica of each (the first that answers), and ReplicatedMergeTree carries it
// to the others, which are then synced (SYSTEM SYNC REPLICA) so a read through the Distributed
// table right after, from whichever replica it picks, sees it.
//
// A partition's rows are computed per shard: on the shard's writer, the write's query (which
// reads the Distributed tables and views, so every shard's rows) filtered to the rows the
// version's sharding key routes to that shard — the remainder of the key by the shards' total
// weight, in the shard's slots, as a Distributed table places an insert — is staged in a plain
// MergeTree table beside the local table and swapped in by REPLACE PARTITION … FROM (one
// server's ReplacePartitions, on that node). Computing per shard rather than inserting once
// through a Distributed staging table costs a read of the query per shard, but each shard's
// write is then a unit of its own, on a known replica: what fails on one shard is redone on that
// shard alone, and nothing depends on which replica a Distributed insert chose.

// shardTarget is one shard of the cluster and the slots of its rows: a row whose sharding key
// modulo total is in [lo, hi) is the shard's.
type shardTarget struct {
	Num           int
	lo, hi, total int64
	nodes         []*chNode // its replicas, in order
}

// shardTargets lists the shards in the order a Distributed table numbers them, with their
// weights' slots.
func (c *chCluster) shardTargets(ctx context.Context) ([]shardTarget, error) {
	res, err := c.Query(ctx, "SELECT shard_num, any(shard_weight) FROM system.clusters WHERE cluster = ? GROUP BY shard_num ORDER BY shard_num", c.name)
	if err != nil {
		return nil, fmt.Errorf("shards of cluster %s: %w", c.name, err)
	}
	c.mu.Lock()
	nodes := append([]*chNode(nil), c.nodes...)
	c.mu.Unlock()
	var out []shardTarget
	var at int64
	for _, r := range res.Rows {
		s := shardTarget{Num: int(AsInt64(r[0])), lo: at}
		at += max(AsInt64(r[1]), 1)
		s.hi = at
		for _, n := range nodes {
			if n.Shard == s.Num {
				s.nodes = append(s.nodes, n)
			}
		}
		out = append(out, s)
	}
	for i := range out {
		out[i].total = at
	}
	return out, nil
}

// writer is the replica of s a write goes to: the first that answers now.
func (c *chCluster) writer(ctx context.Context, s shardTarget) (*chEngine, error) {
	var why []string
	for _, n := range s.nodes {
		c.probe(ctx, n)
		c.mu.Lock()
		eng, ok, e := n.eng, n.Reachable, n.Error
		c.mu.Unlock()
		if ok && eng != nil {
			return eng, nil
		}
		why = append(why, n.String()+": "+e)
	}
	return nil, fault.New(fault.Refused, "shard %d: %w: no replica answers (%s)", s.Num, ErrUnreachable, strings.Join(why, "; "))
}

// synced waits until every other replica of s that answers has what the writer wrote to local.
func (c *chCluster) synced(ctx context.Context, s shardTarget, writer *chEngine, locals ...string) error {
	if !c.replicated() {
		return nil
	}
	for _, n := range s.nodes {
		c.mu.Lock()
		eng, ok := n.eng, n.Reachable
		c.mu.Unlock()
		if eng == nil || eng == writer || !ok {
			continue // a replica down fetches the parts when it is back, and answers no read meanwhile
		}
		for _, l := range locals {
			if err := eng.Exec(ctx, "SYSTEM SYNC REPLICA "+eng.dialect.QuoteRelation(l)); err != nil {
				return fmt.Errorf("node %s: sync %s: %w", n.Node, l, err)
			}
		}
	}
	return nil
}

// distributed is what a Distributed table of the cluster reads: its local table and the
// expression it shards rows by ("" for none).
type distributed struct{ local, key string }

func (c *chCluster) distributed(ctx context.Context, table, op string) (distributed, error) {
	where, args := systemTableWhere(table, "name")
	res, err := c.tablesQuery(ctx, "SELECT engine, engine_full FROM system.tables WHERE "+where, args...)
	if err != nil {
		return distributed{}, fmt.Errorf("%s: %w", op, err)
	}
	if len(res.Rows) == 0 {
		return distributed{}, fault.New(fault.NotFound, "%s: there is no table %s", op, table)
	}
	if AsText(res.Rows[0][0]) != "Distributed" {
		return distributed{}, fault.New(fault.Refused, "%s: %s is not a Distributed table: on a cluster, trueup writes a version's Distributed table and the local tables under it", op, table)
	}
	full := AsText(res.Rows[0][1])
	d := distributed{local: distributedTable(full), key: distributedKey(full)}
	if d.local == "" {
		return distributed{}, fmt.Errorf("%s: no local table in %s", op, full)
	}
	if parts := splitRelation(table); len(parts) == 2 && !strings.Contains(d.local, ".") {
		d.local = parts[0] + "." + d.local
	}
	return d, nil
}

// routed is the condition that a row of cols (as the local table stores them) belongs to shard
// s under sharding key key. A table placed at random (rand(), or no key) is split by a hash of
// every column instead: each row still goes to exactly one shard, and a rerun to the same one.
func (d chDialect) routed(key string, cols []Column, s shardTarget) string {
	if k := strings.ReplaceAll(key, " ", ""); k == "" || k == "rand()" {
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.Name
		}
		key = d.RowHash(cols, HashOptions{Stored: names})
	}
	m := fmt.Sprintf("((%s) %% %d)", key, s.total)
	return fmt.Sprintf("%s >= %d AND %s < %d", m, s.lo, m, s.hi)
}

// shardQuery is query's rows that shard s holds, cast to the local table's columns first so the
// key hashes the values as they will be stored.
func (d chDialect) shardQuery(query, key string, cols []Column, s shardTarget) string {
	casts := make([]string, len(cols))
	for i, c := range cols {
		casts[i] = "CAST(" + d.Quote(c.Name) + " AS " + c.Type + ") AS " + d.Quote(c.Name)
	}
	return "SELECT * FROM (SELECT " + strings.Join(casts, ", ") + " FROM (" + query + ")) WHERE " + d.routed(key, cols, s)
}

// onShards runs fn on each shard's writer at once, then syncs the shard's other replicas' copies
// of locals; errors name their shard.
func (c *chCluster) onShards(ctx context.Context, shards []shardTarget, locals []string, fn func(s shardTarget, e *chEngine) error) error {
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, s := range shards {
		wg.Go(func() {
			e, err := c.writer(ctx, s)
			if err == nil {
				err = fn(s, e)
			}
			if err == nil {
				err = c.synced(ctx, s, e, locals...)
			}
			if err != nil {
				errs[i] = fmt.Errorf("shard %d: %w", s.Num, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *chCluster) ReplacePartition(ctx context.Context, table string, w Window, query string, args ...any) (int64, error) {
	rows, err := c.ReplacePartitions(ctx, table, []PartitionWrite{{Window: w, Query: query, Args: args}})
	if err != nil {
		return 0, err
	}
	return rows[0], nil
}

// ReplacePartitions replaces the windows on every shard (see the top of this file); it returns
// each window's rows over all shards. Each shard's partitions are replaced atomically, the
// shards one after another's commit: a reader may see one shard's new rows beside another's old
// ones until the last one is replaced, and a failure leaves the shards that were done done
// (rerunning redoes them to the same rows).
func (c *chCluster) ReplacePartitions(ctx context.Context, table string, writes []PartitionWrite) ([]int64, error) {
	shards, err := c.shardTargets(ctx)
	if err != nil {
		return nil, err
	}
	nums := make([]int, len(shards))
	for i, s := range shards {
		nums[i] = s.Num
	}
	return c.ReplacePartitionsOnShards(ctx, table, writes, nums)
}

// Sharded is implemented by an engine whose tables are split into shards, each replaced on its
// own (a ClickHouse cluster): a backfill checkpoints each partition per shard through it, so a
// resume writes only the shards a partition lacks.
type Sharded interface {
	// Shards lists the shards by number, in order.
	Shards(ctx context.Context) ([]int, error)
	// ReplacePartitionsOnShards is ReplacePartitions on the shards numbered only; the rows are
	// those shards'.
	ReplacePartitionsOnShards(ctx context.Context, table string, writes []PartitionWrite, shards []int) ([]int64, error)
}

// Shards lists the shard numbers of the cluster, in order.
func (c *chCluster) Shards(ctx context.Context) ([]int, error) {
	shards, err := c.shardTargets(ctx)
	nums := make([]int, len(shards))
	for i, s := range shards {
		nums[i] = s.Num
	}
	return nums, err
}

// ReplacePartitionsOnShards is ReplacePartitions on the shards numbered only: what a resume
// needs for a partition some of whose shards were done.
func (c *chCluster) ReplacePartitionsOnShards(ctx context.Context, table string, writes []PartitionWrite, only []int) ([]int64, error) {
	op := "replace partitions of " + table
	dist, err := c.distributed(ctx, table, op)
	if err != nil {
		return nil, err
	}
	all, err := c.shardTargets(ctx)
	if err != nil {
		return nil, err
	}
	var shards []shardTarget
	for _, s := range all {
		for _, n := range only {
			if s.Num == n {
				shards = append(shards, s)
			}
		}
	}
	var mu sync.Mutex
	rows := make([]int64, len(writes))
	err = c.onShards(ctx, shards, []string{dist.local}, func(s shardTarget, e *chEngine) error {
		cols, err := e.Columns(ctx, dist.local)
		if err != nil {
			return err
		}
		mine := make([]PartitionWrite, len(writes))
		for i, w := range writes {
			mine[i] = PartitionWrite{Window: w.Window, Query: e.dialect.shardQuery(w.Query, dist.key, cols, s), Args: w.Args}
		}
		got, err := e.ReplacePartitions(ctx, dist.local, mine)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for i, n := range got {
			rows[i] += n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return rows, nil
}

// sameSharding refuses a copy between Distributed tables that place rows differently: a shard's
// rows of one would not be the shard's rows of the other.
func sameSharding(op string, a, b distributed) error {
	if strings.ReplaceAll(a.key, " ", "") != strings.ReplaceAll(b.key, " ", "") {
		return fault.New(fault.Refused, "%s: the tables are sharded differently (%s, %s): their shards' rows cannot be copied shard by shard", op, a.key, b.key)
	}
	return nil
}

// CopyPartitions copies src's partitions outside the windows into dst shard by shard, from
// src's local table into dst's on each shard's writer (one server's CopyPartitions there).
func (c *chCluster) CopyPartitions(ctx context.Context, dst, src string, column string, exclude []Window) error {
	op := "copy partitions of " + src + " into " + dst
	to, err := c.distributed(ctx, dst, op)
	if err != nil {
		return err
	}
	from, err := c.distributed(ctx, src, op)
	if err != nil {
		return err
	}
	if err := sameSharding(op, to, from); err != nil {
		return err
	}
	shards, err := c.shardTargets(ctx)
	if err != nil {
		return err
	}
	err = c.onShards(ctx, shards, []string{to.local}, func(_ shardTarget, e *chEngine) error {
		return e.CopyPartitions(ctx, to.local, from.local, column, exclude)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// CarryPartitions carries each partition shard by shard, between the local tables of the
// Distributed tables named (one server's CarryPartitions on each shard's writer): a merge tells
// rows apart within a shard, which holds since both tables shard rows alike.
func (c *chCluster) CarryPartitions(ctx context.Context, carries []Carry) error {
	if len(carries) == 0 {
		return nil
	}
	local, into, err := c.localCarries(ctx, carries)
	if err != nil {
		return err
	}
	shards, err := c.shardTargets(ctx)
	if err != nil {
		return err
	}
	if err := c.onShards(ctx, shards, into, func(_ shardTarget, e *chEngine) error {
		return e.CarryPartitions(ctx, local)
	}); err != nil {
		return fmt.Errorf("carry partitions: %w", err)
	}
	return nil
}

// MergeGains counts shard by shard, summed: a merge is carried so (Engine.MergeGains).
func (c *chCluster) MergeGains(ctx context.Context, carries []Carry) ([]int64, error) {
	out := make([]int64, len(carries))
	if len(carries) == 0 {
		return out, nil
	}
	local, into, err := c.localCarries(ctx, carries)
	if err != nil {
		return nil, err
	}
	shards, err := c.shardTargets(ctx)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	err = c.onShards(ctx, shards, into, func(_ shardTarget, e *chEngine) error {
		gains, err := mergeGains(ctx, e, local)
		mu.Lock()
		defer mu.Unlock()
		for i, g := range gains {
			out[i] += g
		}
		return err
	})
	return out, err
}

// localCarries are carries between the local tables of the Distributed tables they name, and
// the local tables carried into.
func (c *chCluster) localCarries(ctx context.Context, carries []Carry) ([]Carry, []string, error) {
	local := make([]Carry, len(carries))
	var into []string
	for i, cr := range carries {
		op := "carry " + cr.From + " into " + cr.Into
		to, err := c.distributed(ctx, cr.Into, op)
		if err != nil {
			return nil, nil, err
		}
		from, err := c.distributed(ctx, cr.From, op)
		if err != nil {
			return nil, nil, err
		}
		if err := sameSharding(op, to, from); err != nil {
			return nil, nil, err
		}
		local[i] = cr
		local[i].Into, local[i].From = to.local, from.local
		into = append(into, to.local)
	}
	return local, into, nil
}

// engineTail is what follows the engine and its arguments in a MergeTree table's engine_full:
// its PARTITION BY, ORDER BY, … SETTINGS, which a table made like it repeats with an engine of
// its own.
func engineTail(engineFull string) string {
	toks := Lex(engineFull)
	if len(toks) < 2 || toks[1].Text != "(" {
		if len(toks) < 2 {
			return ""
		}
		return engineFull[toks[1].Pos:]
	}
	depth := 0
	for i, t := range toks[1:] {
		switch t.Text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				if i+2 < len(toks) {
					return engineFull[toks[i+2].Pos:]
				}
				return ""
			}
		}
	}
	return ""
}

// createLikeStatements create table (a Distributed table) and its local tables table_local on
// every node like src's local tables srcLocal, whose engine_full's tail (engineTail) is tail,
// sharded by key.
func (d chDialect) createLikeStatements(x clusterDDL, table, srcLocal, tail, key string) []string {
	on := ""
	if x.onCluster {
		on = " ON CLUSTER " + d.Quote(x.cluster)
	}
	lit := func(s string) string { v, _ := d.Literal(String(s)); return v }
	localName := table + "_local"
	local := d.QuoteRelation(x.database + "." + localName)
	engine := "MergeTree()"
	if x.replicated {
		engine = "ReplicatedMergeTree(" + lit("/clickhouse/tables/{shard}/"+x.database+"/"+localName) + ", '{replica}')"
	}
	args := lit(x.cluster) + ", " + lit(x.database) + ", " + lit(localName)
	if key != "" {
		args += ", " + key
	}
	return []string{
		"CREATE TABLE " + local + on + " AS " + d.QuoteRelation(x.database+"."+srcLocal) + " ENGINE = " + engine + " " + tail,
		"CREATE TABLE " + d.QuoteRelation(x.database+"."+table) + on + " AS " + local + " ENGINE = Distributed(" + args + ")",
	}
}

// dropLikeStatements drop a Distributed table and its local tables on every node.
func (d chDialect) dropLikeStatements(x clusterDDL, table, local string) []string {
	on := ""
	if x.onCluster {
		on = " ON CLUSTER " + d.Quote(x.cluster)
	}
	return []string{
		"DROP TABLE IF EXISTS " + d.QuoteRelation(x.database+"."+table) + on,
		"DROP TABLE IF EXISTS " + d.QuoteRelation(x.database+"."+local) + on,
	}
}

// runDDL runs stmts where x says: once from the entry (ON CLUSTER, each waiting for every node),
// else on every node.
func (c *chCluster) runDDL(ctx context.Context, nodes []*chNode, x clusterDDL, stmts []string) error {
	if x.onCluster {
		for _, s := range stmts {
			if err := c.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}
	return onEvery(ctx, nodes, stmts)
}

// CreateTableLike creates table as a Distributed table over local tables table_local on every
// node, laid out like those of src (a Distributed table): the same columns, partition key,
// ordering and sharding key, ReplicatedMergeTree where the cluster has replicas. Every node must
// answer and hold neither table; nothing is left when it fails.
func (c *chCluster) CreateTableLike(ctx context.Context, table, src string) error {
	op := "create " + table + " like " + src
	from, err := c.distributed(ctx, src, op)
	if err != nil {
		return err
	}
	where, args := systemTableWhere(from.local, "name")
	res, err := c.tablesQuery(ctx, "SELECT engine_full FROM system.tables WHERE "+where, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if len(res.Rows) == 0 {
		return fault.New(fault.NotFound, "%s: there is no table %s", op, from.local)
	}
	x := c.ddlPlace()
	srcLocal := from.local
	if parts := splitRelation(srcLocal); len(parts) == 2 {
		srcLocal = parts[1]
	}
	return c.createDistributed(ctx, op, table, c.dialect.createLikeStatements(x, table, srcLocal, engineTail(AsText(res.Rows[0][0])), from.key))
}

// DropTable drops table on every node, and its local tables when it is a Distributed table (or,
// when there is no table of that name, the local tables table_local a create that stopped
// part-way left). Every node must answer.
func (c *chCluster) DropTable(ctx context.Context, table string) error {
	op := "drop " + table
	local := table + "_local"
	if dist, err := c.distributed(ctx, table, op); err == nil {
		local = dist.local
		if parts := splitRelation(local); len(parts) == 2 {
			local = parts[1]
		}
	} else if fault.Of(err) != fault.NotFound && fault.Of(err) != fault.Refused {
		return err
	}
	nodes, err := c.ready(ctx, op)
	if err != nil {
		return err
	}
	name := table
	if parts := splitRelation(table); len(parts) == 2 {
		name = parts[1]
	}
	x := c.ddlPlace()
	return c.runDDL(ctx, nodes, x, c.dialect.dropLikeStatements(x, name, local))
}

// dropStagingTables drops, on every node, the staging tables left beside table's local tables
// (and beside table on the entry), naming each with its node.
func (c *chCluster) dropStagingTables(ctx context.Context, table string) ([]string, error) {
	local := table + "_local"
	if dist, err := c.distributed(ctx, table, "staging tables of "+table); err == nil {
		local = dist.local
	}
	nodes, err := c.ready(ctx, "drop the staging tables of "+table)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var out []string
	err = each(nodes, func(n *chNode) error {
		left, err := DropStagingTables(ctx, n.eng, local)
		mu.Lock()
		defer mu.Unlock()
		for _, l := range left {
			out = append(out, "node "+n.Node.String()+": "+l)
		}
		return err
	})
	return out, err
}

// Partitioning of a Distributed table is its local tables' (the Distributed table has no
// partition key of its own): the key as every node's local table declares it and, for a table
// with none, its size over all shards (one replica of each).
func (c *chCluster) Partitioning(ctx context.Context, table, column string) (Partitioning, error) {
	dist, err := c.distributed(ctx, table, "partitioning of "+table)
	if fault.Of(err) == fault.Refused {
		return c.chEngine.Partitioning(ctx, table, column) // not a Distributed table
	}
	if err != nil {
		return Partitioning{}, err
	}
	p, err := c.chEngine.Partitioning(ctx, dist.local, column)
	if err != nil || !p.Whole {
		return p, err
	}
	shards, err := c.shardTargets(ctx)
	if err != nil {
		return Partitioning{}, err
	}
	p.Rows, p.Bytes = 0, 0
	for _, s := range shards {
		e, err := c.writer(ctx, s)
		if err != nil {
			return Partitioning{}, fmt.Errorf("partitioning of %s: %w", table, err)
		}
		q, args := e.dialect.sizeQuery(dist.local)
		res, err := e.Query(ctx, q, args...)
		if err != nil {
			return Partitioning{}, fmt.Errorf("partitioning of %s: %w", table, err)
		}
		if len(res.Rows) > 0 {
			p.Rows += AsInt64(res.Rows[0][0])
			p.Bytes += AsInt64(res.Rows[0][1])
		}
	}
	return p, nil
}
