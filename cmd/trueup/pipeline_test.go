package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"trueup/ledger"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// rawOrders writes n new orders of day to orders_raw, as the sources would.
func rawOrders(t *testing.T, dir, day string, first, n int) {
	t.Helper()
	rawOrdersAt(t, "duckdb:"+filepath.Join(dir, "warehouse.duckdb"), day, first, n)
}

// rawOrdersAt writes n new orders of day to orders_raw in the warehouse at url.
func rawOrdersAt(t *testing.T, url, day string, first, n int) {
	t.Helper()
	ctx := context.Background()
	e, err := tsql.Open(ctx, url)
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
	if code, out, errs := run("run", "fix_dedup_bug", "--window", "2026-07-99"); code != exitUsage || !strings.Contains(errs, `window "2026-07-99"`) {
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
	// Windows the sources do not hold yet are refused, as a backfill's plan refuses them: the
	// replace would empty them in the live version. Nothing is written, not even the window
	// the sources hold.
	code, out, errs = run("run", "fix_dedup_bug", "--window", "2026-09-01..2026-09-03")
	if want := "input orders_raw has no rows for 2 partitions of the windows: 2026-09-02, 2026-09-03: nothing was written"; code != exitUsage || !strings.Contains(errs, want) {
		t.Errorf("run over windows without inputs: exit %d, want %d and %q: %s %s", code, exitUsage, want, out, errs)
	}
	if n := pipelineRows(t, dir); n != 6 {
		t.Errorf("after the refused run readers see %d of the 6 new orders", n)
	}

	// Through the server that holds the warehouse file: the pipeline's next window.
	rawOrders(t, dir, "2026-09-02", 10, 4)
	srv := serveDemo(t, dir)
	code, out, errs = cli(t, "--server", srv.url, "run", "fix_dedup_bug", "--window", "2026-09-02")
	if code != 0 || !strings.Contains(out, "fix_dedup_bug 2026-09-02: 4 rows into orders__v2") {
		t.Fatalf("run --server: exit %d: %s %s", code, out, errs)
	}
}

// TestPipelineThroughTheServerDuringSwaps: the way a DuckDB warehouse is written while trueup
// serves it — trueup run --server, a window at a time — goes on while swaps and rollbacks of the
// table run through the same server. Every swap waits for the write in progress instead of
// failing, and after the writer stops and one catch-up, readers see every order it wrote once.
func TestPipelineThroughTheServerDuringSwaps(t *testing.T) {
	dir := demoDir(t)
	if code, out, errs := cli(t, "--config", filepath.Join(dir, "trueup.yaml"), "backfill", "run", "fix_dedup_bug"); code != 0 {
		t.Fatalf("backfill run: exit %d: %s %s", code, out, errs)
	}
	sd := serveDemo(t, dir)
	e := sd.a.Targets["warehouse"]
	ctx := context.Background()
	stop := make(chan struct{})
	written, windows := 0, 0
	var writeErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			day := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, k).Format("2006-01-02")
			q := fmt.Sprintf(`INSERT INTO orders_raw SELECT event_id + %[1]d, order_id + %[1]d, CAST('%[2]s' AS DATE), ordered_at, customer_id, region, amount, 0
				FROM orders_raw WHERE order_date = CAST('2026-08-31' AS DATE) ORDER BY event_id LIMIT 3`, 1_000_000_000+10*k, day)
			if err := e.Exec(ctx, q); err != nil {
				writeErr = err
				return
			}
			var out, errb bytes.Buffer
			if code := run(ctx, []string{"--server", sd.url, "run", "fix_dedup_bug", "--window", day}, &out, &errb); code != 0 {
				writeErr = fmt.Errorf("run %s: exit %d: %s", day, code, errb.String())
				return
			}
			written += 3
			windows++
		}
	}()
	for cycle := 0; cycle < 10; cycle++ {
		if code, out, errs := cli(t, "--server", sd.url, "swap", "orders", "--to", "v2", "--reason", "cycle"); code != 0 {
			t.Fatalf("cycle %d: swap: exit %d: %s %s", cycle, code, out, errs)
		}
		if code, out, errs := cli(t, "--server", sd.url, "rollback", "orders", "--reason", "cycle"); code != 0 {
			t.Fatalf("cycle %d: rollback: exit %d: %s %s", cycle, code, out, errs)
		}
	}
	close(stop)
	<-done
	if writeErr != nil {
		t.Fatalf("pipeline: %v", writeErr)
	}
	if code, out, errs := cli(t, "--server", sd.url, "catch-up", "orders"); code != 0 {
		t.Fatalf("catch-up: exit %d: %s %s", code, out, errs)
	}
	res, err := e.Query(ctx, "SELECT count(*), count(DISTINCT order_id) FROM orders WHERE order_id >= 1000000000")
	if err != nil {
		t.Fatal(err)
	}
	rows, ids := tsql.AsInt64(res.Rows[0][0]), tsql.AsInt64(res.Rows[0][1])
	t.Logf("%d windows, %d orders written through the server during 20 publishes; readers see %d (%d distinct)", windows, written, rows, ids)
	if rows != int64(written) || ids != rows {
		t.Errorf("readers see %d rows (%d distinct) of the %d written", rows, ids, written)
	}
}

