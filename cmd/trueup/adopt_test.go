package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"trueup/fixtures"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// plainWarehouse is fixtures.PlainProject in a temporary folder: the plain table sales and a
// backfill of it. It returns the config's path.
func plainWarehouse(t *testing.T, url string) string {
	t.Helper()
	cfg, err := fixtures.PlainProject(context.Background(), t.TempDir(), url)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// expectExit runs trueup on the project cfg, failing the test unless it exits want; it returns
// stdout and stderr.
func expectExit(t *testing.T, cfg string) func(want int, args ...string) string {
	return func(want int, args ...string) string {
		t.Helper()
		code, out, errs := cli(t, append([]string{"--config", cfg}, args...)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out + errs
	}
}

// warehouseURLs are a new DuckDB file and, with a test server, a new ClickHouse database.
func warehouseURLs(t *testing.T) map[string]string {
	urls := map[string]string{"duckdb": sqltest.DuckDBURL(t)}
	if u := sqltest.ClickHouseURL(t); u != "" {
		urls["clickhouse"] = u
	}
	return urls
}

// TestAdoptBackfillSwapRollback is a new user's first day on their own warehouse, on each
// engine: the plan of a plain table says to adopt it; adopt keeps its rows under its name as v1;
// a backfill builds v2 beside it; swap and rollback move readers; undo is refused once v2
// exists.
func TestAdoptBackfillSwapRollback(t *testing.T) {
	for name, url := range warehouseURLs(t) {
		t.Run(name, func(t *testing.T) {
			cfg := plainWarehouse(t, url)
			run := expectExit(t, cfg)
			if name == "clickhouse" {
				// A reader queries sales throughout, from its own connection; the reads that fail
				// (the moment of ClickHouse 18.16's RENAME before CREATE VIEW) are reported. On
				// DuckDB one process owns the file: views.TestAdoptWhileReading reads throughout
				// there, in-process, and none fails.
				reader := sqltest.Open(t, url)
				var reads, failed atomic.Int64
				stop, done := make(chan struct{}), make(chan struct{})
				go func() {
					defer close(done)
					for {
						select {
						case <-stop:
							return
						default:
						}
						if _, err := reader.Query(context.Background(), "SELECT sum(amount) FROM sales"); err != nil {
							failed.Add(1)
						}
						reads.Add(1)
					}
				}()
				defer func() {
					close(stop)
					<-done
					t.Logf("ClickHouse: %d of %d reads of sales failed during adopt, backfill, swap and rollback", failed.Load(), reads.Load())
				}()
			}
			if out := run(2, "backfill", "plan", "fix_sales", "--from", "2026-07-10", "--to", "2026-07-12"); !strings.Contains(out, "run trueup adopt sales") {
				t.Errorf("the plan of a plain table does not say to adopt it:\n%s", out)
			}
			if out := run(2, "versions", "sales"); !strings.Contains(out, "sales is a plain table of target w, not a logical table yet: run trueup adopt sales") {
				t.Errorf("versions of a plain table:\n%s", out)
			}
			out := run(0, "adopt", "sales", "--partition", "d", "--grain", "day")
			if !strings.Contains(out, "adopted sales in w") || !strings.Contains(out, "v1 live: 124 rows, checksum ") {
				t.Errorf("adopt said:\n%s", out)
			}
			var vs []map[string]any
			if err := json.Unmarshal([]byte(run(0, "versions", "sales", "--format", "json")), &vs); err != nil {
				t.Fatal(err)
			}
			if len(vs) != 1 || vs[0]["version"] != "v1" || vs[0]["state"] != "live" || vs[0]["rows"] != float64(124) || vs[0]["checksum"] == "" {
				t.Errorf("versions after the adopt: %v", vs)
			}
			writeTarget := func() string {
				t.Helper()
				code, out, errs := cli(t, "--config", cfg, "versions", "sales", "--write-target")
				if code != 0 {
					t.Fatalf("write target: exit %d: %s", code, errs)
				}
				return out
			}
			if got := writeTarget(); got != "sales__v1\n" {
				t.Errorf("write target after the adopt: %q", got)
			}
			if out := run(1, "adopt", "sales"); !strings.Contains(out, "sales is a logical table already: its view reads sales__v1") {
				t.Errorf("a second adopt:\n%s", out)
			}
			run(0, "backfill", "run", "fix_sales", "--from", "2026-07-10", "--to", "2026-07-12")
			if out := run(1, "adopt", "--undo", "sales"); !strings.Contains(out, "an adopt can be undone only while v1 is its only version") {
				t.Errorf("undo with v2 built:\n%s", out)
			}
			total := func() int64 {
				t.Helper()
				e := sqltest.Open(t, url)
				defer e.Close()
				res, err := e.Query(context.Background(), "SELECT sum(amount) FROM sales")
				if err != nil {
					t.Fatal(err)
				}
				return tsql.AsInt64(res.Rows[0][0])
			}
			if got := total(); got != 124*10 {
				t.Errorf("sales sums to %d before the swap, want %d", got, 124*10)
			}
			if out := run(0, "swap", "sales", "--to", "v2"); strings.Contains(out, "recovery:") {
				t.Errorf("a swap after a clean adopt found something to recover:\n%s", out)
			}
			if got := writeTarget(); got != "sales__v2\n" {
				t.Errorf("write target after the swap: %q", got)
			}
			if got := total(); got != 124*10+12*2 {
				t.Errorf("sales sums to %d after the swap, want %d (three days of four rows, +2 each)", got, 124*10+12*2)
			}
			if out := run(1, "adopt", "--undo", "sales"); !strings.Contains(out, "sales reads sales__v2 and has the version tables sales__v1, sales__v2: an adopt can be undone only while v1 is its only version") {
				t.Errorf("undo with v2 live:\n%s", out)
			}
			run(0, "rollback", "sales")
			if got := writeTarget(); got != "sales__v1\n" {
				t.Errorf("write target after the rollback: %q", got)
			}
			if got := total(); got != 124*10 {
				t.Errorf("sales sums to %d after the rollback, want %d", got, 124*10)
			}
		})
	}
}

// TestAdoptKilled kills trueup adopt after its intent is recorded and after the engine has
// renamed the table and made its view: the next command's start-up recovery settles it from
// what the engine has — abandoned (sales still plain, adopting again works) or done (v1 live).
func TestAdoptKilled(t *testing.T) {
	for name, url := range warehouseURLs(t) {
		t.Run(name, func(t *testing.T) {
			cfg := plainWarehouse(t, url)
			killedAt(t, "adopt.after-intent", "--config", cfg, "adopt", "sales")
			code, out, errs := cli(t, "--config", cfg, "versions", "sales")
			if code != 2 || !strings.Contains(errs, "adopt #1 (sales (none) → v1) recovered after a crash: abandoned") || !strings.Contains(errs, "sales is a plain table") {
				t.Errorf("after a kill before the rename: exit %d\n%s%s", code, out, errs)
			}
			killedAt(t, "adopt.after-rename", "--config", cfg, "adopt", "sales")
			code, out, errs = cli(t, "--config", cfg, "versions", "sales", "--format", "json")
			if code != 0 || !strings.Contains(errs, "adopt #2 (sales (none) → v1) recovered after a crash: done") {
				t.Fatalf("after a kill after the rename: exit %d\n%s%s", code, out, errs)
			}
			var vs []map[string]any
			if err := json.Unmarshal([]byte(out), &vs); err != nil {
				t.Fatal(err)
			}
			if len(vs) != 1 || vs[0]["state"] != "live" || vs[0]["rows"] != float64(124) {
				t.Errorf("versions after the recovered adopt: %v", vs)
			}
		})
	}
}

// TestWriteTargetWhileTheLedgerIsHeld: a pipeline's step asks for the write target while
// another local trueup (a long backfill, serve) holds the ledger: the answer is read from the
// view alone, on each engine (it was exit 2, "locked by another process").
func TestWriteTargetWhileTheLedgerIsHeld(t *testing.T) {
	for name, url := range warehouseURLs(t) {
		t.Run(name, func(t *testing.T) {
			cfg := plainWarehouse(t, url)
			if code, out, errs := cli(t, "--config", cfg, "adopt", "sales"); code != 0 {
				t.Fatalf("adopt: exit %d: %s %s", code, out, errs)
			}
			holdElsewhere(t, filepath.Join(filepath.Dir(cfg), "state.duckdb"))
			if code, out, errs := cli(t, "--config", cfg, "versions", "sales", "--write-target"); code != 0 || out != "sales__v1\n" {
				t.Errorf("write target while the ledger is held: exit %d: %q %s", code, out, errs)
			}
			if code, _, errs := cli(t, "--config", cfg, "versions", "nope", "--write-target"); code != exitUsage || !strings.Contains(errs, "nope has no view in target w") {
				t.Errorf("write target of no table while the ledger is held: exit %d: %s", code, errs)
			}
			if code, _, errs := cli(t, "--config", cfg, "versions", "sales"); code != exitUsage || !strings.Contains(errs, "locked by another process") {
				t.Errorf("the listing while the ledger is held: exit %d: %s", code, errs)
			}
		})
	}
}

// TestRunAgainIsRefusedOnlyForItsOwnVersion: a validated version waiting to be published stops a
// second run of the backfill that built it, not a run of another backfill of the same table
// (refused once its first run had failed, naming the other's version).
func TestRunAgainIsRefusedOnlyForItsOwnVersion(t *testing.T) {
	cfg := plainWarehouse(t, sqltest.DuckDBURL(t))
	fix := filepath.Join(filepath.Dir(cfg), "backfills", "fix_sales.sql")
	body, err := os.ReadFile(fix)
	if err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(filepath.Dir(cfg), "backfills", "fix_sales_again.sql")
	// its first run fails on 2026-07-11
	os.WriteFile(again, []byte(strings.Replace(string(body), "SELECT id, d, amount FROM sales_fixed",
		"SELECT id, d, amount + CAST(CASE WHEN d = DATE '2026-07-11' THEN 'x' ELSE '0' END AS INTEGER) AS amount FROM sales_fixed", 1)), 0o644)
	run := expectExit(t, cfg)
	run(0, "adopt", "sales")
	run(0, "backfill", "run", "fix_sales", "--from", "2026-07-10", "--to", "2026-07-12")
	run(1, "backfill", "run", "fix_sales_again", "--from", "2026-07-10", "--to", "2026-07-12")
	os.WriteFile(again, body, 0o644)
	run(0, "backfill", "run", "fix_sales_again", "--from", "2026-07-10", "--to", "2026-07-12")
	if out := run(1, "backfill", "run", "fix_sales_again", "--from", "2026-07-10", "--to", "2026-07-12"); !strings.Contains(out, "sales v4 is validated and not published yet: another run of fix_sales_again would build v5") {
		t.Errorf("the second run of fix_sales_again:\n%s", out)
	}
}
