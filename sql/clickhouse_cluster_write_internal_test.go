package sql

import (
	"strings"
	"testing"

	"trueup/internal/golden"
)

// TestClusterBackfillStatementsGolden pins what a backfill runs on a cluster that one server
// does not: the new version made like the live one ON CLUSTER (or on every node without a
// ZooKeeper), each shard's rows of a partition's query as its writer stages them (then one
// server's REPLACE PARTITION there), and the version's drop.
func TestClusterBackfillStatementsGolden(t *testing.T) {
	cols := []Column{{Name: "order_id", Type: "Int64"}, {Name: "order_date", Type: "Date"}, {Name: "amount", Type: "Nullable(Decimal(18, 2))"}}
	tail := "PARTITION BY toYYYYMM(order_date) ORDER BY order_id SETTINGS index_granularity = 8192"
	for _, tc := range []struct {
		file  string
		place clusterDDL
	}{
		{"cluster-backfill.clickhouse-18.16.golden.sql", clusterDDL{cluster: "trueup", database: "shop", onCluster: true, replicated: true}},
		{"cluster-backfill-no-zookeeper.clickhouse-18.16.golden.sql", clusterDDL{cluster: "trueup", database: "shop"}},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".golden.sql"), func(t *testing.T) {
			d := chDialect{version: parseVersion("18.16.1")}
			var b strings.Builder
			if tc.place.onCluster {
				b.WriteString("-- create like live, once, from the entry node\n")
			} else {
				b.WriteString("-- create like live, on every node\n")
			}
			for _, s := range d.createLikeStatements(tc.place, "orders__v2", "orders__v1_local", tail, "cityHash64(order_id)") {
				b.WriteString(s + ";\n")
			}
			q := "SELECT * FROM orders_raw WHERE order_date >= {start:Date} AND order_date < {end:Date}"
			for i, s := range []shardTarget{{Num: 1, lo: 0, hi: 1, total: 2}, {Num: 2, lo: 1, hi: 2, total: 2}} {
				b.WriteString("-- shard " + string(rune('1'+i)) + "'s rows of a partition, staged on its writer\n")
				b.WriteString(d.shardQuery(q, "cityHash64(order_id)", cols, s) + ";\n")
			}
			b.WriteString("-- drop the version\n")
			for _, s := range d.dropLikeStatements(tc.place, "orders__v2", "orders__v2_local") {
				b.WriteString(s + ";\n")
			}
			golden.Check(t, tc.file, b.String())
		})
	}
}

func TestEngineTail(t *testing.T) {
	for in, want := range map[string]string{
		"ReplicatedMergeTree('/clickhouse/tables/{shard}/db/t', '{replica}') PARTITION BY toYYYYMM(d) ORDER BY id SETTINGS index_granularity = 8192": "PARTITION BY toYYYYMM(d) ORDER BY id SETTINGS index_granularity = 8192",
		"MergeTree() PARTITION BY d ORDER BY (a, b) SETTINGS index_granularity = 8192":                                                               "PARTITION BY d ORDER BY (a, b) SETTINGS index_granularity = 8192",
		"MergeTree PARTITION BY d ORDER BY id": "PARTITION BY d ORDER BY id",
	} {
		if got := engineTail(in); got != want {
			t.Errorf("engineTail(%q) = %q, want %q", in, got, want)
		}
	}
}