// TestPipelineRunKilledContinues kills trueup run after its third checkpointed write (the first
// window's orders and daily_revenue are written, the rest not), then runs the same windows
// again: the second run continues the stopped one, writes only what it had not, and readers see
// every new order once, with daily_revenue agreeing with orders on each day.
func TestPipelineRunKilledContinues(t *testing.T) {
	for name, p := range demoProjects(t) {
		t.Run(name, func(t *testing.T) {
			cfg := filepath.Join(p.dir, "trueup.yaml")
			for i, day := range []string{"2026-09-01", "2026-09-02", "2026-09-03"} {
				rawOrdersAt(t, p.url, day, 100*i, 3+i)
			}
			args := []string{"--config", cfg, "run", "fix_dedup_bug", "--window", "2026-09-01..2026-09-03", "--format", "json"}
			killedAt(t, "pipeline.window-done:2", args...)
			if n := querySQL(t, p.url, "SELECT count(*) FROM orders WHERE order_id >= 1000000000"); n != 3 {
				t.Errorf("after the kill readers see %d new orders, want the first window's 3", n)
			}
			code, out, errs := cli(t, args...)
			if code != 0 {
				t.Fatalf("run again: exit %d: %s %s", code, out, errs)
			}
			var wr struct {
				RunID     int64 `json:"run_id"`
				Continued int64 `json:"continued"`
				Skipped   int   `json:"skipped"`
				Tables    []struct {
					Table string  `json:"table"`
					Rows  []int64 `json:"rows"`
				} `json:"tables"`
			}
			if err := json.Unmarshal([]byte(out), &wr); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if wr.Continued == 0 || wr.Continued != wr.RunID || wr.Skipped != 2 {
				t.Errorf("the second run: run %d continued %d with %d writes kept, want the stopped run's 2", wr.RunID, wr.Continued, wr.Skipped)
			}
			if len(wr.Tables) == 0 || wr.Tables[0].Table != "orders" || len(wr.Tables[0].Rows) != 3 {
				t.Fatalf("tables written: %+v", wr.Tables)
			}
			if n := querySQL(t, p.url, "SELECT count(*) FROM orders WHERE order_id >= 1000000000"); n != 3+4+5 {
				t.Errorf("readers see %d new orders, want 12, each once", n)
			}
			differ := querySQL(t, p.url, `SELECT count(*) FROM daily_revenue d JOIN (SELECT order_date, count(*) AS n FROM orders
				WHERE order_date BETWEEN CAST('2026-09-01' AS DATE) AND CAST('2026-09-03' AS DATE) GROUP BY order_date) o
				ON d.order_date = o.order_date WHERE d.order_count <> o.n`)
			days := querySQL(t, p.url, `SELECT count(*) FROM daily_revenue WHERE order_date BETWEEN CAST('2026-09-01' AS DATE) AND CAST('2026-09-03' AS DATE)`)
			if differ != 0 || days != 3 {
				t.Errorf("daily_revenue has %d of the 3 days, %d disagreeing with orders", days, differ)
			}
			// A run of the same windows now starts afresh: the last one ended.
			code, out, errs = cli(t, args...)
			if code != 0 || strings.Contains(out, `"continued"`) {
				t.Errorf("a third run: exit %d: %s %s", code, out, errs)
			}
		})
	}
}

