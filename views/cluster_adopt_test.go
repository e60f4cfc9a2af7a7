package views_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"trueup/fault"
	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// legacyPair makes what a team has before trueup: a Distributed table name over name_local on
// every node, sharded by id, holding rows ids.
func legacyPair(t *testing.T, e tsql.Engine, name string, rows int) {
	t.Helper()
	ctx := context.Background()
	c := e.(tsql.Cluster)
	ci := e.Info().Cluster
	res, err := e.Query(ctx, "SELECT currentDatabase()")
	if err != nil {
		t.Fatal(err)
	}
	db := tsql.AsText(res.Rows[0][0])
	engine, on := "MergeTree()", ""
	if ci.DistributedDDL {
		on = " ON CLUSTER " + ci.Name
	}
	if ci.Replicas > 1 {
		engine = fmt.Sprintf("ReplicatedMergeTree('/clickhouse/tables/{shard}/%s/%s_local', '{replica}')", db, name)
	}
	stmts := []string{
		fmt.Sprintf("CREATE TABLE %s.%s_local%s (id Int64, d Date) ENGINE = %s PARTITION BY d ORDER BY id", db, name, on, engine),
		fmt.Sprintf("CREATE TABLE %s.%s%s AS %s.%s_local ENGINE = Distributed('%s', '%s', '%s_local', cityHash64(id))", db, name, on, db, name, ci.Name, db, name),
	}
	if ci.DistributedDDL {
		for _, s := range stmts {
			if err := e.Exec(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	} else if err := c.OnNodes(ctx, func(ctx context.Context, _ tsql.Node, ne tsql.Engine) error {
		for _, s := range stmts {
			if err := ne.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var data [][]any
	for i := range rows {
		data = append(data, []any{int64(i), time.Date(2026, 7, 1+i%3, 0, 0, 0, 0, time.UTC)})
	}
	if err := e.Insert(ctx, name, []string{"id", "d"}, data); err != nil {
		t.Fatal(err)
	}
	if ci.Replicas > 1 {
		if err := c.OnNodes(ctx, func(ctx context.Context, _ tsql.Node, ne tsql.Engine) error {
			return ne.Exec(ctx, "SYSTEM SYNC REPLICA "+name+"_local")
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// layout is, per node, what name is there (its engine and what it reads) and the rows it answers.
func layout(t *testing.T, e tsql.Engine, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var mu sync.Mutex
	err := e.(tsql.Cluster).OnNodes(context.Background(), func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
		res, err := ne.Query(ctx, "SELECT name, engine FROM system.tables WHERE database = currentDatabase() AND name LIKE ? ORDER BY name", name+"%")
		if err != nil {
			return err
		}
		var tables []string
		for _, r := range res.Rows {
			tables = append(tables, tsql.AsText(r[0])+":"+tsql.AsText(r[1]))
		}
		cnt, err := ne.Query(ctx, "SELECT count() FROM "+name)
		if err != nil {
			return err
		}
		src, _ := ne.ViewSource(ctx, name)
		mu.Lock()
		out[n.Addr] = fmt.Sprintf("%s reads %q, %d rows", strings.Join(tables, " "), src, tsql.AsInt64(cnt.Rows[0][0]))
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func everyNodeIs(t *testing.T, got map[string]string, want string) {
	t.Helper()
	if len(got) == 0 {
		t.Fatal("no nodes")
	}
	for node, g := range got {
		if g != want {
			t.Errorf("node %s: %s\nwant %s", node, g, want)
		}
	}
}

// TestAdoptOnCluster: an existing Distributed + local pair becomes v1 on every node (the local
// table renamed to ev__v1_local, a Distributed ev__v1 over it, the view ev reading it), recorded
// live with its rows; the undo puts the pair back as ev over ev_local on every node.
func TestAdoptOnCluster(t *testing.T) {
	e := sqltest.Cluster(t)
	if e == nil {
		t.Skip("no cluster")
	}
	ctx := context.Background()
	legacyPair(t, e, "ev", 300)
	s := views.New("w", e, ledgertest.Open(t))
	p, err := s.Adopt(ctx, views.AdoptRequest{Table: "ev", Actor: "ann"})
	if err != nil || p.State != views.PublishDone {
		t.Fatalf("adopt: %+v %v", p, err)
	}
	everyNodeIs(t, layout(t, e, "ev"), `ev:View ev__v1:Distributed ev__v1_local:`+localEngine(e)+` reads "ev__v1", 300 rows`)
	l, err := s.Versions(ctx, "ev")
	if err != nil || len(l.Versions) != 1 || !l.Versions[0].Live || l.Versions[0].Rows != 300 {
		t.Errorf("versions after the adopt: %+v, %v", l.Versions, err)
	}
	// the new Distributed table keeps the pair's sharding key
	res, err := e.Query(ctx, "SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'ev__v1'")
	if err != nil || !strings.Contains(tsql.AsText(res.Rows[0][0]), "cityHash64(id)") {
		t.Errorf("ev__v1: %v %v", res, err)
	}
	if _, err := s.Adopt(ctx, views.AdoptRequest{Table: "ev", Actor: "ann"}); err == nil {
		t.Error("adopting an adopted table again went through")
	}

	p, err = s.Unadopt(ctx, views.AdoptRequest{Table: "ev", Actor: "ann"})
	if err != nil || p.State != views.PublishDone {
		t.Fatalf("undo: %+v %v", p, err)
	}
	everyNodeIs(t, layout(t, e, "ev"), `ev:Distributed ev_local:`+localEngine(e)+` reads "", 300 rows`)
}

func localEngine(e tsql.Engine) string {
	if e.Info().Cluster.Replicas > 1 {
		return "ReplicatedMergeTree"
	}
	return "MergeTree"
}

// TestAdoptOnClusterNodeDown: with one node stopped, the adopt is refused naming the node, and
// nothing changed on the nodes that answer. It stops a node, so it runs on a cluster of its own.
func TestAdoptOnClusterNodeDown(t *testing.T) {
	url, node := sqltest.OwnCluster(t)
	e := sqltest.Open(t, url)
	ctx := context.Background()
	legacyPair(t, e, "ev", 100)
	nodes := e.Info().Cluster.Nodes
	lost := nodes[len(nodes)-1]
	node("stop-node", len(nodes))
	s := views.New("w", e, ledgertest.Open(t))
	_, err := s.Adopt(ctx, views.AdoptRequest{Table: "ev", Actor: "ann"})
	if !errors.Is(err, tsql.ErrUnreachable) || fault.Of(err) != fault.Refused || !strings.Contains(err.Error(), lost.Addr) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("adopt with %s stopped: %v", lost, err)
	}
	got := map[string]string{}
	var mu sync.Mutex
	e.(tsql.Cluster).OnNodes(ctx, func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
		res, err := ne.Query(ctx, "SELECT groupArray(name) FROM (SELECT name FROM system.tables WHERE database = currentDatabase() AND name LIKE 'ev%' ORDER BY name)")
		if err != nil {
			return err
		}
		mu.Lock()
		got[n.Addr] = fmt.Sprint(res.Rows[0][0])
		mu.Unlock()
		return nil
	})
	for node, tables := range got {
		if tables != "[ev ev_local]" {
			t.Errorf("node %s has %s after the refused adopt", node, tables)
		}
	}
	if len(got) != len(nodes)-1 {
		t.Errorf("%d nodes answered, want %d", len(got), len(nodes)-1)
	}
}
