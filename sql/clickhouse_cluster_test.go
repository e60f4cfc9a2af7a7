package sql_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"trueup/fault"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// The tests here run on the local cluster scripts/clickhouse-cluster.sh starts (2 shards × 2
// replicas over ZooKeeper, or 2 × 1 without it) at TRUEUP_TEST_CLUSTER.

func cluster(t *testing.T) (tsql.Engine, tsql.Cluster) {
	t.Helper()
	e := sqltest.Cluster(t)
	if e == nil {
		t.Skip("no cluster")
	}
	c, ok := e.(tsql.Cluster)
	if !ok {
		t.Fatalf("%s opened as one server, not a cluster", e.Info().Target)
	}
	return e, c
}

// urlHosts lists the host:port of a cluster URL.
func urlHosts(url string) []string {
	rest := url[strings.Index(url, "://")+3:]
	return strings.Split(rest[:strings.IndexByte(rest, '/')], ",")
}

// TestClusterTopology: the target reads its shards and replicas from system.clusters, every node
// answers with its version, and the URL's ?cluster= does not reach the server as a setting.
func TestClusterTopology(t *testing.T) {
	e, _ := cluster(t)
	hosts := urlHosts(os.Getenv("TRUEUP_TEST_CLUSTER"))
	ci := e.Info().Cluster
	if ci == nil {
		t.Fatal("Info has no cluster")
	}
	wantReplicas := len(hosts) / 2
	if ci.Name != "trueup" || ci.Shards != 2 || ci.Replicas != wantReplicas || ci.DistributedDDL != (wantReplicas > 1) {
		t.Errorf("cluster %s: %d shards × %d replicas (distributed DDL %v), want trueup: 2 × %d", ci.Name, ci.Shards, ci.Replicas, ci.DistributedDDL, wantReplicas)
	}
	var got []string
	for _, n := range ci.Nodes {
		got = append(got, fmt.Sprintf("%d/%d %s", n.Shard, n.Replica, n.Addr))
		if !n.Reachable || n.Version.Major != 18 || n.Version.Minor != 16 || n.Error != "" {
			t.Errorf("node %s: reachable %v, version %q, error %q", n, n.Reachable, n.Version, n.Error)
		}
	}
	var want []string
	for i, h := range hosts {
		want = append(want, fmt.Sprintf("%d/%d %s", i/wantReplicas+1, i%wantReplicas+1, h))
	}
	if !slices.Equal(got, want) {
		t.Errorf("nodes %v, want %v", got, want)
	}
	res, err := e.Query(context.Background(), "SELECT currentDatabase()")
	if err != nil || !strings.HasPrefix(tsql.AsText(res.Rows[0][0]), "t_") {
		t.Errorf("query on the cluster target: %v %v", res, err)
	}

	bad := strings.Replace(os.Getenv("TRUEUP_TEST_CLUSTER"), "cluster=trueup", "cluster=nope", 1)
	if _, err := tsql.Open(context.Background(), bad); fault.Of(err) != fault.Invalid || !strings.Contains(err.Error(), "no cluster nope") || !strings.Contains(err.Error(), "trueup") {
		t.Errorf("unknown cluster: %v", err)
	}
}

var orderCols = []tsql.Column{{Name: "id", Kind: tsql.TypeInt, Type: "UInt64"}, {Name: "d", Kind: tsql.TypeDate}, {Name: "amount", Kind: tsql.TypeFloat}}

// publish creates version n of orders with rows ids [from, to) and points the views at it.
func publish(t *testing.T, e tsql.Engine, c tsql.Cluster, n int, key []string, from, to int) {
	t.Helper()
	ctx := context.Background()
	v := tsql.ClusterTable{Name: "orders", Version: n, Columns: orderCols, Partition: "d", Order: []string{"id"}, ShardingKey: key}
	if err := c.CreateVersion(ctx, v); err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	for i := from; i < to; i++ {
		rows = append(rows, []any{uint64(i), time.Date(2026, 7, 1+i%5, 0, 0, 0, 0, time.UTC), float64(i)})
	}
	if err := e.Insert(ctx, v.Distributed(), []string{"id", "d", "amount"}, rows); err != nil {
		t.Fatal(err)
	}
	syncReplicas(t, e, c, v.Local())
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: v.Distributed()}}); err != nil {
		t.Fatal(err)
	}
}

