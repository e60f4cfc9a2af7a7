package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// ordersAt makes a warehouse at url holding orders: the diff rows plus extra, and closes it.
func ordersAt(t *testing.T, url string, extra map[string]int) {
	t.Helper()
	e, err := tsql.Create(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	loadDiffTable(t, e, "orders", diffRows(extra))
}

// emptyHere makes the test run in an empty folder and returns it.
func emptyHere(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	return dir
}

// A diff of two targets given as URLs runs in a folder with no trueup.yaml: the outcome is
// printed and exits as it would in a project, one stderr line says it is not kept, and nothing
// is written to the folder; with --state it is kept there, run after run.
func TestDiffWithoutProject(t *testing.T) {
	oldURL := "duckdb:" + filepath.Join(t.TempDir(), "a.duckdb")
	ordersAt(t, oldURL, nil)
	news := map[string]string{"duckdb": "duckdb:" + filepath.Join(t.TempDir(), "b.duckdb")}
	if url := sqltest.ClickHouseURL(t); url != "" {
		news["clickhouse"] = url
	}
	for kind, newURL := range news {
		t.Run(kind, func(t *testing.T) {
			ordersAt(t, newURL, map[string]int{"2026-07-10": 1})
			dir := emptyHere(t)
			// --new is left out: the same table on both sides, as reladiff compares
			code, out, errs := cli(t, "diff", "--old-target", oldURL, "--new-target", newURL, "--old", "orders",
				"--key", "order_id", "--partition", "order_date")
			if code != exitFailed {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
			}
			for _, want := range []string{
				"2026-07-10         20         21     +1         5.0  differs   unexpected",
				"4 partitions: 3 unchanged, 0 expected, 1 unexpected",
				"rows: 1 added, 0 removed, 0 changed, 0 duplicate keys",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			if want := "trueup: no trueup.yaml in " + dir + ": the diff is printed and not kept (--state FILE keeps it)\n"; !strings.HasPrefix(errs, want) {
				t.Errorf("stderr does not start with %q:\n%s", want, errs)
			}
			if files := snapshot(t, dir); len(files) != 0 {
				t.Errorf("a diff without a project wrote %v", keys(files))
			}
			// the old side against itself: identical, exit 0
			if code, out, errs := cli(t, "--target", oldURL, "diff", "--old", "orders", "--new", "orders", "--key", "order_id"); code != exitOK || !strings.Contains(out, "unchanged") {
				t.Errorf("identical: exit %d\n%s\n%s", code, out, errs)
			}
			for run := 1; run <= 2; run++ {
				code, _, errs := cli(t, "diff", "--old-target", oldURL, "--new-target", newURL, "--old", "orders", "--key", "order_id",
					"--partition", "order_date", "--state", "kept.duckdb")
				if code != exitFailed || !strings.Contains(errs, "the diff is kept in "+filepath.Join(dir, "kept.duckdb")) ||
					!strings.Contains(errs, "(diff "+string(rune('0'+run))+")") {
					t.Errorf("--state, run %d: exit %d\n%s", run, code, errs)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "kept.duckdb")); err != nil {
				t.Errorf("--state: %v", err)
			}
		})
	}
}

// check --rules DIR --target URL runs a rules folder in a folder with no trueup.yaml: results
// printed, exit 0 when the rules pass and 1 when one fails, nothing written without --state.
func TestCheckWithoutProject(t *testing.T) {
	for kind, url := range targetURLs(t) {
		t.Run(kind, func(t *testing.T) {
			warehouse(t, url)
			rulesDir := t.TempDir()
			write := func(name, text string) {
				p := filepath.Join(rulesDir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("orders/unique_order_id.sql", "-- kind: uniqueness\n-- table: orders\n-- columns: order_id\n")
			dir := emptyHere(t)
			code, out, errs := cli(t, "check", "--rules", rulesDir, "--target", url)
			if code != exitOK || !strings.Contains(out, "PASS  unique_order_id") || !strings.Contains(out, "1 rule, 1 passed, 0 failed") {
				t.Fatalf("passing rule: exit %d\n%s\n%s", code, out, errs)
			}
			if !strings.Contains(errs, "the check is printed and not kept") {
				t.Errorf("stderr does not say the run is not kept:\n%s", errs)
			}
			write("orders/few.sql", "-- kind: completeness\n-- table: orders\n-- min_rows: 1000\n")
			code, out, errs = cli(t, "check", "--rules", rulesDir, "--target", url, "--format", "junit")
			if code != exitFailed || !strings.Contains(out, `<testcase classname="rules.completeness" name="few"`) || !strings.Contains(out, `failures="1"`) {
				t.Errorf("failing rule: exit %d\n%s\n%s", code, out, errs)
			}
			if files := snapshot(t, dir); len(files) != 0 {
				t.Errorf("a check without a project wrote %v", keys(files))
			}
			if code, _, errs := cli(t, "check", "--rules", rulesDir, "--target", url, "--state", "s.duckdb"); code != exitFailed || !strings.Contains(errs, "kept in "+filepath.Join(dir, "s.duckdb")) {
				t.Errorf("--state: exit %d\n%s", code, errs)
			}
			if _, err := os.Stat(filepath.Join(dir, "s.duckdb")); err != nil {
				t.Errorf("--state: %v", err)
			}
		})
	}
}

// Without a project every other command, and diff or check without URLs, exits 2 with one line
// that says what to run; nothing is written.
func TestCommandsWithoutProject(t *testing.T) {
	dir := emptyHere(t)
	noProject := "trueup: trueup.yaml not found in " + dir + ": run trueup init to make a project (or pass --config)"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"versions", []string{"versions", "orders"}, noProject},
		{"swap", []string{"swap", "orders", "--to", "v2"}, noProject},
		{"rollback", []string{"rollback", "orders"}, noProject},
		{"backfill_plan", []string{"backfill", "plan", "fix"}, noProject},
		{"notice_list", []string{"notice", "list"}, noProject},
		{"serve", []string{"serve"}, noProject},
		{"other_config", []string{"--config", "other.yaml", "diff", "--target", "duckdb::memory:", "--old", "a", "--new", "b", "--key", "id"},
			"trueup: other.yaml not found in " + dir + ": run trueup init to make a project (or pass --config)"},
		{"diff_by_name", []string{"diff", "--target", "warehouse", "--old", "a", "--new", "b", "--key", "id"},
			"trueup: diff: there is no trueup.yaml here, so name both sides' targets by URL: --target URL, or --old-target URL --new-target URL (or run trueup init to make a project)"},
		{"diff_one_url", []string{"diff", "--old-target", "duckdb::memory:", "--old", "a", "--new", "b", "--key", "id"},
			"trueup: diff: there is no trueup.yaml here, so name both sides' targets by URL"},
		{"check_without_rules", []string{"check", "--target", "duckdb::memory:"},
			"trueup: check: there is no trueup.yaml here: name the rules and the target, --rules DIR --target URL (or run trueup init to make a project)"},
		{"check_by_name", []string{"check", "--rules", ".", "--target", "warehouse"},
			"trueup: check: there is no trueup.yaml here, so name the target by URL: --rules DIR --target URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := cli(t, tc.args...)
			if code != exitUsage || !strings.HasPrefix(errs, tc.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, want 2 and the one line %q\nstdout: %s\nstderr: %s", code, tc.want, out, errs)
			}
		})
	}
	if files := snapshot(t, dir); len(files) != 0 {
		t.Errorf("refused commands wrote %v", keys(files))
	}
}
