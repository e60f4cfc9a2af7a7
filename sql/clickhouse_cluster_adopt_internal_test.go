package sql

import (
	"strings"
	"testing"

	"trueup/internal/golden"
)

// TestClusterAdoptGolden pins what an adopt of the pair orders (Distributed) over orders_local
// runs on a cluster, and its undo: ON CLUSTER with a ZooKeeper, on every node without one.
func TestClusterAdoptGolden(t *testing.T) {
	for _, tc := range []struct {
		file  string
		place clusterDDL
	}{
		{"cluster-adopt.clickhouse-18.16.golden.sql", clusterDDL{cluster: "trueup", database: "shop", onCluster: true, replicated: true}},
		{"cluster-adopt-no-zookeeper.clickhouse-18.16.golden.sql", clusterDDL{cluster: "trueup", database: "shop"}},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".golden.sql"), func(t *testing.T) {
			d := chDialect{version: parseVersion("18.16.1")}
			golden.Check(t, tc.file, d.adoptSQL(tc.place, "orders", "orders_local", "cityHash64(id)"))
		})
	}
}

func TestShardingKeyColumns(t *testing.T) {
	for in, want := range map[string]string{
		"Distributed(trueup, db, l, cityHash64(id))":           "cityHash64(id) [id]",
		"Distributed(trueup, db, l, cityHash64(`a b`, c))":     "cityHash64(`a b`, c) [a b c]",
		"Distributed(trueup, db, l, rand())":                   "rand() []",
		"Distributed(trueup, db, l)":                           " []",
		"Distributed('trueup', 'db', 'l', intHash64(user_id))": "intHash64(user_id) [user_id]",
	} {
		toks := distributedArg(in, 3)
		if got := exprText(toks) + " [" + strings.Join(keyColumns(toks), " ") + "]"; got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}
