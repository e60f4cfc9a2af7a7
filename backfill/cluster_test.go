package backfill_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"trueup/backfill"
	"trueup/fixtures"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// The tests here build the demo's backfills on the local cluster (TRUEUP_TEST_CLUSTER, see
// scripts/clickhouse-cluster.sh): the demo warehouse laid out as trueup lays a logical table out
// on a cluster, each table sharded by its first sort column.

// clusterWarehouse is the cluster engine with CreateTable, CreateTableAs and Insert as the demo
// warehouse's loader needs them: each table's version 1 made with Cluster.CreateVersion (sharded
// by its first sort column) and filled through its Distributed table, every replica synced.
type clusterWarehouse struct {
	tsql.Engine
	c tsql.Cluster
}

func (w clusterWarehouse) CreateTable(ctx context.Context, table string, cols []tsql.Column, partition string, order []string) error {
	v := tsql.ClusterTable{Name: table, Version: 1, Columns: cols, Partition: partition, Order: order, ShardingKey: order[:1]}
	if err := w.c.CreateVersion(ctx, v); err != nil {
		return err
	}
	return w.RepointViews(ctx, []tsql.ViewPoint{{View: table, Table: v.Distributed()}})
}

func (w clusterWarehouse) CreateTableAs(ctx context.Context, table, partition string, order []string, q string, args ...any) error {
	cols, err := w.Describe(ctx, q, args...)
	if err != nil {
		return err
	}
	name, _, _ := strings.Cut(table, "__v")
	v := tsql.ClusterTable{Name: name, Version: 1, Columns: cols, Partition: partition, Order: order, ShardingKey: order[:1]}
	if err := w.c.CreateVersion(ctx, v); err != nil {
		return err
	}
	if err := w.Exec(ctx, "INSERT INTO "+w.Dialect().QuoteRelation(v.Distributed())+" "+q, args...); err != nil {
		return err
	}
	return w.sync(ctx, v.Local())
}

func (w clusterWarehouse) Insert(ctx context.Context, table string, cols []string, rows [][]any) error {
	v := tsql.ClusterTable{Name: table, Version: 1}
	if err := w.Engine.Insert(ctx, v.Distributed(), cols, rows); err != nil {
		return err
	}
	return w.sync(ctx, v.Local())
}

func (w clusterWarehouse) sync(ctx context.Context, local string) error {
	if w.Info().Cluster.Replicas < 2 {
		return nil
	}
	return w.c.OnNodes(ctx, func(ctx context.Context, _ tsql.Node, e tsql.Engine) error {
		return e.Exec(ctx, "SYSTEM SYNC REPLICA "+e.Dialect().Quote(local))
	})
}

