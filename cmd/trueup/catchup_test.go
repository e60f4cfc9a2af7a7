package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	tsql "trueup/sql"
)

// pipelineWrite writes n orders of day, with ids from 10^9 + first, to orders_raw and to the
// orders version table (the write target), as the demo's pipeline would; it returns the ids' floor.
func pipelineWrite(t *testing.T, dir, table, day string, first, n int) {
	t.Helper()
	ctx := context.Background()
	e, err := tsql.Open(ctx, "duckdb:"+filepath.Join(dir, "warehouse.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	id := int64(1_000_000_000 + first)
	for _, q := range []string{
		`INSERT INTO orders_raw SELECT ? + row_number() OVER (ORDER BY event_id) AS event_id, ? + row_number() OVER (ORDER BY event_id) AS order_id,
			CAST(? AS DATE) AS order_date, ordered_at, customer_id, region, amount, 0 AS delay_days FROM (SELECT * FROM orders_raw ORDER BY event_id LIMIT ?)`,
		`INSERT INTO ` + table + ` SELECT ? + row_number() OVER (ORDER BY order_id) AS order_id, CAST(? AS DATE) AS order_date, ordered_at, customer_id, region, amount
			FROM (SELECT * FROM ` + table + ` ORDER BY order_id LIMIT ?)`,
	} {
		args := []any{id, id, day, n}
		if !strings.Contains(q, "orders_raw SELECT") {
			args = []any{id, day, n}
		}
		if err := e.Exec(ctx, q, args...); err != nil {
			t.Fatalf("pipeline write: %v", err)
		}
	}
}

func pipelineRows(t *testing.T, dir string) int64 {
	t.Helper()
	ctx := context.Background()
	e, err := tsql.Open(ctx, "duckdb:"+filepath.Join(dir, "warehouse.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Query(ctx, "SELECT count(*) FROM orders WHERE order_id >= 1000000000")
	if err != nil {
		t.Fatal(err)
	}
	return tsql.AsInt64(res.Rows[0][0])
}

// TestSwapCarriesThePipelinesRows walks the demo as a warehouse in production: the pipeline
// writes into a day being fixed while the backfill builds (the swap refuses, naming it, until
// backfill run --catch-up recomputes it), then a new day (the swap carries it, and says so
// before and after), then keeps writing the old version after the swap (caught by catch-up
// --dry-run, carried by catch-up). Readers end with every row the pipeline wrote, once.
func TestSwapCarriesThePipelinesRows(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--config", cfg}, args...)...)
	}
	if code, out, errs := run("backfill", "run", "fix_dedup_bug"); code != 0 {
		t.Fatalf("backfill run: exit %d: %s %s", code, out, errs)
	}
	pipelineWrite(t, dir, "orders__v1", "2026-07-12", 0, 2)
	code, out, errs := run("swap", "orders", "--to", "v2", "--dry-run")
	if code != exitFailed || !strings.Contains(errs, "2026-07-12 +2 rows") || !strings.Contains(errs, "--catch-up") {
		t.Fatalf("swap after a write into the scope: exit %d: %s %s", code, out, errs)
	}
	if code, out, errs := run("backfill", "run", "fix_dedup_bug", "--catch-up"); code != 0 {
		t.Fatalf("backfill run --catch-up: exit %d: %s %s", code, out, errs)
	}

	pipelineWrite(t, dir, "orders__v1", "2026-09-01", 10, 5)
	code, out, errs = run("swap", "orders", "--to", "v2", "--dry-run")
	if code != 0 || !strings.Contains(out, "live changed since the build: 1 partition, +5 rows — will be carried into v2") {
		t.Fatalf("swap --dry-run: exit %d: %s %s", code, out, errs)
	}
	code, out, errs = run("swap", "orders", "--to", "v2", "--reason", "fix")
	if code != 0 || !strings.Contains(out, "orders: carried into v2 what live gained since the build: 1 partition, +5 rows") {
		t.Fatalf("swap: exit %d: %s %s", code, out, errs)
	}
	if n := pipelineRows(t, dir); n != 7 {
		t.Errorf("after the swap readers see %d of the pipeline's 7 rows", n)
	}

	// A writer that kept writing v1.
	pipelineWrite(t, dir, "orders__v1", "2026-09-02", 20, 3)
	code, out, errs = run("catch-up", "orders", "--dry-run")
	if code != exitFailed || !strings.Contains(out, "orders__v1 changed after it stopped being live: 2026-09-02 +3 rows not visible to readers") {
		t.Fatalf("catch-up --dry-run: exit %d: %s %s", code, out, errs)
	}
	builtIn := func() map[string]any {
		t.Helper()
		_, out, errs := run("check", "--format", "json")
		var rep struct {
			Results []map[string]any `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("check --format json: %v: %s %s", err, out, errs)
		}
		for _, r := range rep.Results {
			if r["rule"] == "orders.written_after_live" {
				return r
			}
		}
		t.Fatalf("check has no built-in result for orders: %s", out)
		return nil
	}
	if r := builtIn(); r["status"] != "fail" || !strings.Contains(r["message"].(string), "orders__v1 changed after it stopped being live: 2026-09-02 +3 rows") {
		t.Errorf("check's built-in result before the catch-up: %v", r)
	}
	code, out, errs = run("catch-up", "orders")
	if code != 0 || !strings.Contains(out, "caught up orders: carried 1 partition, +3 rows from orders__v1 into orders__v2") {
		t.Fatalf("catch-up: exit %d: %s %s", code, out, errs)
	}
	if n := pipelineRows(t, dir); n != 10 {
		t.Errorf("after the catch-up readers see %d of the pipeline's 10 rows", n)
	}
	if code, out, errs := run("catch-up", "orders", "--dry-run"); code != 0 || !strings.Contains(out, "no old version was written") {
		t.Errorf("catch-up --dry-run after the catch-up: exit %d: %s %s", code, out, errs)
	}
	if r := builtIn(); r["status"] != "pass" {
		t.Errorf("check's built-in result after the catch-up: %v", r)
	}
}
