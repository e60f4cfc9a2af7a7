// Package sqltest gives tests real engines: a DuckDB file in a temp dir and, when
// TRUEUP_TEST_CLICKHOUSE is set (make test starts a private server), a fresh ClickHouse database.
package sqltest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	tsql "trueup/sql"
)

// Engines returns one engine per available kind, each empty and private to the test.
// Under CI=true a missing ClickHouse fails the test; elsewhere it is skipped with a message.
func Engines(t testing.TB) []tsql.Engine {
	t.Helper()
	out := []tsql.Engine{DuckDB(t)}
	if ch := ClickHouse(t); ch != nil {
		out = append(out, ch)
	}
	return out
}

// Each runs fn as a subtest once per engine.
func Each(t *testing.T, fn func(t *testing.T, e tsql.Engine)) {
	t.Helper()
	for _, e := range Engines(t) {
		t.Run(e.Info().Kind, func(t *testing.T) { fn(t, e) })
	}
}

// DuckDB opens a DuckDB file in a temp dir.
func DuckDB(t testing.TB) tsql.Engine {
	t.Helper()
	return Open(t, DuckDBURL(t))
}

// DuckDBURL names a new DuckDB file in a temp dir.
func DuckDBURL(t testing.TB) string {
	return "duckdb:" + filepath.Join(t.TempDir(), "warehouse.duckdb")
}

// serverURL is the test server's URL that env holds; "" (what is skipped, and starts says how to
// have one) when it is not set, which under CI=true fails the test.
func serverURL(t testing.TB, env, what, starts string) string {
	t.Helper()
	base := os.Getenv(env)
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set under CI=true: run the tests with make test", env)
		}
		t.Logf("skipping %s: %s is not set (%s)", what, env, starts)
	}
	return base
}

// databaseName is a fresh random database name, t_ and ten hex digits.
func databaseName() string {
	b := make([]byte, 5)
	rand.Read(b)
	return "t_" + hex.EncodeToString(b)
}

// ClickHouseURL creates a fresh database on the test server and returns its URL, or "" when
// no server is configured outside CI.
func ClickHouseURL(t testing.TB) string {
	t.Helper()
	base := serverURL(t, "TRUEUP_TEST_CLICKHOUSE", "ClickHouse", "make test starts a server")
	if base == "" {
		return ""
	}
	ctx := context.Background()
	admin, err := tsql.Open(ctx, base)
	if err != nil {
		t.Fatalf("clickhouse: %v", err)
	}
	defer admin.Close()
	name := databaseName()
	if err := admin.Exec(ctx, "CREATE DATABASE "+admin.Dialect().Quote(name)); err != nil {
		t.Fatalf("clickhouse: create database: %v", err)
	}
	t.Cleanup(func() {
		a, err := tsql.Open(context.Background(), base)
		if err == nil {
			a.Exec(context.Background(), "DROP DATABASE IF EXISTS "+a.Dialect().Quote(name))
			a.Close()
		}
	})
	i := strings.LastIndexByte(base, '/')
	if i < len("clickhouse://") {
		return base + "/" + name
	}
	return base[:i+1] + name
}

// ClickHouse opens a fresh ClickHouse database, or returns nil when none is configured outside CI.
func ClickHouse(t testing.TB) tsql.Engine {
	t.Helper()
	return openFresh(t, ClickHouseURL(t))
}

// openFresh opens the url of a fresh database (Open), nil for none ("").
func openFresh(t testing.TB, url string) tsql.Engine {
	t.Helper()
	if url == "" {
		return nil
	}
	return Open(t, url)
}