// TestServeRunsScheduledPipeline: trueup serve runs a backfill file's schedule: header as the
// pipeline. Its last scheduled run is long ago (hourly slots missed), so serve makes up for
// them once at start-up: the latest partition is computed into the live version, recorded in the
// audit log as by the schedule.
func TestServeRunsScheduledPipeline(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	file := filepath.Join(dir, "backfills", "fix_dedup_bug.sql")
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append([]byte("-- schedule: 0 * * * *\n"), body...), 0o644); err != nil {
		t.Fatal(err)
	}
	// The schedule ran last on 2025-01-01: every hourly slot since was missed.
	l, err := ledger.Open(context.Background(), filepath.Join(dir, "trueup-state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.DB().Exec(`INSERT INTO pipeline_runs (backfill, target, code_sha, windows, actor, owner, state, started_at, finished_at)
		VALUES ('fix_dedup_bug', 'warehouse', '', '["2025-01-01"]', 'schedule', '', 'done', TIMESTAMP '2025-01-01 00:00:05', TIMESTAMP '2025-01-01 00:00:06')`); err != nil {
		t.Fatal(err)
	}
	l.Close()
	today := time.Now().UTC().Format("2006-01-02")
	rawOrders(t, dir, today, 0, 3)

	addr := freeAddr(t)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serverLog bytes.Buffer
	go func() {
		done <- run(ctx, []string{"--config", cfg, "serve", "--addr", addr}, io.Discard, &serverLog)
	}()
	shutdown := sync.OnceFunc(func() { stop(); <-done })
	defer shutdown()
	var entries []struct {
		Actor   string `json:"actor"`
		Outcome string `json:"outcome"`
		Detail  string `json:"detail"`
	}
	for deadline := time.Now().Add(2 * time.Minute); len(entries) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no scheduled pipeline run in the audit log after 2 minutes:\n%s", serverLog.String())
		}
		resp, err := http.Get("http://" + addr + "/api/v1/audit?action=pipeline.run")
		if err != nil {
			continue // not listening yet
		}
		err = json.NewDecoder(resp.Body).Decode(&entries)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if e := entries[0]; e.Actor != "schedule" || e.Outcome != "ok" || !strings.Contains(e.Detail, "fix_dedup_bug for "+today+" into orders__v1") {
		t.Errorf("audit entry %+v", e)
	}
	shutdown() // the warehouse file is trueup's while it serves
	if n := pipelineRows(t, dir); n != 3 {
		t.Errorf("readers see %d of today's 3 new orders after the scheduled run", n)
	}
}

// TestRunNeverEmptiesALiveWindow: a transform whose input is not partitioned as its table is
// (its day column has another name, so the input check cannot tell which windows it holds)
// gives no rows for a day the input has not reached: trueup run refuses that window, exit 2,
// and the live day keeps its rows, on each engine. It emptied the day and exited 0.
func TestRunNeverEmptiesALiveWindow(t *testing.T) {
	for name, url := range warehouseURLs(t) {
		t.Run(name, func(t *testing.T) {
			cfg := plainWarehouse(t, url)
			e := sqltest.Open(t, url)
			cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "sold_on", Kind: tsql.TypeDate}, {Name: "amount", Kind: tsql.TypeInt}}
			if err := e.CreateTable(t.Context(), "sales_events", cols, "sold_on", []string{"id"}); err != nil {
				t.Fatal(err)
			}
			// every day of sales but 2026-07-03 (ids 8 to 11)
			if err := e.Exec(t.Context(), "INSERT INTO sales_events SELECT id, d, amount + 1 FROM sales WHERE id < 8 OR id > 11"); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(filepath.Dir(cfg), "backfills", "sales_events.sql"), []byte(`-- table: sales
-- partition: d
-- key: id
-- reason: new-data
-- objective: sales from the events.
SELECT id, sold_on AS d, amount FROM sales_events WHERE sold_on >= $start AND sold_on < $end
`), 0o644)
			run := func(args ...string) (int, string, string) {
				return cli(t, append([]string{"--config", cfg}, args...)...)
			}
			if code, out, errs := run("adopt", "sales", "--partition", "d"); code != 0 {
				t.Fatalf("adopt: exit %d: %s %s", code, out, errs)
			}
			day := func() string {
				t.Helper()
				res, err := e.Query(t.Context(), "SELECT count(*), sum(amount) FROM sales__v1 WHERE id >= 8 AND id <= 11")
				if err != nil {
					t.Fatal(err)
				}
				return fmt.Sprint(res.Rows[0][0], " rows, sum ", res.Rows[0][1])
			}
			code, out, errs := run("run", "sales_events", "--window", "2026-07-03")
			want := "the transform gives no rows for the window, where sales__v1 holds 4: the window was not written"
			if code != exitUsage || !strings.Contains(errs, want) {
				t.Errorf("a window the input lacks: exit %d, want %d and %q: %s %s", code, exitUsage, want, out, errs)
			}
			if got := day(); got != "4 rows, sum 40" {
				t.Errorf("2026-07-03 in live after the refused run: %s, want its 4 rows, sum 40", got)
			}
			if code, out, errs := run("run", "sales_events", "--window", "2026-07-02"); code != 0 || !strings.Contains(out, "4 rows into sales__v1") {
				t.Errorf("a window the input holds: exit %d: %s %s", code, out, errs)
			}
		})
	}
}