// clusterDemo builds the demo warehouse (rows rows) and project on a fresh database of the
// test cluster and returns its URL and folder; "" without a cluster.
func clusterDemo(t *testing.T, rows int) (string, string) {
	t.Helper()
	url := sqltest.ClusterURL(t)
	if url == "" {
		return "", ""
	}
	ctx := context.Background()
	e, err := tsql.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := fixtures.Warehouse(ctx, clusterWarehouse{Engine: e, c: e.(tsql.Cluster)}, fixtures.Options{Rows: rows, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := fixtures.WriteProject(dir, url); err != nil {
		t.Fatal(err)
	}
	return url, dir
}

// shardSums is, by shard, the portable checksum and rows of a Distributed table's local table
// on the shard's first replica.
func shardSums(t *testing.T, e tsql.Engine, table string) map[int]string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	out := map[int]string{}
	err := e.(tsql.Cluster).OnNodes(ctx, func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
		if n.Replica != 1 {
			return nil
		}
		sum, rows := checksum(t, ne, table+"_local")
		mu.Lock()
		out[n.Shard] = fmt.Sprintf("%d rows, sum %d", rows, sum)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// cleanBuild builds table like like's version in one pass: the transform's rows over the whole
// demo range inserted through a Distributed table, which routes them by its sharding key.
func cleanBuild(t *testing.T, e tsql.Engine, table, like, transform string) {
	t.Helper()
	ctx := context.Background()
	if err := e.CreateTableLike(ctx, table, like); err != nil {
		t.Fatal(err)
	}
	var sql string
	for _, tr := range fixtures.Transforms() {
		if tr.Table == transform {
			sql = tr.SQL
		}
	}
	q, args, err := tsql.Expand(e.Dialect(), sql, fixtures.Params(fixtures.Window(fixtures.Start, fixtures.End)))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Exec(ctx, "INSERT INTO "+e.Dialect().QuoteRelation(table)+" "+q, args...); err != nil {
		t.Fatal(err)
	}
	w := clusterWarehouse{Engine: e, c: e.(tsql.Cluster)}
	if err := w.sync(ctx, table+"_local"); err != nil {
		t.Fatal(err)
	}
}

func sameShards(t *testing.T, what string, got, want map[int]string) {
	t.Helper()
	if len(want) < 2 {
		t.Fatalf("%s: %d shards hold rows, want 2", what, len(want))
	}
	for s, w := range want {
		if got[s] != w {
			t.Errorf("%s, shard %d: %s, want %s", what, s, got[s], w)
		}
	}
}

// shardFlaky is a cluster engine whose write of one partition of one table on one shard fails
// once (and every batch holding it until then), and which records every (table, shard, partition) written.
type shardFlaky struct {
	tsql.Engine
	sh          tsql.Sharded
	table, part string
	shard       int
	mu          sync.Mutex
	failures    int
	calls       []string
}

func (f *shardFlaky) Shards(ctx context.Context) ([]int, error) { return f.sh.Shards(ctx) }

func (f *shardFlaky) ReplacePartitionsOnShards(ctx context.Context, table string, writes []tsql.PartitionWrite, shards []int) ([]int64, error) {
	f.mu.Lock()
	fail := false
	for _, w := range writes {
		part := w.Window.Start.Format("2006-01-02")
		for _, s := range shards {
			f.calls = append(f.calls, fmt.Sprintf("%s %s shard %d", table, part, s))
			fail = fail || (table == f.table && part == f.part && s == f.shard && f.failures > 0)
		}
	}
	if fail && len(writes) == 1 {
		f.failures-- // a batch holding it fails too, uncounted: the runner then writes it alone
	}
	f.mu.Unlock()
	if fail {
		return nil, errors.New("injected failure")
	}
	return f.sh.ReplacePartitionsOnShards(ctx, table, writes, shards)
}

func (f *shardFlaky) written(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == call {
			n++
		}
	}
	return n
}

// TestBackfillOnCluster: the demo's fix_dedup_bug backfill on the cluster builds every version
// shard by shard, each partition checkpointed per shard: when one partition fails on shard 2,
// the retry writes it on shard 2 alone. Each shard of the new orders version then holds exactly
// the rows the sharding key routes there, equal to a clean single-pass build through a
// Distributed table, and the run validates; a version's tables are dropped on every node.
func TestBackfillOnCluster(t *testing.T) {
	t.Parallel() // long: beside the package's other long tests
	url, dir := clusterDemo(t, 20000)
	if url == "" {
		t.Skip("no cluster")
	}
	ctx := context.Background()
	d := openDemo(t, dir, url)
	pv, err := d.runner.DryRun(ctx, "fix_dedup_bug", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !pv.OK {
		t.Errorf("dry run on the cluster: not ok: %+v", pv.Tables)
	}
	if left := leftOnNodes(t, d.engine, "scratch"); len(left) > 0 {
		t.Errorf("the dry run left %v", left)
	}
	flaky := &shardFlaky{Engine: d.engine, sh: d.engine.(tsql.Sharded), table: "orders__v2", part: "2026-07-12", shard: 2, failures: 1}
	r := d.newRunner(t, flaky)
	run, err := r.Start(ctx, "fix_dedup_bug", backfill.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(ctx, run.ID, backfill.ExecOptions{}); err == nil || !strings.Contains(err.Error(), "1 partition of orders failed: retry it") {
		t.Fatalf("a partition failing on one shard: %v", err)
	}
	if n := flaky.written("orders__v2 2026-07-12 shard 1"); n != 1 {
		t.Errorf("2026-07-12 written %d times on shard 1 before the retry, want 1", n)
	}
	done, err := r.Execute(ctx, run.ID, backfill.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if done.State != backfill.RunValidated {
		t.Errorf("run: %s (%s): %s", done.State, done.Error, done.Validation)
	}
	if n := flaky.written("orders__v2 2026-07-12 shard 1"); n != 1 {
		t.Errorf("the retry wrote 2026-07-12 on shard 1 again (%d writes in all), which was done", n)
	}
	if n := flaky.written("orders__v2 2026-07-12 shard 2"); n < 2 {
		t.Errorf("2026-07-12 written %d times on shard 2, want the failure(s) and the retry", n)
	}
	v2 := "orders__v" + strconv.Itoa(done.Tables[0].Version)
	cleanBuild(t, d.engine, "orders_clean", v2, "orders")
	sameShards(t, v2+" against a clean build", shardSums(t, d.engine, v2), shardSums(t, d.engine, "orders_clean"))
	if n := duplicateKeys(t, d.engine, v2); n != 0 {
		t.Errorf("%s: %d duplicate order ids", v2, n)
	}

	// Dropped on every node, local tables too.
	if err := d.engine.DropTable(ctx, "orders_clean"); err != nil {
		t.Fatal(err)
	}
	err = d.engine.(tsql.Cluster).OnNodes(ctx, func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
		for _, name := range []string{"orders_clean", "orders_clean_local"} {
			if _, err := ne.Columns(ctx, name); err == nil {
				return fmt.Errorf("%s is left", name)
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// leftOnNodes lists the tables on any node whose names contain part.
func leftOnNodes(t *testing.T, e tsql.Engine, part string) []string {
	t.Helper()
	var mu sync.Mutex
	var out []string
	err := e.(tsql.Cluster).OnNodes(context.Background(), func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
		rels, err := ne.Relations(ctx)
		for _, r := range rels {
			if strings.Contains(r.Name, part) {
				mu.Lock()
				out = append(out, n.Addr+": "+r.Name)
				mu.Unlock()
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestClusterKillChild is the child of TestKillAndResumeOnCluster.
func TestClusterKillChild(t *testing.T) {
	dir := os.Getenv("TRUEUP_CLUSTER_KILL_DIR")
	if dir == "" {
		t.Skip("child process of TestKillAndResumeOnCluster")
	}
	run, _ := strconv.ParseInt(os.Getenv("TRUEUP_KILL_RUN"), 10, 64)
	d := openDemo(t, dir, os.Getenv("TRUEUP_KILL_URL"))
	os.WriteFile(filepath.Join(dir, "child.started"), nil, 0o644)
	if _, err := d.runner.Execute(context.Background(), run, backfill.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestKillAndResumeOnCluster kills a process building a run on the cluster with SIGKILL at
// random moments, resumes it, and checks that every shard of the versions it ends with equals
// the same shard of a clean run's, with no order twice.
func TestKillAndResumeOnCluster(t *testing.T) {
	if os.Getenv("TRUEUP_CLUSTER_KILL_DIR") != "" {
		t.Skip("in the child")
	}
	t.Parallel() // long: beside the package's other long tests
	url, dir := clusterDemo(t, 20000)
	if url == "" {
		t.Skip("no cluster")
	}
	ctx := context.Background()
	d := openDemo(t, dir, url)
	started := time.Now()
	clean, err := d.runner.Start(ctx, "fix_dedup_bug", backfill.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cleanDone, err := d.runner.Execute(ctx, clean.ID, backfill.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(started)
	run, err := d.runner.Start(ctx, "fix_dedup_bug", backfill.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.engine.Close()
	d.ledger.Close()

	rng := rand.New(rand.NewPCG(11, 23))
	kills := 0
	for range 3 {
		kills += killChild(t, dir, "^TestClusterKillChild$", rng, took,
			"TRUEUP_CLUSTER_KILL_DIR="+dir, "TRUEUP_KILL_URL="+url, "TRUEUP_KILL_RUN="+strconv.FormatInt(run.ID, 10))
	}
	d = openDemo(t, dir, url)
	done, err := d.runner.Execute(ctx, run.ID, backfill.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if done.State != cleanDone.State {
		t.Errorf("after %d kills and a resume: %s, the clean run: %s", kills, done.State, cleanDone.State)
	}
	for i, tbl := range clean.Tables {
		want := tbl.Table + "__v" + strconv.Itoa(tbl.Version)
		got := tbl.Table + "__v" + strconv.Itoa(done.Tables[i].Version)
		sameShards(t, fmt.Sprintf("%s killed and resumed, against the clean %s", got, want), shardSums(t, d.engine, got), shardSums(t, d.engine, want))
	}
	got := "orders__v" + strconv.Itoa(done.Tables[0].Version)
	if n := duplicateKeys(t, d.engine, got); n != 0 {
		t.Errorf("%s: %d duplicate order ids", got, n)
	}
	if left := leftOnNodes(t, d.engine, "__stage_"); len(left) > 0 {
		t.Errorf("staging tables left after the resume: %v", left)
	}
	t.Logf("%d kills at random points, clean run %s", kills, took)
}
