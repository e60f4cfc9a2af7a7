package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"trueup/backfill"
	"trueup/ledger"
	"trueup/reconcile"
	"trueup/rules"
	tsql "trueup/sql"
)

// How cost grows: check, diff and backfill at several sizes, each against its bare reference,
// with the peak memory of the process that did the work. Every measurement runs in a child
// process of its own (this binary again, with -scale-child), so a process's peak RSS (VmHWM) is
// the peak of that one piece of work: trueup's is never mixed with the bare reference's, nor
// with the setup that generated the tables.

// scaleCase is one row of the scale table: trueup's work and the bare engine's reference.
type scaleCase struct {
	name, file  string // the row's name; the DuckDB file it works on
	trueup      string // child case names
	bare        string
	reps        int // runs in one child, the best counts (1 for work that writes a version)
	bareSummary string
	// floor, when set, is a second reference: the least the work's shape must cost, where the
	// bare one does less than the work must (a backfill is built partition by partition).
	floor, floorSummary string
}

var scaleCases = []scaleCase{
	{"check (20 rules)", "rules", "check", "check-bare", 2, "one scan per partition", "", ""},
	{"diff identical", "diff", "diff-identical", "diff-bare-identical", 2, "checksum scan of both", "", ""},
	{"diff sparse", "diff", "diff-sparse", "diff-bare-sparse", 2, "checksum scan of both", "", ""},
	{"backfill full, build + validate", "backfill", "backfill-full", "backfill-bare", 1, "bare CTAS",
		"backfill-bare-parts", "one INSERT … SELECT per partition (365), by hand: the build's shape, with no checkpoint, validation or ledger"},
	{"backfill scoped, build + validate", "backfill", "backfill-scoped", "backfill-bare", 1, "bare CTAS", "", ""},
}

// childResult is what a child prints: its best times and its peak RSS.
type childResult struct {
	Wall   float64 `json:"wall"`
	CPU    float64 `json:"cpu"`
	HWMKiB int64   `json:"hwm_kib"`
}

// scaleSizes are the row counts of the table: a tenth of -rows, -rows and four times -rows (2M,
// 20M and 80M by default; the whole of make bench then takes about 14 minutes on 2 cores);
// -scale=false leaves out the largest.
func scaleSizes(b *env) []int {
	sizes := []int{b.rows / 10, b.rows}
	if b.scale {
		sizes = append(sizes, 4*b.rows)
	}
	return sizes
}

func benchScale(ctx context.Context, b *env) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	sizes := scaleSizes(b)
	results := map[string][]*[3]childResult{} // by case name, one per size: trueup, bare, floor
	for _, n := range sizes {
		dir := filepath.Join(b.dir, fmt.Sprintf("scale-%d", n))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		started := time.Now()
		if _, err := runChild(ctx, exe, "setup", dir, n); err != nil {
			return fmt.Errorf("%d rows: setup: %w", n, err)
		}
		fmt.Printf("scale setup: %d rows in %.1fs\n", n, time.Since(started).Seconds())
		for _, c := range scaleCases {
			var pair [3]childResult
			for i, name := range []string{c.trueup, c.bare, c.floor} {
				if name == "" {
					continue
				}
				r, err := runChild(ctx, exe, name, dir, n)
				if err != nil {
					return fmt.Errorf("%d rows: %s: %w", n, name, err)
				}
				pair[i] = r
			}
			results[c.name] = append(results[c.name], &pair)
			fmt.Printf("    %-34s %5.1fM rows  trueup %8.3fs (%.3fs CPU, %s)   bare %8.3fs (%.3fs CPU, %s)\n", c.name, float64(n)/1e6,
				pair[0].Wall, pair[0].CPU, mib(pair[0].HWMKiB), pair[1].Wall, pair[1].CPU, mib(pair[1].HWMKiB))
		}
		os.RemoveAll(dir)
	}
	fmt.Println("scale table (DuckDB; growth = time ratio over row ratio from the size before: 1.00 is linear, target ≤ 1.2; peak RSS of the trueup process, target ≤ 2 GiB at 80M)")
	fmt.Println("    (CPU: this process's user and system time, DuckDB's threads included: steadier than wall time on a shared machine)")
	fmt.Printf("    %-34s %5s %9s %9s %7s %7s %7s %7s %10s %10s\n", "case", "rows", "trueup", "bare", "ratio", "CPU", "growth", "CPU", "trueup RSS", "bare RSS")
	for _, c := range scaleCases {
		for i, p := range results[c.name] {
			growth, growthCPU := "—", "—"
			if i > 0 {
				prev, rows := results[c.name][i-1], float64(sizes[i])/float64(sizes[i-1])
				growth = fmt.Sprintf("%.2f", p[0].Wall/prev[0].Wall/rows)
				growthCPU = fmt.Sprintf("%.2f", p[0].CPU/prev[0].CPU/rows)
			}
			floor := ""
			if c.floor != "" {
				floor = fmt.Sprintf("   floor %.3fs: %.2fx", p[2].Wall, p[0].Wall/p[2].Wall)
			}
			fmt.Printf("    %-34s %4.1fM %8.3fs %8.3fs %6.2fx %6.2fx %7s %7s %10s %10s%s\n", c.name, float64(sizes[i])/1e6, p[0].Wall, p[1].Wall,
				p[0].Wall/p[1].Wall, p[0].CPU/p[1].CPU, growth, growthCPU, mib(p[0].HWMKiB), mib(p[1].HWMKiB), floor)
		}
		fmt.Printf("    %-34s bare: %s\n", "", c.bareSummary)
		if c.floor != "" {
			fmt.Printf("    %-34s floor: %s\n", "", c.floorSummary)
		}
	}
	return nil
}

