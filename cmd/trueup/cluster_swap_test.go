package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trueup/ledger"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// TestSwapResumeOnCluster: a swap on a cluster target that lost a node between the prepare and
// the switch is half done; `trueup versions` says which node reads which version, `trueup swap
// --resume` is refused while the node is down and completes the swap on every node once it
// answers. It stops a node, so it runs on a cluster of its own.
func TestSwapResumeOnCluster(t *testing.T) {
	url, node := sqltest.OwnCluster(t)
	ctx := context.Background()
	e := sqltest.Open(t, url)
	c := e.(tsql.Cluster)
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate}}
	for n, rows := range map[int]int{1: 20, 2: 15} {
		v := tsql.ClusterTable{Name: "orders", Version: n, Columns: cols, Partition: "d", Order: []string{"id"}, ShardingKey: []string{"id"}}
		if err := c.CreateVersion(ctx, v); err != nil {
			t.Fatal(err)
		}
		var data [][]any
		for i := range rows {
			data = append(data, []any{int64(i), time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)})
		}
		if err := e.Insert(ctx, v.Distributed(), []string{"id", "d"}, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v1"}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "trueup.yaml")
	if err := os.MkdirAll(filepath.Join(dir, "rules", "orders"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules", "orders", "unique_id.sql"), []byte("-- kind: uniqueness\n-- table: orders\n-- columns: id\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("state: state.duckdb\ndefault_target: w\ntargets:\n  w: {url: '"+url+"'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// the swap, half done: the last node is killed between the prepare and the switch
	l, err := ledger.Open(ctx, filepath.Join(dir, "state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	s := views.New("w", e, l)
	if _, err := s.Versions(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	rows, sum, err := views.Fingerprint(ctx, e, "orders__v2")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store().Put(ctx, views.Version{Target: "w", Table: "orders", N: 2, State: views.StateValidated, BuiltBy: "ann", Rows: rows, Checksum: sum}); err != nil {
		t.Fatal(err)
	}
	last := len(e.Info().Cluster.Nodes)
	lost := e.Info().Cluster.Nodes[last-1].Addr
	e.(tsql.NodeRepointer).AfterPrepare(func() { node("stop-node", last) })
	_, err = s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
	e.(tsql.NodeRepointer).AfterPrepare(nil)
	if !errors.Is(err, views.ErrHalfDone) {
		t.Fatalf("swap losing a node: %v", err)
	}
	l.Close()

	run := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--config", cfg}, args...)...)
	}
	code, out2, errs := run("versions", "orders")
	if code != 0 || !strings.Contains(out2, "not all answer") || strings.Count(out2, ": reads v2") != last-1 ||
		!strings.Contains(out2, lost+" (shard 2, replica 2): does not answer") || !strings.Contains(out2, "busy:") {
		t.Errorf("versions during a half-done swap: exit %d\n%s\n%s", code, out2, errs)
	}
	// check shows the topology, the lost node unreachable, in text and JSON
	code, out2, errs = run("check")
	if code != 0 || !strings.Contains(out2, "target w: cluster trueup, 2 shards × 2 replicas, 1 of 4 nodes do not answer") ||
		strings.Count(out2, "reachable, ClickHouse 18.16") != 3 || !strings.Contains(out2, "shard 2 replica 2  "+lost+"  UNREACHABLE") {
		t.Errorf("check with a node down: exit %d\n%s\n%s", code, out2, errs)
	}
	code, out2, errs = run("check", "--format", "json")
	var checked struct {
		Results  []map[string]any  `json:"results"`
		Clusters []clusterTopology `json:"clusters"`
	}
	if err := json.Unmarshal([]byte(out2), &checked); err != nil || code != 0 || len(checked.Results) != 1 || len(checked.Clusters) != 1 ||
		len(checked.Clusters[0].Nodes) != 4 || checked.Clusters[0].Nodes[3].Reachable || !checked.Clusters[0].Nodes[0].Reachable {
		t.Errorf("check --format json with a node down: exit %d %v\n%s\n%s", code, err, out2, errs)
	}

	code, _, errs = run("swap", "orders", "--resume")
	if code == 0 || !strings.Contains(errs, lost) || !strings.Contains(errs, "stays half done") {
		t.Errorf("resume with the node down: exit %d: %s", code, errs)
	}
	code, _, errs = run("swap", "orders", "--undo")
	if code != 2 {
		t.Errorf("--undo without --resume: exit %d: %s", code, errs)
	}

	node("start-node", last)
	code, out2, errs = run("swap", "orders", "--resume")
	if code != 0 || !strings.Contains(out2, "swap #") || !strings.Contains(out2, " done: resumed by ") || strings.Count(out2, "): switched") != last {
		t.Errorf("resume: exit %d\n%s\n%s", code, out2, errs)
	}
	code, out2, errs = run("versions", "orders")
	if code != 0 || strings.Contains(out2, "nodes (") || strings.Count(out2, ": reads v2") != last || !strings.Contains(out2, "live v2") {
		t.Errorf("versions after the resume: exit %d\n%s\n%s", code, out2, errs)
	}
	code, _, errs = run("swap", "orders", "--resume")
	if code == 0 || !strings.Contains(errs, "nothing to resume") {
		t.Errorf("resume with nothing half done: exit %d: %s", code, errs)
	}
}
