package views_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// clusterVersionsEngine is the cluster engine with CreateTable making a version of a logical table
// (orders__v1: Cluster.CreateVersion, sharded by id) and Insert returning once every replica has
// the rows, as the tests' helpers need.
type clusterVersionsEngine struct {
	tsql.Engine
	c tsql.Cluster
}

func (w clusterVersionsEngine) CreateTable(ctx context.Context, table string, cols []tsql.Column, partition string, order []string) error {
	name, n, _ := strings.Cut(table, "__v")
	version, err := strconv.Atoi(n)
	if err != nil {
		return err
	}
	return w.c.CreateVersion(ctx, tsql.ClusterTable{Name: name, Version: version, Columns: cols, Partition: partition, Order: order, ShardingKey: []string{"id"}})
}

func (w clusterVersionsEngine) Insert(ctx context.Context, table string, cols []string, rows [][]any) error {
	if err := w.Engine.Insert(ctx, table, cols, rows); err != nil {
		return err
	}
	if w.Info().Cluster.Replicas < 2 {
		return nil
	}
	return w.c.OnNodes(ctx, func(ctx context.Context, _ tsql.Node, e tsql.Engine) error {
		return e.Exec(ctx, "SYSTEM SYNC REPLICA "+e.Dialect().Quote(table+"_local"))
	})
}

// TestCatchUpOnCluster: on a cluster, a version built as a backfill builds it (carry-over and
// replaced days shard by shard), swapped in with what the pipeline wrote to live carried, rolled
// back with what was written to it carried back, then written to while not live, is caught up
// into the live version shard by shard: readers see every row once.
func TestCatchUpOnCluster(t *testing.T) {
	ce := sqltest.Cluster(t)
	if ce == nil {
		t.Skip("no cluster")
	}
	e := clusterVersionsEngine{Engine: ce, c: ce.(tsql.Cluster)}
	ctx := context.Background()
	makeVersion(t, e, "orders", 1, 200, 0) // July 1–20, 10 rows a day
	pointView(t, e, "orders", 1)
	s := views.New("w", e, ledgertest.Open(t))
	if _, err := s.Versions(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	buildLike(t, s, e)
	if n := count(t, e, "orders__v2", "amount >= 1000"); n != 20 {
		t.Fatalf("v2 holds %d rebuilt rows, want 20", n)
	}
	if n := count(t, e, "orders__v2", "1=1"); n != 200 {
		t.Fatalf("v2 holds %d rows, want 200", n)
	}

	write(t, e, "orders__v1", july(21), 1000, 5)
	write(t, e, "orders__v1", july(10), 2000, 2)
	p, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	if got := carried(p.Changes[0].Carried); got != "2026-07-10 +2 rows; 2026-07-21 +5 rows" {
		t.Errorf("swap carried %q", got)
	}
	if n := count(t, e, "orders", "1=1"); n != 207 {
		t.Errorf("readers see %d rows, want 207", n)
	}

	write(t, e, "orders__v2", july(22), 3000, 3)
	if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"}); err != nil {
		t.Fatal(err)
	}
	if n := count(t, e, "orders", "id >= 1000"); n != 10 {
		t.Errorf("after the rollback readers see %d of the 10 rows written, want 10", n)
	}

	write(t, e, "orders__v2", july(22), 4000, 4)
	res, err := s.CatchUp(ctx, "orders", "ann")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Carried) != 1 || carried(res.Carried[0].Partitions) != "2026-07-22 +4 rows" {
		t.Errorf("catch-up = %+v", res)
	}
	if n := count(t, e, "orders", "id >= 3000 AND id < 5000"); n != 7 {
		t.Errorf("the catch-up duplicated or lost rows: %d of 7", n)
	}

	// Both written since: merged, shard by shard.
	write(t, e, "orders__v1", july(23), 6000, 2)
	write(t, e, "orders__v2", july(23), 7000, 1)
	res, err = s.CatchUp(ctx, "orders", "ann")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Carried) != 1 || carried(res.Carried[0].Partitions) != "2026-07-23 +1 rows (merged)" {
		t.Errorf("catch-up of both sides = %+v", res)
	}
	if n := count(t, e, "orders", "id >= 6000"); n != 3 {
		t.Errorf("after merging July 23 readers see %d of its 3 rows", n)
	}
	if n := count(t, e, "orders", "1=1"); n != 217 {
		t.Errorf("readers see %d rows, want 217", n)
	}

	// Back to v2, written again on July 23 by the stale writer: it lacks two of live v1's three
	// rows there (it holds the third, caught up before). The merge, counted shard by shard, adds
	// the two.
	write(t, e, "orders__v2", july(23), 8000, 1)
	p, err = s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	if got := carried(p.Changes[0].Carried); got != "2026-07-23 +2 rows (merged)" {
		t.Errorf("the swap back carried %q, want July 23 +2 (merged)", got)
	}
	if n := count(t, e, "orders", "id >= 6000"); n != 4 {
		t.Errorf("after the swap back readers see %d of July 23's 4 rows", n)
	}
}
