package ops_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"trueup/fault"
	"trueup/ledger"
	"trueup/ops"
	"trueup/ops/client"
	"trueup/server"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// twoTargets is a project of two targets: "duck" (the default) with orders and shared, and
// "other" (ClickHouse when the tests have one, else a second DuckDB) with events and shared.
func twoTargets(t *testing.T) ops.TableServices {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	other := sqltest.DuckDB(t)
	if url := sqltest.ClickHouseURL(t); url != "" {
		other = sqltest.Open(t, url)
	}
	out := ops.TableServices{}
	for name, e := range map[string]tsql.Engine{"duck": sqltest.DuckDB(t), "other": other} {
		tables := []string{"orders", "shared"}
		if name == "other" {
			tables = []string{"events", "shared"}
		}
		for _, table := range tables {
			cols := []tsql.Column{{Name: "id", Type: "INTEGER", Kind: tsql.TypeInt}}
			if err := e.CreateTable(ctx, views.Physical(table, 1), cols, "", []string{"id"}); err != nil {
				t.Fatal(err)
			}
			if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: table, Table: views.Physical(table, 1)}}); err != nil {
				t.Fatal(err)
			}
		}
		s := views.New(name, e, l)
		if _, err := views.Recover(ctx, s); err != nil {
			t.Fatal(err)
		}
		out[name] = s
	}
	return out
}

// One rule says which target a table request means, whether it comes from the CLI, a page or the
// API: the named target; else the default target when it has the table; else the only, or the
// first, target that has it. The same answers come through a server (ops/client).
func TestTablesTarget(t *testing.T) {
	services := twoTargets(t)
	local := ops.NewTables(services, "duck")
	ts := httptest.NewServer(server.New(server.Options{Tables: local}).Handler())
	t.Cleanup(ts.Close)
	c, err := client.New(ts.URL, "", "cli:test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, mode := range []struct {
		name string
		t    ops.Tables
	}{{"local", local}, {"server", c.Tables()}} {
		t.Run(mode.name, func(t *testing.T) {
			for _, tc := range []struct {
				target, table, want string
				kind                fault.Kind
			}{
				{"", "orders", "duck", fault.None},
				{"", "events", "other", fault.None},
				{"", "shared", "duck", fault.None}, // both have it: the default
				{"other", "shared", "other", fault.None},
				{"nowhere", "orders", "", fault.NotFound},
				{"", "missing", "", fault.NotFound},
			} {
				l, err := mode.t.Versions(ctx, ops.VersionsRequest{Target: tc.target, Table: tc.table})
				if k := fault.Of(err); k != tc.kind {
					t.Errorf("%s/%s: kind %v (%v), want %v", tc.target, tc.table, k, err, tc.kind)
					continue
				}
				if err == nil && (l.Target != tc.want || l.Live != "v1") {
					t.Errorf("%s/%s: target %s live %s, want %s v1", tc.target, tc.table, l.Target, l.Live, tc.want)
				}
			}
			_, err := mode.t.PlanSwap(ctx, ops.PublishRequest{Subject: ops.Subject{Table: "orders"}})
			if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "which version") {
				t.Errorf("swap without to: %v", err)
			}
			_, err = mode.t.Swap(ctx, ops.PublishRequest{Subject: ops.Subject{Table: "orders", Actor: "ann"}, To: "v9"})
			if k := fault.Of(err); k != fault.NotFound && k != fault.Invalid {
				t.Errorf("swap to a version that does not exist: kind %v (%v)", k, err)
			}
		})
	}
}
