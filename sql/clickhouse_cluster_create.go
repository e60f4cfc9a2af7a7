package sql

import (
	"context"
	"fmt"
	"strings"

	"trueup/fault"
)

// Plain tables on a cluster target (issue #23): a table t that CreateTable or CreateTableAs
// makes is, like a version (ClusterTable), local tables t_local on every node (ReplicatedMergeTree
// where the shards have replicas, made ON CLUSTER when the nodes share a ZooKeeper, else node by
// node) and a Distributed table t over them, which every read and write of t goes through.
//
// Its rows are sharded by a hash of the first column of its order key (cityHash64(first)): rows
// that share it — an order's events, a customer — are on one shard, so a diff or a rule keyed by
// that column can be computed shard by shard (ShardsOf), and a backfill's per-shard write routes
// rows by it (routed). The first column alone rather than the whole order key, so that any key
// starting with it qualifies. A table with no order key is placed at random (rand()), which a
// per-shard write splits by a hash of every column instead.

// tableShardingKey is the sharding key of a table ordered by order (see the top of this file).
func (d chDialect) tableShardingKey(order []string) string {
	return d.shardingKey(order[:min(1, len(order))])
}

// CreateTable creates table on the cluster: table_local on every node, and the Distributed table
// over them. Every node must answer and hold neither; nothing is left when it fails.
func (c *chCluster) CreateTable(ctx context.Context, table string, cols []Column, partition string, order []string) error {
	x := c.ddlPlace()
	return c.createDistributed(ctx, "create "+table, table,
		c.dialect.createDistributedStatements(x, table, c.dialect.columnDefs(cols), partition, order, c.dialect.tableShardingKey(order)))
}

// CreateTableAs creates table on the cluster as CreateTable does, with the columns of query's
// rows as the entry node describes them (their types as written there, as one server's
// CREATE TABLE … AS SELECT keeps them), and fills it with query's rows through the Distributed
// table: the insert returns once every shard holds its rows (the cluster connection's
// insert_distributed_sync) and every other replica has them (Exec). When the fill fails, the
// tables are dropped again on every node.
func (c *chCluster) CreateTableAs(ctx context.Context, table, partition string, order []string, query string, args ...any) error {
	op := "create " + table + " as a query"
	cols, err := c.Describe(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defs := make([]string, len(cols))
	for i, col := range cols {
		defs[i] = c.dialect.Quote(col.Name) + " " + col.Type
	}
	x := c.ddlPlace()
	stmts := c.dialect.createDistributedStatements(x, table, defs, partition, order, c.dialect.tableShardingKey(order))
	if err := c.createDistributed(ctx, op, table, stmts); err != nil {
		return err
	}
	if err := c.Exec(ctx, c.dialect.fillStatement(x, table, query), args...); err != nil {
		nodes, rerr := c.ready(ctx, op)
		if rerr != nil {
			return fmt.Errorf("%s: %w; %s and %s_local are left on the nodes that answer, not every node does: %v", op, err, table, table, rerr)
		}
		return c.undoCreate(ctx, op, nodes, table, err)
	}
	return nil
}

// fillStatement inserts query's rows into the Distributed table table.
func (d chDialect) fillStatement(x clusterDDL, table, query string) string {
	// the query on lines of its own: a comment ending it must not swallow the wrapper
	return "INSERT INTO " + d.QuoteRelation(x.database+"."+table) + " SELECT * FROM (\n" + query + "\n)"
}

// Insert inserts rows into table through the entry node; into a Distributed table of the
// cluster, it returns once every shard holds its rows (insert_distributed_sync) and every replica
// of each has them, so that the next read sees them from whichever replica it picks. A table
// that is not Distributed is written on the entry node alone, as on one server.
func (c *chCluster) Insert(ctx context.Context, table string, cols []string, rows [][]any) error {
	if err := c.chEngine.Insert(ctx, table, cols, rows); err != nil {
		return err
	}
	dist, err := c.distributed(ctx, table, "insert into "+table)
	if fault.Of(err) == fault.Refused {
		return nil
	}
	if err != nil {
		return err
	}
	return c.syncReplicas(ctx, dist.local)
}

// Exec runs query through the entry node. An INSERT into a Distributed table of the cluster
// (a pipeline's own INSERT … SELECT) returns, as Insert does, once every replica has the rows.
func (c *chCluster) Exec(ctx context.Context, query string, args ...any) error {
	if err := c.chEngine.Exec(ctx, query, args...); err != nil {
		return err
	}
	table := insertTarget(query)
	if table == "" || !c.replicated() {
		return nil
	}
	dist, err := c.distributed(ctx, table, "insert into "+table)
	if k := fault.Of(err); k == fault.Refused || k == fault.NotFound {
		return nil // not a Distributed table (or a table function): nothing to sync
	}
	if err != nil {
		return err
	}
	return c.syncReplicas(ctx, dist.local)
}

// insertTarget is the table an INSERT INTO statement writes ("db.table" when it names the
// database), "" for any other statement.
func insertTarget(query string) string {
	toks := Lex(query)
	word := func(i int, w string) bool {
		return i < len(toks) && !toks[i].Quoted() && strings.EqualFold(toks[i].Text, w)
	}
	if !word(0, "INSERT") || !word(1, "INTO") {
		return ""
	}
	i := 2
	if word(i, "TABLE") {
		i++
	}
	if word(i, "FUNCTION") || i >= len(toks) {
		return ""
	}
	name := toks[i].Ident()
	if i+2 < len(toks) && toks[i+1].Text == "." {
		name += "." + toks[i+2].Ident()
	}
	return name
}

// syncReplicas waits until every replica that answers of every shard has the rows written to
// the local table local (on one replica of each shard, by a Distributed table).
func (c *chCluster) syncReplicas(ctx context.Context, local string) error {
	if !c.replicated() {
		return nil
	}
	shards, err := c.shardTargets(ctx)
	if err != nil {
		return err
	}
	for _, s := range shards {
		if err := c.synced(ctx, s, nil, local); err != nil {
			return fmt.Errorf("shard %d: %w", s.Num, err)
		}
	}
	return nil
}
