package rules

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestEveryKindOnCluster: every rule kind gives on a cluster (rows spread over the shards at
// random, so no check can lean on one node's share) what it gives on one DuckDB file.
func TestEveryKindOnCluster(t *testing.T) {
	e := sqltest.Cluster(t)
	if e == nil {
		t.Skip("no cluster")
	}
	ctx := context.Background()
	run := func(e tsql.Engine) map[string]outcome {
		t.Helper()
		targets := TargetMap{Default: "shop", Engines: map[string]tsql.Engine{"shop": e}}
		set, err := Load(ctx, shopRules, "rules", targets)
		if err != nil {
			t.Fatal(err)
		}
		runner := NewRunner(targets, WithClock(runClock), WithSchemaStore(&memSchemas{snap: map[string][]tsql.Column{}}), WithParallel(2))
		r := runner.Run(ctx, set.Rules)
		for _, res := range r.Results {
			if res.Status == StatusError {
				t.Errorf("%s on %s: %s\n%s", res.Rule, e.Info().Kind, res.Message, res.SQL)
			}
		}
		return outcomes(r)
	}
	one := sqltest.DuckDB(t)
	loadShop(t, one)
	loadShop(t, sqltest.ClusterLoader(e))
	// every shard holds some of the orders
	shards := map[int]int64{}
	var mu sync.Mutex
	err := e.(tsql.Cluster).OnNodes(ctx, func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
		res, err := ne.Query(ctx, "SELECT count() FROM orders__v1_local")
		if err == nil && n.Replica == 1 {
			mu.Lock()
			shards[n.Shard] = tsql.AsInt64(res.Rows[0][0])
			mu.Unlock()
		}
		return err
	})
	if err != nil || len(shards) != 2 || shards[1] == 0 || shards[2] == 0 {
		t.Fatalf("orders per shard: %v (%v)", shards, err)
	}
	want, got := run(one), run(e)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes on the cluster (-one DuckDB file +cluster):\n%s", diff)
	}
	if len(got) < 25 {
		t.Errorf("only %d rules ran", len(got))
	}
}

// TestUniquenessAcrossShards: a key duplicated across two shards is found (the check groups over
// the Distributed table, not one node's share), and --explain says whether a key's rows can be
// on different shards (table a, placed at random) or are all on one (table b, sharded by the key).
func TestUniquenessAcrossShards(t *testing.T) {
	e := sqltest.Cluster(t)
	if e == nil {
		t.Skip("no cluster")
	}
	ctx := context.Background()
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate}}
	names := []string{"id", "d"}
	day := time.Date(2026, 7, 10, 0, 0, 0, 0, time.UTC)
	var rows [][]any
	for i := int64(1); i <= 10; i++ {
		if i != 5 {
			rows = append(rows, []any{i, day})
		}
	}
	for _, l := range []struct {
		table string
		e     tsql.Engine
	}{{"a", sqltest.ClusterLoader(e)}, {"b", sqltest.ClusterLoaderBy(e, "id")}} {
		if err := l.e.CreateTable(ctx, l.table, cols, "d", []string{"id"}); err != nil {
			t.Fatal(err)
		}
		if err := l.e.Insert(ctx, l.table, names, rows); err != nil {
			t.Fatal(err)
		}
	}
	// a: id 5 once on each shard's local table
	sh, err := e.(tsql.ShardReader).ShardsOf(ctx, "a")
	if err != nil || sh == nil || len(sh.Shards) != 2 {
		t.Fatalf("shards of a: %+v %v", sh, err)
	}
	for _, s := range sh.Shards {
		if err := s.Engine.Insert(ctx, s.Relation, names, [][]any{{int64(5), day}}); err != nil {
			t.Fatal(err)
		}
	}
	if e.Info().Cluster.Replicas > 1 {
		err := e.(tsql.Cluster).OnNodes(ctx, func(ctx context.Context, _ tsql.Node, n tsql.Engine) error {
			return n.Exec(ctx, "SYSTEM SYNC REPLICA a__v1_local")
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// b: id 5 twice through the Distributed table, so on one shard
	if err := sqltest.ClusterLoaderBy(e, "id").Insert(ctx, "b", names, [][]any{{int64(5), day}, {int64(5), day}}); err != nil {
		t.Fatal(err)
	}

	targets := TargetMap{Default: "shop", Engines: map[string]tsql.Engine{"shop": e}}
	fs := fstest.MapFS{
		"a/unique_id.sql":     {Data: []byte("-- kind: uniqueness\n-- table: a\n-- columns: id\n")},
		"b/unique_b_id.sql":   {Data: []byte("-- kind: uniqueness\n-- table: b\n-- columns: id\n")},
		"a/unique_a_pair.sql": {Data: []byte("-- kind: uniqueness\n-- table: a\n-- columns: id, d\n")},
	}
	set, err := Load(ctx, fs, "rules", targets)
	if err != nil {
		t.Fatal(err)
	}
	explain := map[string]string{}
	for _, r := range set.Rules {
		explain[r.Table+" "+strings.Join(r.Columns, ",")] = r.Explain()
	}
	if s := explain["a id"]; !strings.Contains(s, "sharded by rand()") || !strings.Contains(s, "can be on different shards") {
		t.Errorf("explain of a: %s", s)
	}
	if s := explain["b id"]; !strings.Contains(s, "sharded by cityHash64(id)") || !strings.Contains(s, "all rows of one key are on one shard") {
		t.Errorf("explain of b: %s", s)
	}
	r := NewRunner(targets, WithClock(runClock)).Run(ctx, set.Rules)
	if len(r.Results) != 3 {
		t.Fatalf("%d results", len(r.Results))
	}
	for _, res := range r.Results {
		if res.Status != StatusFail || res.Violations != 1 || len(res.Sample) != 1 {
			t.Errorf("%s: %s, %d violations, sample %v (%s), want one duplicate key", res.Rule, res.Status, res.Violations, res.Sample, res.Message)
		}
	}
}
