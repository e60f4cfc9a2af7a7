package sql

import (
	"context"
	"trueup/fault"
)

// What a cluster target cannot do yet (issue #23). Each of these writes to the one server it
// runs on, which on a cluster would create, fill, move or drop a table on the entry node alone
// and leave the other nodes as they were: a backfill's staging and partition replaces (those go
// per shard, to each shard's local table), plain tables. They refuse, naming the operation, instead
// of doing that quietly. A version of a logical table is created with Cluster.CreateVersion;
// reads, rules, diffs, adopt and RepointViews work on a cluster.

func clusterRefusal(op string) error {
	return fault.New(fault.Refused, "%s: not supported on a ClickHouse cluster target yet: it would change the entry node only", op)
}

func (c *chCluster) CreateTable(context.Context, string, []Column, string, []string) error {
	return clusterRefusal("create table")
}

func (c *chCluster) CreateTableAs(context.Context, string, string, []string, string, ...any) error {
	return clusterRefusal("create table as")
}

func (c *chCluster) CreateTableLike(_ context.Context, table, _ string) error {
	return clusterRefusal("create table " + table)
}

func (c *chCluster) ReplacePartition(_ context.Context, table string, _ Window, _ string, _ ...any) (int64, error) {
	return 0, clusterRefusal("replace a partition of " + table)
}

func (c *chCluster) ReplacePartitions(_ context.Context, table string, _ []PartitionWrite) ([]int64, error) {
	return nil, clusterRefusal("replace partitions of " + table)
}

func (c *chCluster) CopyPartitions(_ context.Context, dst, _ string, _ string, _ []Window) error {
	return clusterRefusal("copy partitions into " + dst)
}

func (c *chCluster) CarryPartitions(context.Context, []Carry) error {
	return clusterRefusal("carry partitions")
}

func (c *chCluster) DropTable(_ context.Context, table string) error {
	return clusterRefusal("drop " + table)
}
