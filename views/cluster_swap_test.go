package views_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// clusterVersions creates orders v1 (200 rows) and v2 (150 rows) on the cluster, the view on
// every node reading v1.
func clusterVersions(t *testing.T, e tsql.Engine) {
	t.Helper()
	ctx := context.Background()
	c := e.(tsql.Cluster)
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate}}
	for n, rows := range map[int]int{1: 200, 2: 150} {
		v := tsql.ClusterTable{Name: "orders", Version: n, Columns: cols, Partition: "d", Order: []string{"id"}, ShardingKey: []string{"id"}}
		if err := c.CreateVersion(ctx, v); err != nil {
			t.Fatal(err)
		}
		var data [][]any
		for i := range rows {
			data = append(data, []any{int64(i), time.Date(2026, 7, 1+i%3, 0, 0, 0, 0, time.UTC)})
		}
		if err := e.Insert(ctx, v.Distributed(), []string{"id", "d"}, data); err != nil {
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
}

// nodeReads is, per node, what its view orders reads and how many rows it sees through it
// ("down" for a node that does not answer).
func nodeReads(t *testing.T, e tsql.Engine) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, nv := range e.(tsql.NodeRepointer).NodeViews(context.Background(), []string{"orders"}) {
		if nv.Error != "" {
			out[nv.Node.Addr] = "down"
			continue
		}
		out[nv.Node.Addr] = nv.Sources["orders"]
	}
	return out
}

func wantReads(t *testing.T, got map[string]string, want map[string]string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the nodes read %v, want %v", got, want)
	}
}

func every(e tsql.Engine, what string, except ...string) map[string]string {
	out := map[string]string{}
	for i, n := range e.Info().Cluster.Nodes {
		out[n.Addr] = what
		if i < len(except) && except[i] != "" {
			out[n.Addr] = except[i]
		}
	}
	return out
}

