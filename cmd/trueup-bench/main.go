// Command trueup-bench measures trueup against the same work written by hand on the bare
// engine, in the same run, and prints both figures and their ratio. `make bench` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	tsql "trueup/sql"
)

// bench is one measured comparison.
type bench struct {
	name string
	run  func(ctx context.Context, b *env) error
}

func benches() []bench {
	return []bench{
		{"engine/partition-hash", benchPartitionHash},
		{"rules/check-20", benchRules},
		{"views/swap", benchViews},
		{"views/swap-carry", benchCarry},
		{"engine/duckdb-open-per-request", benchOpenPerRequest},
		{"reconcile/diff", benchReconcile},
		{"reconcile/cross-engine", benchReconcileCross},
		{"backfill/rebuild", benchBackfill},
		{"server/load", benchLoad},
		{"scale/duckdb", benchScale},
		{"cluster/check-diff", benchCluster},
	}
}

// env is what a benchmark gets: flags and scratch space.
type env struct {
	rows       int
	dir        string
	clickhouse string // URL of a ClickHouse server, "" when none
	scale      bool   // the scale table goes on to 80M rows
}

func main() {
	rows := flag.Int("rows", 20_000_000, "rows in the large benchmark tables")
	run := flag.String("run", ".", "regexp of benchmarks to run")
	scale := flag.Bool("scale", true, "the scale table goes on to 80M rows (four times -rows); -scale=false stops at -rows")
	child := flag.String("scale-child", "", "run one case of the scale table in this process (the scale benchmark starts it)")
	childDir := flag.String("scale-dir", "", "with -scale-child: the directory of the size's files")
	flag.Parse()
	if *child != "" {
		if err := scaleChild(context.Background(), *child, *childDir, *rows); err != nil {
			fmt.Fprintf(os.Stderr, "trueup-bench: %s: %v\n", *child, err)
			os.Exit(1)
		}
		return
	}
	re, err := regexp.Compile(*run)
	if err != nil {
		fmt.Fprintf(os.Stderr, "trueup-bench: --run: %v\n", err)
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "trueup-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "trueup-bench:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	e := &env{rows: *rows, dir: dir, clickhouse: os.Getenv("TRUEUP_TEST_CLICKHOUSE"), scale: *scale}
	ctx := context.Background()
	failed := false
	for _, b := range benches() {
		if !re.MatchString(b.name) {
			continue
		}
		fmt.Printf("== %s\n", b.name)
		if err := b.run(ctx, e); err != nil {
			fmt.Printf("%s: error: %v\n", b.name, err)
			failed = true
		}
	}
	if failed {
		os.RemoveAll(dir) // os.Exit skips the deferred removal
		os.Exit(1)
	}
}

// report prints one comparison line: trueup's time, the bare engine's, and their ratio.
func report(name string, trueup, bare time.Duration, target string) {
	fmt.Printf("%-40s trueup %9.3fs   bare %9.3fs   ratio %5.2fx   (target %s)\n",
		name, trueup.Seconds(), bare.Seconds(), trueup.Seconds()/bare.Seconds(), target)
}

// timed runs fn once and returns how long it took.
func timed(fn func() error) (time.Duration, error) {
	start := time.Now()
	err := fn()
	return time.Since(start), err
}

// duckdb opens a fresh DuckDB file for one benchmark.
func (e *env) duckdb(ctx context.Context, name string) (tsql.Engine, error) {
	return tsql.Create(ctx, "duckdb:"+filepath.Join(e.dir, name+".duckdb"))
}

// duckdbOrders is a fresh DuckDB file for one benchmark holding table: rows orders over 365
// daily partitions (makeOrders). The engine is closed again when the table cannot be made.
func (e *env) duckdbOrders(ctx context.Context, name, table string, rows int) (tsql.Engine, error) {
	en, err := e.duckdb(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := makeOrders(ctx, en, table, rows, 365); err != nil {
		en.Close()
		return nil, err
	}
	return en, nil
}

// makeOrders creates a table of rows orders spread over days daily partitions from 2026-01-01,
// generated inside DuckDB.
func makeOrders(ctx context.Context, e tsql.Engine, table string, rows, days int) error {
	return e.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s AS SELECT
		i AS order_id,
		CAST(DATE '2026-01-01' + CAST(i %% %d AS INTEGER) AS DATE) AS order_date,
		CAST(i %% 100000 AS BIGINT) AS customer_id,
		['EMEA','NA','APAC','LATAM'][CAST(i %% 4 AS INTEGER) + 1] AS region,
		CAST((i * 7919 %% 100000) / 100.0 AS DECIMAL(18,2)) AS amount
		FROM range(%d) t(i)`, e.Dialect().QuoteRelation(table), days, rows))
}

// benchPartitionHash compares the engine layer's per-partition count and row-hash sum with the
// same query written by hand: the normalised hash (HashOptions{}: what marks and carries use,
// numbers at 6 decimals so that a DECIMAL side and a DOUBLE side agree), and the hash as stored
// (what a diff uses for columns of one type on both sides). Alternated, best of 3, with CPU time.
func benchPartitionHash(ctx context.Context, b *env) error {
	e, err := b.duckdbOrders(ctx, "hash", "orders", b.rows)
	if err != nil {
		return err
	}
	defer e.Close()
	cols, err := e.Columns(ctx, "orders")
	if err != nil {
		return err
	}
	d := e.Dialect()
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	bare := "SELECT order_date, count(*), sum(hash(order_id, order_date, customer_id, region, amount)) FROM orders GROUP BY order_date"
	run := func(q string) func() error {
		return func() error { return e.Each(ctx, q, nil, func([]any) error { return nil }) }
	}
	for _, c := range []struct {
		name   string
		opt    tsql.HashOptions
		target string
	}{
		{"normalised", tsql.HashOptions{}, "≤ 1.5x"},
		{"as stored", tsql.HashOptions{Stored: names}, "≤ 1.5x"},
	} {
		ours := "SELECT order_date, count(*), " + d.HashSum(d.RowHash(cols, c.opt)) + " FROM orders GROUP BY order_date"
		to, tb, co, cb, err := interleaved(reconcileRuns, run(ours), run(bare))
		if err != nil {
			return err
		}
		report(fmt.Sprintf("partition hash %s, %d rows", c.name, b.rows), to, tb, c.target)
		fmt.Printf("    CPU time: trueup %.3fs   bare %.3fs   ratio %.2fx\n", co.Seconds(), cb.Seconds(), co.Seconds()/cb.Seconds())
	}
	// What the normalised hash pays for: the DECIMAL amount as a double scaled to 6 decimals
	// (with the huge-value branch), against hashing it as stored.
	scaled := "SELECT order_date, count(*), sum(hash(order_id, order_date, customer_id, region, round(CAST(amount AS DOUBLE) * 1e6))) FROM orders GROUP BY order_date"
	ts, tb, cs, cb, err := interleaved(reconcileRuns, run(scaled), run(bare))
	if err != nil {
		return err
	}
	fmt.Printf("    floor of the normalised hash: the bare query with amount as round(CAST(amount AS DOUBLE) * 1e6), no huge-value branch: %.2fx (%.2fx CPU)\n",
		ts.Seconds()/tb.Seconds(), cs.Seconds()/cb.Seconds())
	// The least a hash can do that keeps huge values apart (x * 1e6 merges neighbouring doubles
	// beyond 2^53, and overflows to infinity near the double's top): one CASE for the huge ones
	// beside the scaled value, summed as trueup sums. trueup's has a second CASE, so that the scaled part is NULL for
	// them and the hashes of values recorded so far stay as they are.
	x := "CAST(amount AS DOUBLE)"
	apart := "SELECT order_date, count(*), " + d.HashSum("hash(order_id, order_date, customer_id, region, round("+x+" * 1e6), CASE WHEN abs("+x+
		") < 9e12 THEN NULL ELSE "+x+" END)") + " FROM orders GROUP BY order_date"
	ta, tb, ca, cb, err := interleaved(reconcileRuns, run(apart), run(bare))
	if err != nil {
		return err
	}
	fmt.Printf("    floor of a normalised hash that keeps huge values apart (that branch, one CASE): %.2fx (%.2fx CPU)\n",
		ta.Seconds()/tb.Seconds(), ca.Seconds()/cb.Seconds())
	return nil
}
