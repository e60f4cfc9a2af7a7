package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"trueup/backfill"
	"trueup/ledger"
	tsql "trueup/sql"
)

// backfillSQL is the benchmark's transform, the demo's kind of silver step: one row per order
// from raw events that hold resends.
const backfillSQL = `SELECT order_id, min(order_date) AS order_date, min(customer_id) AS customer_id,
	min(region) AS region, min(amount) AS amount
FROM (SELECT * FROM orders_raw WHERE order_date >= $start AND order_date < $end) AS raw
GROUP BY order_id`

// ordersRawSQL makes the raw events of rows orders (formatted with rows twice): rows arrive in
// order_date order, as a warehouse loads them, so a window reads its own rows; every 50th order
// is sent twice.
const ordersRawSQL = `CREATE TABLE orders_raw AS SELECT
	o AS order_id,
	CAST(DATE '2026-01-01' + CAST(o * 365 // %d AS INTEGER) AS DATE) AS order_date,
	CAST(o %% 100000 AS BIGINT) AS customer_id,
	['EMEA','NA','APAC','LATAM'][CAST(o %% 4 AS INTEGER) + 1] AS region,
	CAST((o * 7919 %% 100000) / 100.0 AS DECIMAL(18,2)) AS amount
	FROM (SELECT CASE WHEN i %% 50 = 49 THEN i - 1 ELSE i END AS o FROM range(%d) t(i)) AS ids`