func nodeStates(t *testing.T, s *views.Service, id int64) string {
	t.Helper()
	ns, err := s.PublishNodes(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range ns {
		out = append(out, fmt.Sprintf("%d/%d %s", n.Shard, n.Replica, n.State))
	}
	return strings.Join(out, ", ")
}

// TestClusterSwapLosesNode: on a cluster, a swap with a node stopped beforehand is refused with
// nothing changed; a node killed between the prepare and the switch leaves a recorded half-done
// swap (each node's part in the ledger) that start-up recovery, after the node and trueup are
// restarted, completes on every node; a rollback left half done the same is completed by Resume
// and a swap left half done is undone by Resume with Undo. Readers on the other nodes see one
// version whole throughout, with no error.
func TestClusterSwapLosesNode(t *testing.T) {
	url, script := sqltest.OwnCluster(t)
	ctx := context.Background()
	e := sqltest.Open(t, url)
	clusterVersions(t, e)
	nodes := e.Info().Cluster.Nodes
	last := len(nodes) // the node this test loses
	lost := nodes[last-1].Addr
	down := make([]string, last)
	down[last-1] = "down"

	// readers on every node but the one lost: each read sees 200 rows (v1) or 150 (v2)
	var reads, failures, cut atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	readers := sqltest.Open(t, url) // its own connections: trueup's engine is closed and opened again below
	readers.(tsql.Cluster).OnNodes(ctx, func(_ context.Context, n tsql.Node, ne tsql.Engine) error {
		if n.Addr == lost {
			return nil
		}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := ne.Query(ctx, "SELECT count() FROM orders")
				reads.Add(1)
				if err != nil && strings.Contains(err.Error(), "from "+lost) {
					// A Distributed read that was receiving the lost node's share when it was
					// killed: ClickHouse fails such a query (it does not fail over mid-query).
					// That is the node's death, not the swap's; the next read goes elsewhere.
					cut.Add(1)
				} else if err != nil {
					failures.Add(1)
					t.Errorf("reader on %s: %v", n, err)
				} else if c := tsql.AsInt64(res.Rows[0][0]); c != 200 && c != 150 {
					failures.Add(1)
					t.Errorf("reader on %s saw %d rows: neither version", n, c)
				}
			}
		})
		return nil
	})
	defer func() {
		close(stop)
		wg.Wait()
		t.Logf("%d reads on the other nodes, %d failed, %d cut by the lost node's death", reads.Load(), failures.Load(), cut.Load())
	}()

	path := filepath.Join(t.TempDir(), "state.duckdb")
	l := ledgertest.OpenAt(t, path)
	s := views.New("w", e, l)
	if _, err := s.Versions(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	record(t, s, "orders", 2, views.StateValidated, 7)

	// A node stopped before the swap: refused, nothing changed on any node.
	script("stop-node", last)
	_, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
	if !errors.Is(err, tsql.ErrUnreachable) || !strings.Contains(err.Error(), lost) {
		t.Errorf("swap with %s stopped: %v", lost, err)
	}
	wantReads(t, nodeReads(t, e), every(e, "orders__v1", down...))
	script("start-node", last)
	wantReads(t, nodeReads(t, e), every(e, "orders__v1"))
	if l, err := s.Versions(ctx, "orders"); err != nil || l.Live != 1 {
		t.Errorf("after the refused swap: live v%d (%v)", l.Live, err)
	}

	// A node killed between the prepare and the switch: half done, recorded per node.
	kill := func() { script("stop-node", last) }
	e.(tsql.NodeRepointer).AfterPrepare(kill)
	_, err = s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
	e.(tsql.NodeRepointer).AfterPrepare(nil)
	if !errors.Is(err, views.ErrHalfDone) || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("swap losing %s: %v", lost, err)
	}
	hist, err := s.History(ctx, "orders", 1)
	if err != nil || hist[0].State != views.PublishIntent {
		t.Fatalf("the half-done swap is recorded %+v (%v), want an intent", hist, err)
	}
	swap := hist[0].ID
	if got := nodeStates(t, s, swap); got != "1/1 switched, 1/2 switched, 2/1 switched, 2/2 not switched" {
		t.Errorf("nodes of the half-done swap: %s", got)
	}
	wantReads(t, nodeReads(t, e), every(e, "orders__v2", down...))
	// nothing else moves its views meanwhile
	if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "bob"}); err == nil {
		t.Errorf("a rollback during a half-done swap went through")
	}
	wantReads(t, nodeReads(t, e), every(e, "orders__v2", down...))
	// resume while the node is still down: refused, still half done
	if _, err := s.Resume(ctx, views.ResumeRequest{Table: "orders", Actor: "bob"}); err == nil || !strings.Contains(err.Error(), lost) {
		t.Errorf("resume with %s down: %v", lost, err)
	}

	// Restart the node and trueup: recovery completes the swap on every node.
	script("start-node", last)
	e.Close()
	l.Close()
	e = sqltest.Open(t, url)
	l = ledgertest.OpenAt(t, path)
	s = views.New("w", e, l)
	repairs, err := s.Recover(ctx)
	if err != nil {
		t.Fatalf("recover: %v (%v)", err, repairs)
	}
	if p, err := s.GetPublish(ctx, swap); err != nil || p.State != views.PublishDone || !strings.Contains(p.Detail, "3 of 4 nodes") {
		t.Errorf("after recovery the swap is %s: %s (%v)", p.State, p.Detail, err)
	}
	if got := nodeStates(t, s, swap); got != "1/1 switched, 1/2 switched, 2/1 switched, 2/2 switched" {
		t.Errorf("nodes of the recovered swap: %s", got)
	}
	wantReads(t, nodeReads(t, e), every(e, "orders__v2"))
	if l, err := s.Versions(ctx, "orders"); err != nil || l.Live != 2 {
		t.Errorf("after recovery: live v%d (%v)", l.Live, err)
	}

	// A rollback half done, completed by Resume once the node answers.
	e.(tsql.NodeRepointer).AfterPrepare(kill)
	_, err = s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "bob"})
	e.(tsql.NodeRepointer).AfterPrepare(nil)
	if !errors.Is(err, views.ErrHalfDone) {
		t.Fatalf("rollback losing %s: %v", lost, err)
	}
	wantReads(t, nodeReads(t, e), every(e, "orders__v1", down...))
	script("start-node", last)
	p, err := s.Resume(ctx, views.ResumeRequest{Table: "orders", Actor: "bob"})
	if err != nil || p.State != views.PublishDone || p.Kind != views.KindRollback || !strings.Contains(p.Detail, "resumed by bob") {
		t.Fatalf("resume the rollback: %+v %v", p, err)
	}
	wantReads(t, nodeReads(t, e), every(e, "orders__v1"))
	if l, err := s.Versions(ctx, "orders"); err != nil || l.Live != 1 {
		t.Errorf("after the resumed rollback: live v%d (%v)", l.Live, err)
	}

	// A swap half done, undone by Resume with Undo.
	e.(tsql.NodeRepointer).AfterPrepare(kill)
	_, err = s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
	e.(tsql.NodeRepointer).AfterPrepare(nil)
	if !errors.Is(err, views.ErrHalfDone) {
		t.Fatalf("swap losing %s again: %v", lost, err)
	}
	script("start-node", last)
	p, err = s.Resume(ctx, views.ResumeRequest{Table: "orders", Undo: true, Actor: "bob"})
	if err != nil || p.State != views.PublishFailed || !strings.Contains(p.Detail, "taken back") {
		t.Fatalf("resume --undo: %+v %v", p, err)
	}
	if got := nodeStates(t, s, p.ID); got != "1/1 undone, 1/2 undone, 2/1 undone, 2/2 not switched" {
		t.Errorf("nodes of the undone swap: %s", got)
	}
	wantReads(t, nodeReads(t, e), every(e, "orders__v1"))
	if l, err := s.Versions(ctx, "orders"); err != nil || l.Live != 1 {
		t.Errorf("after the undone swap: live v%d (%v)", l.Live, err)
	}
	// nothing is left held: the swap goes through now, on every node
	if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"}); err != nil {
		t.Fatal(err)
	}
	wantReads(t, nodeReads(t, e), every(e, "orders__v2"))
}
