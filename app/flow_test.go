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

	"trueup/app"
	"trueup/backfill"
	"trueup/config"
	"trueup/fixtures"
	"trueup/ops"
	"trueup/rules"
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
			if _, err := tables.Adopt(ctx, ops.AdoptRequest{Subject: ops.Subject{Table: "sales", Actor: "ann"}, Partition: "d", Grain: "day"}); err != nil {
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
			if _, err := tables.Swap(ctx, ops.PublishRequest{Subject: ops.Subject{Table: "sales", Actor: "ann"}, To: "v2", Reason: "fix"}); err != nil {
				t.Fatal(err)
			}
			if _, err := tables.Rollback(ctx, ops.PublishRequest{Subject: ops.Subject{Table: "sales", Actor: "ann"}, Reason: "back"}); err != nil {
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

// plainProject is fixtures.PlainProject in a temporary folder, loaded.
func plainProject(t *testing.T, url string) *config.Config {
	t.Helper()
	path, err := fixtures.PlainProject(context.Background(), t.TempDir(), url)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestSwapRerunsTheTablesRules: with serve's monitor, a swap reruns the rules of the table it
// moved, so the rule that failed on v1 has v2's verdict as its latest without a Run now; a rule
// of another table is left alone.
func TestSwapRerunsTheTablesRules(t *testing.T) {
	ctx := context.Background()
	cfg := plainProject(t, sqltest.DuckDBURL(t))
	for path, body := range map[string]string{
		"rules/sales/fixed_prices.sql": "-- kind: custom\n-- description: The repriced days are at 12.\n-- partition: d\n" +
			"SELECT id, d, amount FROM sales WHERE d >= DATE '2026-07-10' AND d < DATE '2026-07-13' AND amount < 12\n",
		"rules/sales_fixed/positive.sql": "-- kind: custom\n-- description: Amounts are positive.\n-- partition: d\n" +
			"SELECT id, d FROM sales_fixed WHERE amount <= 0\n",
	} {
		p := filepath.Join(cfg.ProjectDir(""), path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := app.Open(ctx, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	targets := p.RuleTargets("")
	mon, err := p.ServedMonitor(ctx, targets, p.Outbox(log), log)
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Load(ctx); err != nil {
		t.Fatal(err)
	}
	services, _, err := p.RecoveredViews(ctx, p.Names, app.ViewsOptions{Logger: log, Rules: mon})
	if err != nil {
		t.Fatal(err)
	}
	tables := ops.NewTables(ops.TableServices(services), "w")
	if _, err := tables.Adopt(ctx, ops.AdoptRequest{Subject: ops.Subject{Table: "sales", Actor: "ann"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := mon.RunSelected(ctx, nil, nil, "ann"); err != nil {
		t.Fatal(err)
	}
	r, err := p.BackfillRunner(ctx, "", nil, log)
	if err != nil {
		t.Fatal(err)
	}
	scope, _ := backfill.ParseScope("2026-07-10", "2026-07-12")
	run, err := r.Start(ctx, "fix_sales", backfill.RunOptions{Actor: "ann", Scope: scope})
	if err == nil {
		run, err = r.Execute(ctx, run.ID, backfill.ExecOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	latest := func(rule string) (rules.Status, int64) {
		t.Helper()
		h, err := mon.History(ctx, rule, 10)
		if err != nil || len(h) == 0 {
			t.Fatalf("history of %s: %v, %v", rule, h, err)
		}
		return h[0].Status, h[0].RunID
	}
	if st, _ := latest("fixed_prices"); st != "fail" {
		t.Fatalf("fixed_prices on v1: %s", st)
	}
	_, otherRun := latest("positive")
	if _, err := tables.Swap(ctx, ops.PublishRequest{Subject: ops.Subject{Table: "sales", Actor: "ann"}, To: "v2", Reason: "fix"}); err != nil {
		t.Fatal(err)
	}
	p.Wait() // the rerun the swap started
	if st, _ := latest("fixed_prices"); st != "pass" {
		t.Errorf("fixed_prices after the swap: %s, want pass", st)
	}
	if _, id := latest("positive"); id != otherRun {
		t.Errorf("the rule of sales_fixed was rerun by a swap of sales (run %d, was %d)", id, otherRun)
	}
}
