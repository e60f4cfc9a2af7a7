package sql

import (
	"strings"
	"testing"

	"trueup/internal/golden"
)

// TestClusterCreateStatementsGolden pins what CreateTable and CreateTableAs run on a cluster: the
// local tables and the Distributed table over them ON CLUSTER (ReplicatedMergeTree with
// replicas) or on every node without a ZooKeeper, sharded by the order key's first column; for
// CreateTableAs, the columns as the entry describes the query's and the fill through the
// Distributed table; and the drops that undo a create that failed.
func TestClusterCreateStatementsGolden(t *testing.T) {
	cols := []Column{{Name: "customer_id", Kind: TypeInt}, {Name: "region", Kind: TypeString}, {Name: "signup", Kind: TypeDate}}
	described := []string{"`order_id` Int64", "`order_date` Date", "`amount` Nullable(Decimal(18, 2))"}
	q := "SELECT order_id, order_date, sum(amount) AS amount FROM orders_raw WHERE order_date >= ? AND order_date < ? GROUP BY order_id, order_date"
	for _, tc := range []struct {
		file  string
		place clusterDDL
	}{
		{"cluster-create.clickhouse-18.16.golden.sql", clusterDDL{cluster: "trueup", database: "shop", onCluster: true, replicated: true}},
		{"cluster-create-no-zookeeper.clickhouse-18.16.golden.sql", clusterDDL{cluster: "trueup", database: "shop"}},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".golden.sql"), func(t *testing.T) {
			d := chDialect{version: parseVersion("18.16.1")}
			var b strings.Builder
			where := "on every node"
			if tc.place.onCluster {
				where = "once, from the entry node"
			}
			b.WriteString("-- create table customers, " + where + "\n")
			for _, s := range d.createDistributedStatements(tc.place, "customers", d.columnDefs(cols), "", []string{"customer_id"}, d.tableShardingKey([]string{"customer_id"})) {
				b.WriteString(s + ";\n")
			}
			b.WriteString("-- create table events (no order key), " + where + "\n")
			for _, s := range d.createDistributedStatements(tc.place, "events", d.columnDefs(cols[:1]), "", nil, d.tableShardingKey(nil)) {
				b.WriteString(s + ";\n")
			}
			b.WriteString("-- create table orders__v1 as a query, " + where + "\n")
			order := []string{"order_id", "order_date"}
			for _, s := range d.createDistributedStatements(tc.place, "orders__v1", described, "order_date", order, d.tableShardingKey(order)) {
				b.WriteString(s + ";\n")
			}
			b.WriteString("-- fill it through the Distributed table, from the entry node (then SYSTEM SYNC REPLICA on each replica)\n")
			b.WriteString(d.fillStatement(tc.place, "orders__v1", q) + ";\n")
			b.WriteString("-- undo a create or fill that failed, " + where + "\n")
			for _, s := range d.dropLikeStatements(tc.place, "orders__v1", "orders__v1_local") {
				b.WriteString(s + ";\n")
			}
			golden.Check(t, tc.file, b.String())
		})
	}
}

func TestInsertTarget(t *testing.T) {
	for in, want := range map[string]string{
		"INSERT INTO `orders__v2` (a, b) SELECT a, b FROM raw": "orders__v2",
		"insert into table shop.`my t` SELECT 1":               "shop.my t",
		"-- load\nINSERT INTO t VALUES (1)":                    "t",
		"INSERT INTO FUNCTION remote('h', db.t) SELECT 1":      "",
		"SELECT * FROM t":            "",
		"CREATE TABLE t AS SELECT 1": "",
	} {
		if got := insertTarget(in); got != want {
			t.Errorf("insertTarget(%q) = %q, want %q", in, got, want)
		}
	}
}
