package sql

import (
	"strings"
	"testing"

	"trueup/internal/golden"
)

// TestClusterStatementsGolden pins what a cluster publish of orders v2 runs: its tables ON
// CLUSTER (ReplicatedMergeTree with replicas, MergeTree per node without a ZooKeeper), then on
// every node the repoint's three phases, as each server version gets them: 18.16 prepares helper
// views and switches by RENAME; 19.5 and later switch by CREATE OR REPLACE VIEW, which the 18.16
// test cluster cannot run.
func TestClusterStatementsGolden(t *testing.T) {
	table := ClusterTable{Name: "orders", Version: 2, Partition: "d", Order: []string{"id"},
		Columns: []Column{{Name: "id", Kind: TypeInt, Type: "UInt64"}, {Name: "d", Kind: TypeDate}, {Name: "amount", Kind: TypeDecimal, Type: "Decimal(18, 2)", Nullable: true}}}
	points := []ViewPoint{{View: "orders", Table: "orders__v2"}}
	for _, tc := range []struct {
		file    string
		version string
		place   clusterDDL
	}{
		{"cluster.clickhouse-18.16.golden.sql", "18.16.1", clusterDDL{cluster: "trueup", database: "shop", onCluster: true, replicated: true}},
		{"cluster-no-zookeeper.clickhouse-18.16.golden.sql", "18.16.1", clusterDDL{cluster: "trueup", database: "shop"}},
		{"cluster.clickhouse-24.8.golden.sql", "24.8.4.13", clusterDDL{cluster: "trueup", database: "shop", onCluster: true, replicated: true}},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".golden.sql"), func(t *testing.T) {
			d := chDialect{version: parseVersion(tc.version)}
			var b strings.Builder
			where := "-- on every node\n"
			if tc.place.onCluster {
				where = "-- once, from the entry node\n"
			}
			b.WriteString(where)
			for _, s := range d.createDistributedStatements(tc.place, table.Distributed(), d.columnDefs(table.Columns), table.Partition, table.Order, d.shardingKey([]string{"id"})) {
				b.WriteString(s + ";\n")
			}
			prepare, swap, cleanup := d.repointPhases(points, map[string]bool{"orders": true}, "abc")
			for _, phase := range []struct {
				name  string
				stmts []string
			}{{"prepare", prepare}, {"switch", swap}, {"clean up", cleanup}} {
				b.WriteString("-- repoint, on every node at once: " + phase.name + "\n")
				for _, s := range phase.stmts {
					b.WriteString(s + ";\n")
				}
			}
			b.WriteString("-- undo a failed create\n")
			for _, s := range d.dropLikeStatements(tc.place, table.Distributed(), table.Local()) {
				b.WriteString(s + ";\n")
			}
			golden.Check(t, tc.file, b.String())
		})
	}
}

func TestSplitCluster(t *testing.T) {
	for _, tc := range []struct{ in, dsn, cluster, err string }{
		{"clickhouse://a:1,b:2/db?cluster=trueup", "clickhouse://a:1,b:2/db", "trueup", ""},
		{"clickhouse://a:1/db?cluster=c&dial_timeout=2s", "clickhouse://a:1/db?dial_timeout=2s", "c", ""},
		{"clickhouse://a:1/db?dial_timeout=2s", "clickhouse://a:1/db?dial_timeout=2s", "", ""},
		{"clickhouse://a:1/db", "clickhouse://a:1/db", "", ""},
		{"clickhouse://a:1/db?cluster=", "", "", "names no cluster"},
	} {
		dsn, cluster, err := splitCluster(tc.in)
		if dsn != tc.dsn || cluster != tc.cluster || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("splitCluster(%q) = %q, %q, %v; want %q, %q, %q", tc.in, dsn, cluster, err, tc.dsn, tc.cluster, tc.err)
		}
	}
}

func TestDistributedKey(t *testing.T) {
	for in, want := range map[string]string{
		"Distributed(trueup, t_1, orders__v1_local, cityHash64(id))":             "cityHash64 ( id )",
		"Distributed('trueup', 't_1', 'orders__v1_local', cityHash64(`a,b`, c))": "cityHash64 ( `a,b` , c )",
		"Distributed(trueup, t_1, orders__v1_local)":                             "",
	} {
		if got := distributedKey(in); got != want {
			t.Errorf("distributedKey(%q) = %q, want %q", in, got, want)
		}
		if got := distributedTable(in); got != "orders__v1_local" {
			t.Errorf("distributedTable(%q) = %q", in, got)
		}
	}
}