func mib(kib int64) string { return fmt.Sprintf("%d MiB", kib/1024) }

// runChild runs one scale case in a fresh process and reads its result.
func runChild(ctx context.Context, exe, name, dir string, rows int) (childResult, error) {
	cmd := exec.CommandContext(ctx, exe, "-scale-child", name, "-scale-dir", dir, "-rows", strconv.Itoa(rows))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return childResult{}, err
	}
	var r childResult
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("child said %q: %w", out, err)
	}
	return r, nil
}

// scaleChild is the child process: it runs one case and prints its childResult.
func scaleChild(ctx context.Context, name, dir string, rows int) error {
	reps := 1
	for _, c := range scaleCases {
		if name == c.trueup || name == c.bare || name == c.floor {
			reps = c.reps
		}
	}
	if name == "setup" {
		if err := scaleSetup(ctx, dir, rows); err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(childResult{HWMKiB: peakRSS()})
	}
	file := map[string]string{"check": "rules", "check-bare": "rules", "diff-identical": "diff", "diff-sparse": "diff",
		"diff-bare-identical": "diff", "diff-bare-sparse": "diff", "backfill-full": "backfill", "backfill-scoped": "backfill",
		"backfill-bare": "backfill", "backfill-bare-parts": "backfill"}[name]
	if file == "" {
		return fmt.Errorf("unknown scale case %q", name)
	}
	e, err := tsql.Open(ctx, "duckdb:"+filepath.Join(dir, file+".duckdb"))
	if err != nil {
		return err
	}
	defer e.Close()
	work, err := scaleWork(ctx, e, name, dir)
	if err != nil {
		return err
	}
	wall, cpu, err := bestOfCPU(reps, work)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(childResult{Wall: wall.Seconds(), CPU: cpu.Seconds(), HWMKiB: peakRSS()})
}

