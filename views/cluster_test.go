package views_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// TestSwapOnCluster: a swap and its rollback between two versions of a logical table on a
// cluster repoint the view on every node, and every node then reads the version swapped to.
func TestSwapOnCluster(t *testing.T) {
	e := sqltest.Cluster(t)
	if e == nil {
		t.Skip("no cluster")
	}
	ctx := context.Background()
	c := e.(tsql.Cluster)
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate}}
	for n, count := range map[int]int{1: 200, 2: 150} {
		v := tsql.ClusterTable{Name: "orders", Version: n, Columns: cols, Partition: "d", Order: []string{"id"}, ShardingKey: []string{"id"}}
		if err := c.CreateVersion(ctx, v); err != nil {
			t.Fatal(err)
		}
		var rows [][]any
		for i := range count {
			rows = append(rows, []any{int64(i), time.Date(2026, 7, 1+i%3, 0, 0, 0, 0, time.UTC)})
		}
		if err := e.Insert(ctx, v.Distributed(), []string{"id", "d"}, rows); err != nil {
			t.Fatal(err)
		}
		if e.Info().Cluster.Replicas > 1 {
			if err := c.OnNodes(ctx, func(ctx context.Context, _ tsql.Node, ne tsql.Engine) error {
				return ne.Exec(ctx, "SYSTEM SYNC REPLICA "+ne.Dialect().Quote(v.Local()))
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v1"}}); err != nil {
		t.Fatal(err)
	}
	everyNode := func(want string) {
		t.Helper()
		var mu sync.Mutex
		got := map[string]string{}
		err := c.OnNodes(ctx, func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
			src, err := ne.ViewSource(ctx, "orders")
			mu.Lock()
			got[n.Addr] = src
			mu.Unlock()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for node, src := range got {
			if src != want {
				t.Errorf("node %s reads %s, want %s", node, src, want)
			}
		}
	}

	s := views.New("w", e, ledgertest.Open(t))
	list, err := s.Versions(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if list.Live != 1 || len(list.Versions) != 2 || list.Versions[0].Rows != 200 {
		t.Fatalf("listing on the cluster: %+v", list)
	}
	record(t, s, "orders", 2, views.StateValidated, 7)
	if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"}); err != nil {
		t.Fatal(err)
	}
	everyNode("orders__v2")
	if n := count(t, e, "orders", "1 = 1"); n != 150 {
		t.Errorf("orders has %d rows after the swap, want 150", n)
	}
	if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "bob"}); err != nil {
		t.Fatal(err)
	}
	everyNode("orders__v1")
	if n := count(t, e, "orders", "1 = 1"); n != 200 {
		t.Errorf("orders has %d rows after the rollback, want 200", n)
	}
}
