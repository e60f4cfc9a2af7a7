package app_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/app"
	"trueup/fault"
	"trueup/ledger"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// A project without a trueup.yaml opens its target URLs and a ledger in memory that leaves no
// file behind, or the state file it is given; a target that is not a URL is refused.
func TestOpenBare(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	url := sqltest.DuckDBURL(t)
	sqltest.Open(t, url).Close()
	p, err := app.OpenBare(ctx, dir, app.MemoryState, url, url)
	if err != nil {
		t.Fatal(err)
	}
	e, err := p.Engine(url)
	if err != nil || e.Info().Kind != "duckdb" {
		t.Fatalf("engine by URL: %v", err)
	}
	if _, err := p.Ledger.Audit(ctx, ledger.Entry{Actor: "test", Action: "bare", Outcome: "ok"}); err != nil {
		t.Fatalf("the ledger in memory takes a record: %v", err)
	}
	if log, err := p.Ledger.AuditLog(ctx, ledger.AuditFilter{}); err != nil || len(log) != 1 {
		t.Fatalf("the ledger in memory reads it back: %v %v", log, err)
	}
	p.Close()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a ledger in memory left %v in %s", entries, dir)
	}

	p, err = app.OpenBare(ctx, dir, "kept.duckdb", url)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := os.Stat(filepath.Join(dir, "kept.duckdb")); err != nil {
		t.Errorf("state file: %v", err)
	}

	if _, err := app.OpenBare(ctx, dir, app.MemoryState, "warehouse"); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("a target name without a config: %v, want invalid", err)
	}
}

// SurveyTarget tells a logical table (a view over its __v1), a plain table and a plain view
// apart, on every engine.
func TestSurveyTarget(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt, Type: "BIGINT"}}
		for _, table := range []string{"orders__v1", "customers"} {
			if err := e.CreateTable(ctx, table, cols, "", []string{"id"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Insert(ctx, "orders__v1", []string{"id"}, [][]any{{int64(1)}, {int64(2)}}); err != nil {
			t.Fatal(err)
		}
		if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v1"}}); err != nil {
			t.Fatal(err)
		}
		if err := e.Exec(ctx, "CREATE VIEW recent AS SELECT id FROM customers"); err != nil {
			t.Fatal(err)
		}
		s, err := app.SurveyTarget(ctx, "w", e)
		if err != nil {
			t.Fatal(err)
		}
		var logical []string
		for _, l := range s.Logical {
			logical = append(logical, l.Name+" "+l.Live)
		}
		got := [][]string{logical, s.Tables, s.Views}
		want := [][]string{{"orders v1"}, {"customers"}, {"recent"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("logical, tables, views (-want +got):\n%s", diff)
		}
	})
}