// syncReplicas waits until every replica has the rows written to its shard (replication is
// asynchronous; the Distributed table reads any one replica).
func syncReplicas(t *testing.T, e tsql.Engine, c tsql.Cluster, local string) {
	t.Helper()
	if e.Info().Cluster.Replicas < 2 {
		return
	}
	err := c.OnNodes(context.Background(), func(ctx context.Context, _ tsql.Node, n tsql.Engine) error {
		return n.Exec(ctx, "SYSTEM SYNC REPLICA "+n.Dialect().Quote(local))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// reads reports, per node, the table its view orders reads and the row count it sees through it.
func reads(t *testing.T, c tsql.Cluster) map[string]string {
	t.Helper()
	out := map[string]string{}
	var mu sync.Mutex
	err := c.OnNodes(context.Background(), func(ctx context.Context, n tsql.Node, e tsql.Engine) error {
		src, err := e.ViewSource(ctx, "orders")
		if err != nil {
			return err
		}
		res, err := e.Query(ctx, "SELECT count() FROM orders")
		if err != nil {
			return err
		}
		mu.Lock()
		out[n.Addr] = fmt.Sprintf("%s %d", src, tsql.AsInt64(res.Rows[0][0]))
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func allRead(t *testing.T, got map[string]string, want string) {
	t.Helper()
	for node, r := range got {
		if r != want {
			t.Errorf("node %s reads %s, want %s", node, r, want)
		}
	}
}

// TestClusterVersionsAndRepoint: a version is a local table on every node and a Distributed table
// over them; a rule-style aggregate over the view sees every shard's rows, from every node; the
// next version takes the live version's sharding key; a repoint moves the view on every node.
func TestClusterVersionsAndRepoint(t *testing.T) {
	e, c := cluster(t)
	ctx := context.Background()
	publish(t, e, c, 1, []string{"id"}, 0, 1000)
	allRead(t, reads(t, c), "orders__v1 1000")

	// each shard holds its part of the rows, the same on each of its replicas
	perShard := map[int]map[int64]bool{}
	var mu sync.Mutex
	err := c.OnNodes(ctx, func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
		res, err := ne.Query(ctx, "SELECT count() FROM orders__v1_local")
		if err != nil {
			return err
		}
		mu.Lock()
		if perShard[n.Shard] == nil {
			perShard[n.Shard] = map[int64]bool{}
		}
		perShard[n.Shard][tsql.AsInt64(res.Rows[0][0])] = true
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for shard, counts := range perShard {
		if len(counts) != 1 {
			t.Errorf("shard %d's replicas hold different counts: %v", shard, counts)
		}
		for n := range counts {
			if n == 0 {
				t.Errorf("shard %d holds no rows", shard)
			}
			total += n
		}
	}
	if len(perShard) != 2 || total != 1000 {
		t.Errorf("shards %v hold %d rows, want 2 shards and 1000", perShard, total)
	}

	// a rule's fused scan, as trueup runs it, over the view
	d := e.Dialect()
	res, err := e.Query(ctx, "SELECT count(), "+d.CountIf("amount >= 990")+", "+d.DistinctCount("id")+", "+d.DistinctCount("d")+" FROM orders")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows[0]...); got != fmt.Sprint(int64(1000), int64(10), int64(1000), int64(5)) {
		t.Errorf("aggregate over the cluster: %s", got)
	}

	// a version that exists is refused, and keeps its rows
	err = c.CreateVersion(ctx, tsql.ClusterTable{Name: "orders", Version: 1, Columns: orderCols[:1]})
	if fault.Of(err) != fault.Conflict || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("create an existing version: %v", err)
	}
	allRead(t, reads(t, c), "orders__v1 1000")
	// a create that fails on the nodes leaves no table of it on any
	err = c.CreateVersion(ctx, tsql.ClusterTable{Name: "orders", Version: 5, Columns: orderCols, Partition: "nope"})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("create partitioned by a missing column: %v", err)
	}
	c.OnNodes(ctx, func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
		rels, err := ne.Relations(ctx)
		for _, r := range rels {
			if strings.HasPrefix(r.Name, "orders__v5") {
				t.Errorf("node %s has %s after a failed create", n, r.Name)
			}
		}
		return err
	})

	publish(t, e, c, 2, nil, 0, 10)
	allRead(t, reads(t, c), "orders__v2 10")
	res, err = e.Query(ctx, "SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'orders__v2'")
	if err != nil || !strings.Contains(tsql.AsText(res.Rows[0][0]), "cityHash64(id)") {
		t.Errorf("v2 is not sharded by v1's key: %v %v", res, err)
	}
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v1"}}); err != nil {
		t.Fatal(err)
	}
	allRead(t, reads(t, c), "orders__v1 1000")
	for _, r := range helperViewsOnNodes(t, c) {
		t.Errorf("left behind: %s", r)
	}

	// the write mark of a version moves with a write to any shard, and only then
	mark := func() string {
		t.Helper()
		m, err := e.WriteMark(ctx, "orders__v1")
		if err != nil || strings.Count(m, "=") != len(e.Info().Cluster.Nodes) {
			t.Fatalf("write mark %q: %v", m, err)
		}
		return m
	}
	before := mark()
	if again := mark(); again != before {
		t.Errorf("write mark moved without a write: %s then %s", before, again)
	}
	if err := e.Insert(ctx, "orders__v1", []string{"id", "d", "amount"}, [][]any{{uint64(5000), time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), 1.0}}); err != nil {
		t.Fatal(err)
	}
	if after := mark(); after == before {
		t.Errorf("write mark did not move with a write: %s", after)
	}
}

// TestClusterRefusesOneNodeWrites: what would change the entry node alone is refused, saying so
// (plain tables are made on every node: TestClusterCreateTable).
func TestClusterRefusesOneNodeWrites(t *testing.T) {
	e, _ := cluster(t)
	ctx := context.Background()
	if why, err := e.AdoptRefusal(ctx, "plain"); err != nil || !strings.Contains(why, "cluster") {
		t.Errorf("adopt refusal: %q %v", why, err)
	}
	// partitions are replaced shard by shard, in a version's Distributed table only
	if _, err := e.ReplacePartition(ctx, "orders__v1", tsql.Window{}, "SELECT 1"); fault.Of(err) != fault.NotFound {
		t.Errorf("replace partition of a table the cluster lacks: %v", err)
	}
	rels, err := e.Relations(ctx)
	if err != nil || len(rels) != 0 {
		t.Errorf("relations after refusals: %v %v", rels, err)
	}
}

func helperViewsOnNodes(t *testing.T, c tsql.Cluster) []string {
	t.Helper()
	var out []string
	var mu sync.Mutex
	c.OnNodes(context.Background(), func(ctx context.Context, n tsql.Node, e tsql.Engine) error {
		for _, h := range helperViews(t, e) {
			mu.Lock()
			out = append(out, n.Addr+": "+h)
			mu.Unlock()
		}
		return nil
	})
	return out
}

// TestClusterNodeDownRefuses: with one node stopped, a repoint and a version's creation are both
// refused, naming the node, and nothing changes on the nodes that answer; once the node is back
// the repoint goes through on every node. It kills a node, so it runs on a cluster of its own,
// not the one other packages' tests share.
func TestClusterNodeDownRefuses(t *testing.T) {
	if os.Getenv("TRUEUP_TEST_CLUSTER") == "" {
		t.Skip("TRUEUP_TEST_CLUSTER is not set: no cluster can run here")
	}
	url, node := sqltest.OwnCluster(t)
	e := sqltest.Open(t, url)
	c := e.(tsql.Cluster)
	ctx := context.Background()
	publish(t, e, c, 1, []string{"id"}, 0, 100)
	if err := c.CreateVersion(ctx, tsql.ClusterTable{Name: "orders", Version: 2, Columns: orderCols, Order: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	nodes := e.Info().Cluster.Nodes
	lost := nodes[len(nodes)-1]
	script := func(cmd string) { node(cmd, len(nodes)) }
	script("stop-node")

	err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v2"}})
	if !errors.Is(err, tsql.ErrUnreachable) || fault.Of(err) != fault.Refused || !strings.Contains(err.Error(), lost.Addr) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("repoint with %s stopped: %v", lost, err)
	}
	err = c.CreateVersion(ctx, tsql.ClusterTable{Name: "orders", Version: 3, Columns: orderCols})
	if !errors.Is(err, tsql.ErrUnreachable) || !strings.Contains(err.Error(), lost.Addr) {
		t.Errorf("create version with %s stopped: %v", lost, err)
	}
	for _, n := range e.Info().Cluster.Nodes {
		if n.Reachable == (n.Addr == lost.Addr) {
			t.Errorf("node %s: reachable %v (%s)", n, n.Reachable, n.Error)
		}
	}
	// the nodes that answer are as they were
	var answering []tsql.Node
	var mu sync.Mutex
	c.OnNodes(ctx, func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
		if n.Addr == lost.Addr {
			return nil
		}
		src, err := ne.ViewSource(ctx, "orders")
		if err != nil || src != "orders__v1" {
			t.Errorf("node %s reads %q (%v), want orders__v1", n, src, err)
		}
		rels, err := ne.Relations(ctx)
		if err != nil {
			return err
		}
		for _, r := range rels {
			if strings.HasPrefix(r.Name, "orders__v3") || strings.Contains(r.Name, "__next_") || strings.Contains(r.Name, "__old_") {
				t.Errorf("node %s has %s", n, r.Name)
			}
		}
		mu.Lock()
		answering = append(answering, n)
		mu.Unlock()
		return nil
	})
	if len(answering) != len(nodes)-1 {
		t.Errorf("%d nodes answered, want %d", len(answering), len(nodes)-1)
	}

	script("start-node")
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v2"}}); err != nil {
		t.Fatal(err)
	}
	allRead(t, reads(t, c), "orders__v2 0")
}

