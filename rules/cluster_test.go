package rules

import (
	"context"
	"sync"
	"testing"

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