// scaleWork prepares one case (opening what it needs) and returns the work to time.
func scaleWork(ctx context.Context, e tsql.Engine, name, dir string) (func() error, error) {
	switch name {
	case "check", "check-bare":
		if name == "check-bare" {
			return func() error {
				_, err := e.Query(ctx, "SELECT order_date, count(*), sum(amount) FROM orders GROUP BY order_date")
				return err
			}, nil
		}
		fsys, targets := benchRuleFiles(e)
		set, err := rules.Load(ctx, fsys, "rules", targets)
		if err != nil {
			return nil, err
		}
		runner := benchRunner(targets)
		return func() error {
			if bad := errored(runner.Run(ctx, set.Rules)); bad != "" {
				return errors.New(bad)
			}
			return nil
		}, nil
	case "diff-bare-identical":
		return scanBoth(ctx, e, "orders_same"), nil
	case "diff-bare-sparse":
		return scanBoth(ctx, e, "orders_sparse"), nil
	case "diff-identical", "diff-sparse":
		l, err := ledger.Open(ctx, filepath.Join(dir, name+"-state.duckdb"))
		if err != nil {
			return nil, err
		}
		store := reconcile.NewStore(l)
		table := map[string]string{"diff-identical": "orders_same", "diff-sparse": "orders_sparse"}[name]
		return func() error {
			_, err := diffAndSave(ctx, store, ordersSpec(reconcile.Side{Engine: e, Relation: "orders_old"}, reconcile.Side{Engine: e, Relation: table}))
			return err
		}, nil
	case "backfill-bare":
		q, args, err := backfillWhole(e)
		if err != nil {
			return nil, err
		}
		return func() error {
			if err := e.Exec(ctx, "CREATE OR REPLACE TABLE bare_again AS "+q, args...); err != nil {
				return err
			}
			return e.DropTable(ctx, "bare_again")
		}, nil
	case "backfill-bare-parts":
		day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		return func() error {
			// The transform per day into a table like the build's, each INSERT its own statement.
			if err := e.Exec(ctx, "CREATE OR REPLACE TABLE bare_parts AS SELECT * FROM orders__v1 LIMIT 0"); err != nil {
				return err
			}
			for d := day; d.Year() == 2026; d = d.AddDate(0, 0, 1) {
				q, args, err := tsql.Expand(e.Dialect(), backfillSQL, map[string]tsql.Param{"start": tsql.Date(d), "end": tsql.Date(d.AddDate(0, 0, 1))})
				if err != nil {
					return err
				}
				if err := e.Exec(ctx, "INSERT INTO bare_parts "+q, args...); err != nil {
					return err
				}
			}
			return e.DropTable(ctx, "bare_parts")
		}, nil
	case "backfill-full", "backfill-scoped":
		set, err := backfill.Load(os.DirFS(filepath.Join(dir, "backfills")), "backfills")
		if err != nil {
			return nil, err
		}
		l, err := ledger.Open(ctx, filepath.Join(dir, "backfill-state.duckdb"))
		if err != nil {
			return nil, err
		}
		r := backfill.NewRunner(backfill.Planner{Set: set, Engine: e, Target: "bench"}, backfill.Store{L: l}, backfill.Validator{})
		plan := strings.TrimPrefix(name, "backfill-")
		return func() error { return runValidated(ctx, r, plan) }, nil
	}
	return nil, fmt.Errorf("unknown scale case %q", name)
}

// scanBoth is the hand-written checksum scan of orders_old and table.
func scanBoth(ctx context.Context, e tsql.Engine, table string) func() error {
	return func() error {
		return e.Each(ctx, fmt.Sprintf(bareHashScan, "orders_old", table), nil, func([]any) error { return nil })
	}
}

// backfillWhole is the benchmark transform over the whole year, as the bare CTAS runs it.
func backfillWhole(e tsql.Engine) (string, []any, error) {
	start, end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	return tsql.Expand(e.Dialect(), backfillSQL, map[string]tsql.Param{"start": tsql.Date(start), "end": tsql.Date(end)})
}

// scaleSetup writes the three DuckDB files of one size: the rules' tables, the diff's pairs, and
// the backfill's raw events with their live version and project files.
func scaleSetup(ctx context.Context, dir string, rows int) error {
	open := func(name string) (tsql.Engine, error) {
		return tsql.Create(ctx, "duckdb:"+filepath.Join(dir, name+".duckdb"))
	}
	e, err := open("rules")
	if err != nil {
		return err
	}
	err = makeOrders(ctx, e, "orders", rows, 365)
	for _, t := range ruleTables {
		if err == nil {
			err = e.CreateTableAs(ctx, t.name, "", nil, t.query)
		}
	}
	e.Close()
	if err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	if e, err = open("diff"); err != nil {
		return err
	}
	err = makeOrders(ctx, e, "orders_old", rows, 365)
	for _, q := range []string{`CREATE TABLE orders_same AS SELECT * FROM orders_old`, sparseTable} {
		if err == nil {
			err = e.Exec(ctx, q)
		}
	}
	e.Close()
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	if e, err = open("backfill"); err != nil {
		return err
	}
	defer e.Close()
	if err := e.Exec(ctx, fmt.Sprintf(ordersRawSQL, rows, rows)); err != nil {
		return err
	}
	q, args, err := backfillWhole(e)
	if err != nil {
		return err
	}
	if err := e.Exec(ctx, "CREATE TABLE orders__v1 AS "+q, args...); err != nil {
		return err
	}
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v1"}}); err != nil {
		return err
	}
	return writeBackfills(filepath.Join(dir, "backfills"))
}

// peakRSS is this process's peak resident set (VmHWM) in KiB, 0 when /proc cannot tell.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
