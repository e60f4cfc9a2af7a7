package sql_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"trueup/fault"
	tsql "trueup/sql"
)

// perNode is, by node (shard/replica), a count a query on that node gives.
func perNode(t *testing.T, c tsql.Cluster, query string) map[tsql.Node]int64 {
	t.Helper()
	var mu sync.Mutex
	out := map[tsql.Node]int64{}
	err := c.OnNodes(context.Background(), func(ctx context.Context, n tsql.Node, e tsql.Engine) error {
		res, err := e.Query(ctx, query)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		out[tsql.Node{Shard: n.Shard, Replica: n.Replica}] = tsql.AsInt64(res.Rows[0][0])
		return nil
	})
	if err != nil {
		t.Fatalf("%s on every node: %v", query, err)
	}
	return out
}

// spread checks that local's rows are split over the shards, each replica of a shard holding the
// same ones (right after the write, with no sync of its own), adding up to want.
func spread(t *testing.T, c tsql.Cluster, local string, want int64) {
	t.Helper()
	got := perNode(t, c, "SELECT count() FROM "+local)
	var sum int64
	for n, k := range got {
		if n.Replica == 1 {
			sum += k
			if k == 0 {
				t.Errorf("%s: shard %d holds none of the rows", local, n.Shard)
			}
		}
		if first := got[tsql.Node{Shard: n.Shard, Replica: 1}]; k != first {
			t.Errorf("%s: replica %d of shard %d holds %d rows, replica 1 %d", local, n.Replica, n.Shard, k, first)
		}
	}
	if sum != want {
		t.Errorf("%s: the shards hold %d rows (%v), want %d", local, sum, got, want)
	}
}

// TestClusterCreateTable: CreateTable and CreateTableAs on a cluster make a Distributed table
// over local tables on every node, sharded by the order key's first column; what Insert,
// CreateTableAs and an INSERT … SELECT write is on every replica when they return; a name any
// node has is refused with nothing dropped, and a create whose fill fails leaves nothing.
func TestClusterCreateTable(t *testing.T) {
	e, c := cluster(t)
	ctx := context.Background()
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt, Type: "UInt64"}, {Name: "d", Kind: tsql.TypeDate}, {Name: "x", Kind: tsql.TypeInt}}
	if err := e.CreateTable(ctx, "events", cols, "d", []string{"id"}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Query(ctx, "SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'events'")
	if err != nil || len(res.Rows) != 1 || !strings.Contains(tsql.AsText(res.Rows[0][0]), "cityHash64(id)") {
		t.Fatalf("events: %v %v, want a Distributed table sharded by cityHash64(id)", res, err)
	}
	var rows [][]any
	for i := range 200 {
		rows = append(rows, []any{uint64(i), time.Date(2026, 7, 1+i%10, 0, 0, 0, 0, time.UTC), int64(i)})
	}
	if err := e.Insert(ctx, "events", []string{"id", "d", "x"}, rows); err != nil {
		t.Fatal(err)
	}
	spread(t, c, "events_local", 200)

	from, arg := e.Dialect().Bind(tsql.Date(time.Date(2026, 7, 3, 0, 0, 0, 0, time.UTC)))
	q := "SELECT d, sum(x) AS x, count() AS n FROM events WHERE d >= " + from + " GROUP BY d"
	if err := e.CreateTableAs(ctx, "by_day", "d", []string{"d"}, q, arg); err != nil {
		t.Fatal(err)
	}
	spread(t, c, "by_day_local", 8)
	described, err := e.(interface {
		Describe(context.Context, string, ...any) ([]tsql.Column, error)
	}).Describe(ctx, q, arg)
	if err != nil {
		t.Fatal(err)
	}
	made, err := e.Columns(ctx, "by_day")
	if err != nil || !slices.Equal(made, described) {
		t.Errorf("by_day has columns %v (%v), the query's are %v", made, err, described)
	}

	if err := e.Exec(ctx, "INSERT INTO events (id, d, x) SELECT id + 1000, d, x FROM events WHERE id < ?", 50); err != nil {
		t.Fatal(err)
	}
	spread(t, c, "events_local", 250)

	// A name a node has: refused, nothing dropped.
	if err := e.CreateTable(ctx, "events", cols, "d", []string{"id"}); fault.Of(err) != fault.Conflict {
		t.Errorf("create events again: %v, want a conflict", err)
	}
	if err := e.CreateTableAs(ctx, "by_day", "d", nil, q, arg); fault.Of(err) != fault.Conflict {
		t.Errorf("create by_day again: %v, want a conflict", err)
	}
	spread(t, c, "events_local", 250)
	spread(t, c, "by_day_local", 8)

	// A query that cannot be described creates nothing; one whose rows fail midway leaves nothing.
	left := func(name string) {
		t.Helper()
		for n, k := range perNode(t, c, "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name IN ('"+name+"', '"+name+"_local')") {
			if k != 0 {
				t.Errorf("node %d/%d: %d of %s, %s_local left", n.Shard, n.Replica, k, name, name)
			}
		}
	}
	err = e.CreateTableAs(ctx, "bad", "", nil, "SELECT nope FROM events")
	if err == nil {
		t.Error("create bad from a query naming no column: no error")
	}
	left("bad")
	err = e.CreateTableAs(ctx, "bad", "d", []string{"id"}, "SELECT id, d, throwIf(x = 150) AS boom FROM events")
	if err == nil || !strings.Contains(err.Error(), "create bad") {
		t.Errorf("create bad from a query failing midway: %v", err)
	}
	left("bad")
	if errors.Is(err, fault.Conflict.Sentinel()) {
		t.Errorf("create bad: %v is a conflict", err)
	}
}
