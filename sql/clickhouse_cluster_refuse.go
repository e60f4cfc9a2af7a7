package sql

import (
	"context"
	"trueup/fault"
)

// What a cluster target cannot do yet (issue #23). Each of these writes to the one server it
// runs on, which on a cluster would create, fill or move a table on the entry node alone and
// leave the other nodes as they were: an adopt (per node), plain tables from a query or a column
// list. They refuse, naming the operation, instead of doing that quietly. A version of a logical
// table is created with Cluster.CreateVersion or CreateTableLike; a backfill's writes go shard by
// shard (clickhouse_cluster_write.go); reads, rules, diffs and RepointViews work on a cluster.

func clusterRefusal(op string) error {
	return fault.New(fault.Refused, "%s: not supported on a ClickHouse cluster target yet: it would change the entry node only", op)
}

func (c *chCluster) CreateTable(context.Context, string, []Column, string, []string) error {
	return clusterRefusal("create table")
}

func (c *chCluster) CreateTableAs(context.Context, string, string, []string, string, ...any) error {
	return clusterRefusal("create table as")
}

func (c *chCluster) AdoptRefusal(context.Context, string) (string, error) {
	return "adopting a table on a ClickHouse cluster (its local and Distributed tables, on every node) is not supported yet", nil
}

func (c *chCluster) AdoptTable(_ context.Context, table, _ string) error {
	return clusterRefusal("adopt " + table)
}

func (c *chCluster) FinishAdopt(_ context.Context, table, _ string) error {
	return clusterRefusal("finish adopting " + table)
}

func (c *chCluster) UnadoptTable(_ context.Context, table, _ string) error {
	return clusterRefusal("unadopt " + table)
}
