package sql

import (
	"context"
	"trueup/fault"
)

// What a cluster target cannot do yet (issue #23). Each of these writes to the one server it
// runs on, which on a cluster would create and fill a table on the entry node alone and leave
// the other nodes as they were: plain tables from a query or a column list. They refuse, naming
// the operation, instead of doing that quietly. A version of a logical table is created with
// Cluster.CreateVersion or CreateTableLike; a backfill's writes go shard by shard
// (clickhouse_cluster_write.go), adopt node by node (clickhouse_cluster_adopt.go); reads, rules,
// diffs and RepointViews work on a cluster.

func clusterRefusal(op string) error {
	return fault.New(fault.Refused, "%s: not supported on a ClickHouse cluster target yet: it would change the entry node only", op)
}

func (c *chCluster) CreateTable(context.Context, string, []Column, string, []string) error {
	return clusterRefusal("create table")
}

func (c *chCluster) CreateTableAs(context.Context, string, string, []string, string, ...any) error {
	return clusterRefusal("create table as")
}
