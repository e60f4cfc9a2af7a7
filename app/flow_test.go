package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"trueup/app"
	"trueup/backfill"
	"trueup/config"
	"trueup/ops"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestPlainTableLifeWithAReader is a plain table's first backfill as the services run it, in
// one process with a reader querying the table from the first step to the last: adopt, build
// v2, swap, roll back. On DuckDB no read fails and every read sees all of its rows; on
// ClickHouse 18.16 the reads that fell in the adopt's moment without the name are counted and
// reported.
func TestPlainTableLifeWithAReader(t *testing.T) {
	urls := map[string]string{"duckdb": sqltest.DuckDBURL(t)}
	if u := sqltest.ClickHouseURL(t); u != "" {
		urls["clickhouse"] = u
	}
	for name, url := range urls {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			cfg := plainProject(t, url)
			p, err := app.Open(ctx, cfg, "")
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			var reads, failed atomic.Int64
			var firstErr atomic.Value
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				eng := p.Targets["w"]
				for {
					select {
					case <-stop:
						return
					default:
					}
					res, err := eng.Query(ctx, "SELECT count(*) FROM sales")
					reads.Add(1)
					if err != nil || tsql.AsInt64(res.Rows[0][0]) != 124 {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, fmt.Sprint(err, res))
					}
				}
			})
			for reads.Load() < 10 {
			}
			services, _, err := p.RecoveredViews(ctx, p.Names, app.ViewsOptions{Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			tables := ops.NewTables(ops.TableServices(services), "w")
			if _, err := tables.Adopt(ctx, ops.AdoptRequest{Table: "sales", Partition: "d", Grain: "day", Actor: "ann"}); err != nil {
				t.Fatal(err)
			}
			r, err := p.BackfillRunner(ctx, "", nil, log)
			if err != nil {
				t.Fatal(err)
			}
			scope, err := backfill.ParseScope("2026-07-10", "2026-07-12")
			if err != nil {
				t.Fatal(err)
			}
			run, err := r.Start(ctx, "fix_sales", backfill.RunOptions{Actor: "ann", Scope: scope})
			if err != nil {
				t.Fatal(err)
			}
			if run, err = r.Execute(ctx, run.ID, backfill.ExecOptions{}); err != nil || run.State != backfill.RunValidated {
				t.Fatalf("the run: %+v, %v", run, err)
			}
			if _, err := tables.Swap(ctx, ops.PublishRequest{Table: "sales", To: "v2", Actor: "ann", Reason: "fix"}); err != nil {
				t.Fatal(err)
			}
			if _, err := tables.Rollback(ctx, ops.PublishRequest{Table: "sales", Actor: "ann", Reason: "back"}); err != nil {
				t.Fatal(err)
			}
			for n := reads.Load(); reads.Load() < n+10; {
			}
			close(stop)
			wg.Wait()
			t.Logf("%s: %d reads of sales from adopt to rollback, %d failed (%v)", name, reads.Load(), failed.Load(), firstErr.Load())
			if name == "duckdb" && failed.Load() != 0 {
				t.Errorf("%d of %d reads failed on DuckDB: %v", failed.Load(), reads.Load(), firstErr.Load())
			}
		})
	}
}

// plainProject is a project over a warehouse with the plain table sales and a backfill of it
// from sales_fixed; it returns the loaded config.
func plainProject(t *testing.T, url string) *config.Config {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	e, err := tsql.Create(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate}, {Name: "amount", Kind: tsql.TypeInt}}
	for name, amount := range map[string]int64{"sales": 10, "sales_fixed": 12} {
		var rows [][]any
		for i := range 124 {
			rows = append(rows, []any{int64(i), time.Date(2026, 7, 1+i/4, 0, 0, 0, 0, time.UTC), amount})
		}
		if err := e.CreateTable(ctx, name, cols, "d", []string{"id"}); err != nil {
			t.Fatal(err)
		}
		if err := e.Insert(ctx, name, []string{"id", "d", "amount"}, rows); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	files := map[string]string{
		"trueup.yaml": fmt.Sprintf("state: state.duckdb\ndefault_target: w\ntargets:\n  w:\n    url: %q\n", url),
		"backfills/fix_sales.sql": `-- table: sales
-- partition: d
-- grain: day
-- key: id
-- reason: bug
-- objective: sales_fixed has the corrected amounts.
-- expect: inside scope rows +0..0%, sum(amount) +19..21%; outside scope identical
SELECT id, d, amount FROM sales_fixed WHERE d >= $start AND d < $end
`,
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(filepath.Join(dir, "trueup.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
