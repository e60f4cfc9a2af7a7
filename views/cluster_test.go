package views_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

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
	clusterVersions(t, e)
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

	// readers on every node, through the view, all through the swap and the rollback: each read
	// sees one version whole (200 rows or 150) and none fails
	var reads, failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	c.OnNodes(ctx, func(_ context.Context, n tsql.Node, ne tsql.Engine) error {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := ne.Query(ctx, "SELECT count() FROM orders")
				reads.Add(1)
				if err != nil {
					failures.Add(1)
					t.Errorf("reader on %s: %v", n, err)
				} else if got := tsql.AsInt64(res.Rows[0][0]); got != 200 && got != 150 {
					failures.Add(1)
					t.Errorf("reader on %s saw %d rows: neither version", n, got)
				}
			}
		})
		return nil
	})
	defer func() {
		close(stop)
		wg.Wait()
		t.Logf("%d reads on %d nodes during the swap and the rollback, %d failed", reads.Load(), len(e.Info().Cluster.Nodes), failures.Load())
	}()

	s := views.New("w", e, ledgertest.Open(t))
	list, err := s.Versions(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if list.Live != 1 || len(list.Versions) != 2 || list.Versions[0].Rows != 200 {
		t.Fatalf("listing on the cluster: %+v", list)
	}
	record(t, s, "orders", 2, views.StateValidated, 7)
	p, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	everyNode("orders__v2")
	// the ledger has each node's part: switched, on every node
	nodes, err := s.PublishNodes(ctx, p.ID)
	if err != nil || len(nodes) != len(e.Info().Cluster.Nodes) {
		t.Fatalf("nodes of swap #%d: %+v (%v)", p.ID, nodes, err)
	}
	for _, n := range nodes {
		if n.State != views.NodeSwitched {
			t.Errorf("node %s of the swap: %s %s", n.Node, n.State, n.Detail)
		}
	}
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
