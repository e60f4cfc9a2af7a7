package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	tsql "trueup/sql"
)

// rawOrders writes n new orders of day to orders_raw, as the sources would.
func rawOrders(t *testing.T, dir, day string, first, n int) {
	t.Helper()
	ctx := context.Background()
	e, err := tsql.Open(ctx, "duckdb:"+filepath.Join(dir, "warehouse.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	q := fmt.Sprintf(`INSERT INTO orders_raw SELECT event_id + %[1]d, order_id + %[1]d, CAST('%[2]s' AS DATE), ordered_at, customer_id, region, amount, 0
		FROM orders_raw WHERE order_date = CAST('2026-08-31' AS DATE) ORDER BY event_id LIMIT %[3]d`, 1_000_000_000+first, day, n)
	if err := e.Exec(ctx, q); err != nil {
		t.Fatal(err)
	}
}

// TestRunIsThePipeline: trueup run computes a window with the backfill's transform into the live
// version and, while a backfill of the table has built a version not published yet, into that
// one too, downstream tables with it, so the swap has nothing of it left to carry. Through a
// server it is how a pipeline writes the DuckDB warehouse trueup serves.
func TestRunIsThePipeline(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--config", cfg}, args...)...)
	}
	if code, out, errs := run("run", "fix_dedup_bug", "--window", "2026-07-99"); code != exitUsage || !strings.Contains(errs, "--window") {
		t.Errorf("bad window: exit %d: %s %s", code, out, errs)
	}
	if code, out, errs := run("backfill", "run", "fix_dedup_bug"); code != 0 {
		t.Fatalf("backfill run: exit %d: %s %s", code, out, errs)
	}
	rawOrders(t, dir, "2026-09-01", 0, 6)
	code, out, errs := run("run", "fix_dedup_bug", "--window", "2026-09-01")
	if code != 0 || !strings.Contains(out, "fix_dedup_bug 2026-09-01: 6 rows into orders__v1 and orders__v2 (being built)") {
		t.Fatalf("run: exit %d: %s %s", code, out, errs)
	}
	if !strings.Contains(out, "into daily_revenue__v1 and daily_revenue__v2 (being built)") {
		t.Errorf("run did not write the downstream table: %s", out)
	}
	code, out, errs = run("swap", "orders", "--to", "v2", "--dry-run")
	if code != 0 || strings.Contains(out, "will be carried") {
		t.Errorf("swap --dry-run after the pipeline wrote both versions: exit %d: %s %s", code, out, errs)
	}
	if code, out, errs := run("swap", "orders", "--to", "v2"); code != 0 {
		t.Fatalf("swap: exit %d: %s %s", code, out, errs)
	}
	if n := pipelineRows(t, dir); n != 6 {
		t.Errorf("after the swap readers see %d of the 6 new orders", n)
	}

	// Through the server that holds the warehouse file: the pipeline's next window.
	rawOrders(t, dir, "2026-09-02", 10, 4)
	srv := serveDemo(t, dir)
	code, out, errs = cli(t, "--server", srv.url, "run", "fix_dedup_bug", "--window", "2026-09-02")
	if code != 0 || !strings.Contains(out, "fix_dedup_bug 2026-09-02: 4 rows into orders__v2") {
		t.Fatalf("run --server: exit %d: %s %s", code, out, errs)
	}
}