// TestClusterRepointUnderReaders: readers on every node keep reading the view while it is
// repointed back and forth; none fails and each sees one version whole. It logs, per repoint,
// how long nodes answered from different versions (from the first node a reader saw switched
// to the last).
func TestClusterRepointUnderReaders(t *testing.T) {
	e, c := cluster(t)
	ctx := context.Background()
	publish(t, e, c, 2, []string{"id"}, 0, 10)
	publish(t, e, c, 1, nil, 0, 1000)
	nodes := e.Info().Cluster.Nodes
	engines := map[string]tsql.Engine{}
	var mu sync.Mutex
	c.OnNodes(ctx, func(_ context.Context, n tsql.Node, ne tsql.Engine) error {
		mu.Lock()
		engines[n.Addr] = ne
		mu.Unlock()
		return nil
	})

	const swaps = 10
	// seen[i][node] is when the node's reader first saw the count the i-th repoint publishes.
	seen := make([]map[string]time.Time, swaps)
	for i := range seen {
		seen[i] = map[string]time.Time{}
	}
	want := func(i int) int64 { return map[bool]int64{true: 10, false: 1000}[i%2 == 0] }
	current := -1 // index of the last repoint issued
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads, failures int
	for _, n := range nodes {
		wg.Go(func() {
			ne := engines[n.Addr]
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := ne.Query(ctx, "SELECT count() FROM orders")
				now := time.Now()
				mu.Lock()
				reads++
				switch {
				case err != nil:
					failures++
					t.Errorf("node %s: %v", n, err)
				case tsql.AsInt64(res.Rows[0][0]) != 10 && tsql.AsInt64(res.Rows[0][0]) != 1000:
					failures++
					t.Errorf("node %s read %d rows: neither version", n, tsql.AsInt64(res.Rows[0][0]))
				case current >= 0 && tsql.AsInt64(res.Rows[0][0]) == want(current):
					if _, ok := seen[current][n.Addr]; !ok {
						seen[current][n.Addr] = now
					}
				}
				mu.Unlock()
			}
		})
	}
	var took []time.Duration
	for i := range swaps {
		table := map[bool]string{true: "orders__v2", false: "orders__v1"}[i%2 == 0]
		mu.Lock()
		current = i
		mu.Unlock()
		began := time.Now()
		if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: table}}); err != nil {
			t.Fatal(err)
		}
		took = append(took, time.Since(began))
		// let every reader see this version before the next repoint
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			mu.Lock()
			all := len(seen[i]) == len(nodes)
			mu.Unlock()
			if all {
				break
			}
		}
	}
	close(stop)
	wg.Wait()
	var windows []time.Duration
	for i, s := range seen {
		if len(s) != len(nodes) {
			t.Errorf("repoint %d: only %d of %d nodes were seen switched", i, len(s), len(nodes))
			continue
		}
		var first, last time.Time
		for _, at := range s {
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
		}
		windows = append(windows, last.Sub(first))
	}
	slices.Sort(windows)
	slices.Sort(took)
	if len(windows) > 0 {
		t.Logf("%d repoints on %d nodes, %d reads, %d failed; repoint took %v median, %v max; nodes on different versions for %v median, %v max",
			swaps, len(nodes), reads, failures, took[len(took)/2], took[len(took)-1], windows[len(windows)/2], windows[len(windows)-1])
	}
}

