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

// TestDuckDBSchemaTarget is a DuckDB user whose tables live in a schema of their own
// (analytics.sales, with a list column beside the numbers): duckdb:FILE?schema=analytics is
// that schema's warehouse. init lists its tables, adopt makes analytics.sales a view, a backfill
// builds and validates v2 beside it, and swap and rollback move readers, who name the table as
// they always did, analytics.sales, from the file's default schema. A schema the file lacks, or
// any other option, is bad input.
func TestDuckDBSchemaTarget(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "w.duckdb")
	sqlAt(t, "duckdb:"+file, "CREATE SCHEMA analytics",
		"CREATE TABLE analytics.sales AS SELECT i AS id, DATE '2026-07-01' + CAST(i // 4 AS INTEGER) AS d, 10 AS amount, [i, i + 1] AS items FROM range(40) t(i)",
		"CREATE TABLE main.sales AS SELECT 1 AS id") // another table of the same name, in main: not the target's
	url := "duckdb:" + file + "?schema=analytics"
	project := filepath.Join(dir, "p")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(project)
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := cli(t, args...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	if out := run(0, "--target", url, "init"); !strings.Contains(out, "1 table") || !strings.Contains(out, "trueup adopt sales") {
		t.Errorf("init does not list the schema's table:\n%s", out)
	}
	if err := os.WriteFile("backfills/fix_sales.sql", []byte(`-- table: sales
-- partition: d
-- key: id
-- reason: bug
-- objective: the amounts of three days were priced wrong.
-- scope: 2026-07-03..2026-07-05
-- expect: inside scope rows +0, sum(amount) +19..21%; outside scope identical
SELECT id, d, amount + 2 AS amount, items FROM sales__v1 WHERE d >= $start AND d < $end
`), 0o644); err != nil {
		t.Fatal(err)
	}
	run(0, "adopt", "sales", "--partition", "d")
	run(0, "backfill", "run", "fix_sales")
	total := func() int64 {
		t.Helper()
		e := sqltest.Open(t, "duckdb:"+file)
		defer e.Close()
		res, err := e.Query(context.Background(), "SELECT sum(amount) FROM analytics.sales")
		if err != nil {
			t.Fatal(err)
		}
		if res, err := e.Query(context.Background(), "SELECT count(*) FROM main.sales"); err != nil || tsql.AsInt64(res.Rows[0][0]) != 1 {
			t.Errorf("main.sales was touched: %v %v", res, err)
		}
		return tsql.AsInt64(res.Rows[0][0])
	}
	run(0, "swap", "sales", "--to", "v2")
	if got := total(); got != 400+12*2 {
		t.Errorf("analytics.sales sums to %d after the swap, want %d", got, 400+12*2)
	}
	run(0, "rollback", "sales")
	if got := total(); got != 400 {
		t.Errorf("analytics.sales sums to %d after the rollback, want 400", got)
	}
	for arg, want := range map[string]string{
		"duckdb:" + file + "?schema=nosuch":   "there is no schema nosuch in " + file,
		"duckdb:" + file + "?threads=1":       "a duckdb target takes a path and at most ?schema=NAME",
		"duckdb:" + file + "?schema=a;DROP x": "a duckdb target takes a path and at most ?schema=NAME",
	} {
		if out := run(2, "--target", arg, "init", "--dir", t.TempDir()); !strings.Contains(out, want) {
			t.Errorf("--target %s: want %q in:\n%s", arg, want, out)
		}
	}
}