// writeBackfills writes the benchmark's two backfills, full (the year) and scoped (9 days),
// into dir.
func writeBackfills(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	header := "-- table: orders\n-- partition: order_date\n-- key: order_id\n-- reason: bug\n-- objective: benchmark\n-- concurrency: 2\n"
	files := map[string]string{
		"full.sql":   header + "-- scope: 2026-01-01..2026-12-31\n" + backfillSQL,
		"scoped.sql": header + "-- scope: 2026-07-10..2026-07-18\n" + backfillSQL,
	}
	// A transform that is a plain SELECT of a table (orders_plain, a copy of v1 made beside it),
	// over a logical table of its own, for the 3-day run measured against one bare CTAS of the
	// whole of it.
	files["plain.sql"] = strings.Replace(header, "-- table: orders", "-- table: plain", 1) + "-- scope: 2026-07-10..2026-07-12\n" +
		"SELECT * FROM orders_plain WHERE order_date >= $start AND order_date < $end"
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// benchBackfill rebuilds a 365-partition table partition by partition with trueup and compares
// it with one hand-written CREATE TABLE AS SELECT of the whole table on the bare engine; then a
// scoped run of 9 partitions against the same.
func benchBackfill(ctx context.Context, b *env) error {
	e, err := b.duckdb(ctx, "backfill")
	if err != nil {
		return err
	}
	defer e.Close()
	if err := e.Exec(ctx, fmt.Sprintf(ordersRawSQL, b.rows, b.rows)); err != nil {
		return err
	}
	whole, _, err := tsql.Expand(e.Dialect(), backfillSQL, map[string]tsql.Param{
		"start": tsql.Date(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), "end": tsql.Date(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		return err
	}
	bareSQL := "CREATE TABLE bare AS " + whole
	bareArgs := []any{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}
	tb, err := timed(func() error { return e.Exec(ctx, bareSQL, bareArgs...) })
	if err != nil {
		return err
	}
	// The live version v1 is the bare build; the view reads it.
	if err := e.Exec(ctx, "ALTER TABLE bare RENAME TO orders__v1"); err != nil {
		return err
	}
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v1"}}); err != nil {
		return err
	}
	dir := filepath.Join(b.dir, "backfill-project")
	if err := writeBackfills(filepath.Join(dir, "backfills")); err != nil {
		return err
	}
	set, err := backfill.Load(os.DirFS(filepath.Join(dir, "backfills")), "backfills")
	if err != nil {
		return err
	}
	l, err := ledger.Open(ctx, filepath.Join(dir, "state.duckdb"))
	if err != nil {
		return err
	}
	defer l.Close()
	if err := e.Exec(ctx, "CREATE TABLE orders_plain AS SELECT * FROM orders__v1"); err != nil {
		return err
	}
	tp, err := timed(func() error { return e.Exec(ctx, "CREATE TABLE plain__v1 AS SELECT * FROM orders_plain") })
	if err != nil {
		return err
	}
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "plain", Table: "plain__v1"}}); err != nil {
		return err
	}
	type figure struct {
		name         string
		trueup       time.Duration
		plain        bool // against the bare copy of the table, not the bare build
		target       string
		perPartition int // the overhead over the bare build, per partition of so many
	}
	var figures []figure
	for _, c := range []struct {
		name, target, whole string
		parts               int
	}{{"full", "≤ 1.5x", "≤ 1.7x", 365}, {"scoped", "far below 1", "≤ 0.6x", 9}, {"plain", "", "≤ 1.3x", 3}} {
		var built time.Duration
		start := time.Now()
		r := backfill.NewRunner(backfill.Planner{Set: set, Engine: e, Target: "bench"}, backfill.Store{L: l}, backfill.Validator{},
			backfill.WithProgress(func(p backfill.Progress) {
				if p.Done == p.Total {
					built = time.Since(start)
				}
			}))
		total, err := timed(func() error { return runValidated(ctx, r, c.name) })
		if err != nil {
			return fmt.Errorf("%s run: %w", c.name, err)
		}
		if c.name == "plain" {
			figures = append(figures, figure{name: fmt.Sprintf("backfill plain SELECT: %d days, build + validate", c.parts), trueup: total,
				plain: true, target: c.whole + " of a bare CTAS of the table"})
			continue
		}
		figures = append(figures, figure{name: fmt.Sprintf("backfill %s: %d partitions, build", c.name, c.parts), trueup: built, target: c.target},
			figure{name: fmt.Sprintf("backfill %s: build + validate", c.name), trueup: total, target: c.whole})
		if c.parts == 365 {
			figures = append(figures, figure{name: "backfill full: overhead", trueup: built, perPartition: c.parts})
		}
	}
	// Each bare reference runs again after trueup's runs, and trueup is measured against the mean
	// of the two: one CTAS of 20M rows varies by a third from one run of the bench to the next
	// (the file grows, the page cache fills), and trueup's runs sit between the two.
	tb2, err := timed(func() error {
		return e.Exec(ctx, strings.Replace(bareSQL, "TABLE bare", "TABLE bare_again", 1), bareArgs...)
	})
	if err != nil {
		return err
	}
	tp2, err := timed(func() error { return e.Exec(ctx, "CREATE TABLE plain_again AS SELECT * FROM orders_plain") })
	if err != nil {
		return err
	}
	for _, t := range []string{"bare_again", "plain_again"} {
		if err := e.DropTable(ctx, t); err != nil {
			return err
		}
	}
	fmt.Printf("%-40s bare CTAS %.3fs and %.3fs, bare copy %.3fs and %.3fs (before and after trueup's runs)\n",
		"backfill: the references", tb.Seconds(), tb2.Seconds(), tp.Seconds(), tp2.Seconds())
	build, copied := (tb+tb2)/2, (tp+tp2)/2
	for _, f := range figures {
		switch {
		case f.perPartition > 0:
			fmt.Printf("%-40s %.1f ms per partition over the bare CTAS\n", f.name, float64((f.trueup-build).Milliseconds())/float64(f.perPartition))
		case f.plain:
			report(f.name, f.trueup, copied, f.target)
		default:
			report(f.name, f.trueup, build, f.target)
		}
	}
	return nil
}

// runValidated starts a run of the backfill plan and executes it to the end, which must be a
// validated version.
func runValidated(ctx context.Context, r *backfill.Runner, plan string) error {
	run, err := r.Start(ctx, plan, backfill.RunOptions{Actor: "bench"})
	if err != nil {
		return err
	}
	done, err := r.Execute(ctx, run.ID, backfill.ExecOptions{})
	if err == nil && done.State != backfill.RunValidated {
		err = fmt.Errorf("run ended %s: %s", done.State, done.Validation)
	}
	return err
}