// Open opens url and closes it when the test ends.
func Open(t testing.TB, url string) tsql.Engine {
	t.Helper()
	e, err := tsql.Create(context.Background(), url)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// ClusterURL creates a fresh database on every node of the test cluster (TRUEUP_TEST_CLUSTER,
// started by scripts/clickhouse-cluster.sh) and returns the cluster URL naming it, or "" when no
// cluster is configured outside CI.
func ClusterURL(t testing.TB) string {
	t.Helper()
	base := serverURL(t, "TRUEUP_TEST_CLUSTER", "the ClickHouse cluster", "scripts/clickhouse-cluster.sh starts one")
	if base == "" {
		return ""
	}
	name := databaseName()
	onNodes := func(stmt string) error {
		ctx := context.Background()
		admin, err := tsql.Open(ctx, base)
		if err != nil {
			return err
		}
		defer admin.Close()
		return admin.(tsql.Cluster).OnNodes(ctx, func(ctx context.Context, _ tsql.Node, e tsql.Engine) error {
			return e.Exec(ctx, stmt+" "+e.Dialect().Quote(name))
		})
	}
	if err := onNodes("CREATE DATABASE"); err != nil {
		t.Fatalf("clickhouse cluster: create database: %v", err)
	}
	t.Cleanup(func() { onNodes("DROP DATABASE IF EXISTS") })
	// clickhouse://hosts/db?cluster=NAME: the database is the path.
	hosts := strings.Index(base, "://") + 3
	slash := strings.IndexByte(base[hosts:], '/')
	query := strings.IndexByte(base, '?')
	if slash < 0 || query < 0 {
		t.Fatalf("TRUEUP_TEST_CLUSTER %s is not clickhouse://hosts/db?cluster=NAME", base)
	}
	return base[:hosts+slash+1] + name + base[query:]
}

// Cluster opens a fresh database on the test cluster, or returns nil when none is configured
// outside CI.
func Cluster(t testing.TB) tsql.Engine {
	t.Helper()
	return openFresh(t, ClusterURL(t))
}

// ClusterLoader wraps a cluster engine (Cluster) so a test's CreateTable and Insert lay a table
// out as trueup does on a cluster: version 1's local tables on every node, the Distributed table
// over them (rows placed at random), the view of the table's name on every node over that. An
// Insert returns once every replica has the rows, so a read right after sees them all.
func ClusterLoader(e tsql.Engine) tsql.Engine { return clusterLoader{Engine: e, c: e.(tsql.Cluster)} }

// ClusterLoaderBy is ClusterLoader with rows sharded by a hash of the columns key.
func ClusterLoaderBy(e tsql.Engine, key ...string) tsql.Engine {
	return clusterLoader{Engine: e, c: e.(tsql.Cluster), key: key}
}

type clusterLoader struct {
	tsql.Engine
	c   tsql.Cluster
	key []string
}

func (l clusterLoader) CreateTable(ctx context.Context, table string, cols []tsql.Column, partition string, order []string) error {
	v := tsql.ClusterTable{Name: table, Version: 1, Columns: cols, Partition: partition, Order: order, ShardingKey: l.key}
	if err := l.c.CreateVersion(ctx, v); err != nil {
		return err
	}
	return l.RepointViews(ctx, []tsql.ViewPoint{{View: table, Table: v.Distributed()}})
}

func (l clusterLoader) Insert(ctx context.Context, table string, cols []string, rows [][]any) error {
	// into the Distributed table, which returns once every replica has the rows
	return l.Engine.Insert(ctx, tsql.ClusterTable{Name: table, Version: 1}.Distributed(), cols, rows)
}

// OwnCluster starts a cluster of the test's own with scripts/clickhouse-cluster.sh (for a test
// that stops nodes: not the shared one) and returns its URL and a function running the script's
// CMD (stop-node, start-node) on node k. The cluster is killed when the test ends, not shut down
// (18.16 takes about 5 s per replicated table to shut down cleanly). It is skipped, or fails
// under CI=true, where no cluster is configured.
func OwnCluster(t testing.TB) (string, func(cmd string, k int)) {
	t.Helper()
	if serverURL(t, "TRUEUP_TEST_CLUSTER", "the ClickHouse cluster", "scripts/clickhouse-cluster.sh starts one") == "" {
		t.SkipNow()
	}
	script := filepath.Join(repoRoot(t), "scripts", "clickhouse-cluster.sh")
	dir := t.TempDir()
	var stderr strings.Builder
	cmd := exec.Command(script, "start", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("start a cluster: %v\n%s", err, stderr.String())
	}
	url := strings.TrimSpace(string(out))
	nodes := strings.Count(url, ",") + 1
	t.Cleanup(func() {
		for k := 1; k <= nodes; k++ {
			exec.Command(script, "stop-node", dir, strconv.Itoa(k)).Run()
		}
		exec.Command(script, "stop", dir).Run()
	})
	return url, func(cmd string, k int) {
		t.Helper()
		if out, err := exec.Command(script, cmd, dir, strconv.Itoa(k)).CombinedOutput(); err != nil {
			t.Fatalf("%s %d: %v\n%s", cmd, k, err, out)
		}
	}
}

// repoRoot is the directory holding go.mod, above the test's package.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}
