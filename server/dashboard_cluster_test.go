package server_test

import (
	"net/http"
	"strings"
	"testing"

	"trueup/server"
	"trueup/sql/sqltest"
)

// TestDashboardCluster: a cluster target shows its shards and replicas and each node's
// reachability and server version under its row.
func TestDashboardCluster(t *testing.T) {
	e := sqltest.Cluster(t)
	if e == nil {
		t.Skip("no cluster")
	}
	ts := serve(t, server.Options{Targets: []server.Target{{Name: "lake", Engine: e}}})
	doc := getPage(t, ts.URL+"/", http.StatusOK)
	c := doc.Find(`[data-testid="cluster"][data-target="lake"]`)
	ci := e.Info().Cluster
	want := "Cluster trueup: 2 shards × 2 replicas every node answers"
	if ci.Replicas == 1 {
		want = "Cluster trueup: 2 shards × 1 replica every node answers"
	}
	if got := text(c.Find(`[data-testid="cluster-summary"]`)); got != want {
		t.Errorf("cluster summary %q, want %q", got, want)
	}
	nodes := c.Find(`[data-testid="cluster-node"]`)
	if nodes.Length() != len(ci.Nodes) {
		t.Fatalf("%d nodes shown, want %d", nodes.Length(), len(ci.Nodes))
	}
	for i, n := range ci.Nodes {
		row := nodes.Eq(i)
		if addr, _ := row.Attr("data-node"); addr != n.Addr {
			t.Errorf("node %d is %s, want %s", i, addr, n.Addr)
		}
		if v := text(row.Find(`[data-testid="node-version"]`)); !strings.HasPrefix(v, "18.16") {
			t.Errorf("node %s version %q", n.Addr, v)
		}
		if s := text(row.Find(`[data-testid="node-status"]`)); s != "reachable" {
			t.Errorf("node %s status %q", n.Addr, s)
		}
	}
}