// TestClusterTidiesEveryNode: a repoint that stopped part-way on one node (its view renamed away,
// as a RENAME cut short leaves it) is found and put back by start-up recovery's LeftViews and
// TidyViews, which look at every node.
func TestClusterTidiesEveryNode(t *testing.T) {
	e, c := cluster(t)
	ctx := context.Background()
	publish(t, e, c, 1, []string{"id"}, 0, 100)
	nodes := e.Info().Cluster.Nodes
	broken := nodes[len(nodes)/2]
	err := c.OnNodes(ctx, func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
		if n.Addr != broken.Addr {
			return nil
		}
		return ne.Exec(ctx, "RENAME TABLE orders TO orders__old_0123456789ab")
	})
	if err != nil {
		t.Fatal(err)
	}
	tidier, ok := e.(tsql.ViewTidier)
	if !ok {
		t.Fatal("the cluster engine does not tidy views")
	}
	left, err := tidier.LeftViews(ctx)
	if err != nil || !slices.Equal(left, []string{"orders"}) {
		t.Fatalf("left views %v (%v), want [orders]", left, err)
	}
	did, err := tidier.TidyViews(ctx, left)
	if err != nil || len(did) != 1 || !strings.Contains(did[0], broken.Addr) || !strings.Contains(did[0], "renamed back") {
		t.Errorf("tidy: %q (%v)", did, err)
	}
	allRead(t, reads(t, c), "orders__v1 100")
	if h := helperViewsOnNodes(t, c); len(h) > 0 {
		t.Errorf("left behind: %v", h)
	}
}
