package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"trueup/ledger/ledgertest"
	"trueup/ops"
	"trueup/server"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// TestDashboardCluster: a cluster target shows its shards and replicas and each node's
// reachability and server version under its row.
func TestDashboardCluster(t *testing.T) {
	e := sqltest.Cluster(t)
	if e == nil {
		t.Skip("no cluster")
	}
	ctx := t.Context()
	load := sqltest.ClusterLoader(e)
	if err := load.CreateTable(ctx, "orders", []tsql.Column{{Name: "id", Kind: tsql.TypeInt}}, "", []string{"id"}); err != nil {
		t.Fatal(err)
	}
	if err := load.Insert(ctx, "orders", []string{"id"}, [][]any{{int64(1)}, {int64(2)}}); err != nil {
		t.Fatal(err)
	}
	s := views.New("lake", e, ledgertest.Open(t))
	ts := serve(t, server.Options{Targets: []server.Target{{Name: "lake", Engine: e}}, Tables: ops.NewTables(ops.TableServices{"lake": s}, "lake")})
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

// TestTablePageClusterNodes: a logical table's page on a cluster says which version each node
// reads.
func TestTablePageClusterNodes(t *testing.T) {
	e := sqltest.Cluster(t)
	if e == nil {
		t.Skip("no cluster")
	}
	ctx := t.Context()
	load := sqltest.ClusterLoader(e)
	if err := load.CreateTable(ctx, "orders", []tsql.Column{{Name: "id", Kind: tsql.TypeInt}}, "", []string{"id"}); err != nil {
		t.Fatal(err)
	}
	s := views.New("lake", e, ledgertest.Open(t))
	ts := serve(t, server.Options{Targets: []server.Target{{Name: "lake", Engine: e}}, Tables: ops.NewTables(ops.TableServices{"lake": s}, "lake")})
	doc := getPage(t, ts.URL+"/tables/orders?target=lake", http.StatusOK)
	rows := doc.Find(`[data-testid="node-version"]`)
	if rows.Length() != len(e.Info().Cluster.Nodes) {
		t.Fatalf("%d node rows, want %d", rows.Length(), len(e.Info().Cluster.Nodes))
	}
	rows.Each(func(_ int, r *goquery.Selection) {
		if got := text(r.Find(`[data-testid="node-reads"]`)); got != "v1" {
			t.Errorf("node %s reads %q, want v1", r.AttrOr("data-node", "?"), got)
		}
	})
	if doc.Find(`[data-testid="nodes-mixed"], [data-testid="nodes-down"]`).Length() != 0 {
		t.Error("a banner about the nodes, with every node on v1")
	}

	// One node alone switched to v2, as a swap that lost the others part-way leaves it: the
	// table's page says so, and the dashboard lists it as needing attention.
	v2 := tsql.ClusterTable{Name: "orders", Version: 2, Columns: []tsql.Column{{Name: "id", Kind: tsql.TypeInt}}, Order: []string{"id"}}
	if err := e.(tsql.Cluster).CreateVersion(ctx, v2); err != nil {
		t.Fatal(err)
	}
	first := e.Info().Cluster.Nodes[0].Addr
	if _, err := e.(tsql.NodeRepointer).RepointNodes(ctx, []tsql.ViewPoint{{View: "orders", Table: v2.Distributed()}}, []string{first}); err != nil {
		t.Fatal(err)
	}
	doc = getPage(t, ts.URL+"/tables/orders?target=lake", http.StatusOK)
	if doc.Find(`[data-testid="nodes-mixed"]`).Length() != 1 {
		t.Error("no banner saying the nodes read different versions")
	}
	dash := getPage(t, ts.URL+"/", http.StatusOK)
	item := dash.Find(`[data-testid="work-swaps"] [data-testid="work-item"][data-name="orders"]`)
	if got := text(item.Find(".status")); got != "half done" {
		t.Errorf("dashboard's work item for orders: status %q, want half done (section: %q)", got, text(dash.Find(`[data-testid="work"]`)))
	}
}
