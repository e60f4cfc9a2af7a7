package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	tsql "trueup/sql"
)

// TestDiffPrecisionFlag: a timestamp moved by 1 ms is a change at the columns' own precision,
// and none at --precision ts=s; a bad precision is a one-line cause, exit 2.
func TestDiffPrecisionFlag(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	url := "duckdb:" + filepath.Join(dir, "wh.duckdb")
	e, err := tsql.Create(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE a AS SELECT 1 AS id, TIMESTAMP '2026-07-01 10:00:00.000' AS ts",
		"CREATE TABLE b AS SELECT 1 AS id, TIMESTAMP '2026-07-01 10:00:00.001' AS ts",
	} {
		if err := e.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	diff := func(extra ...string) (int, string, string) {
		return cli(t, append([]string{"--target", url, "diff", "--old", "a", "--new", "b", "--key", "id"}, extra...)...)
	}
	if code, out, errs := diff(); code != exitFailed || !strings.Contains(out, "1 changed") && !strings.Contains(out, "changed: 1") && !strings.Contains(out, "1 row changed") {
		t.Errorf("1 ms apart at the columns' precision: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := diff("--precision", "ts=s"); code != exitOK {
		t.Errorf("1 ms apart at --precision ts=s: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := diff("--precision", "ts=fortnight"); code != exitUsage || strings.Count(strings.TrimSpace(errs), "\n") > 1 || !strings.Contains(errs, "fortnight") {
		t.Errorf("a bad precision: exit %d: %s", code, errs)
	}
}

// TestDiffEmptySidesJSON: two empty relations diff to "partitions": [], not null.
func TestDiffEmptySidesJSON(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	url := "duckdb:" + filepath.Join(dir, "wh.duckdb")
	e, err := tsql.Create(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE TABLE a (id INTEGER, d DATE)", "CREATE TABLE b (id INTEGER, d DATE)"} {
		if err := e.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	for _, part := range [][]string{nil, {"--partition", "d"}} {
		code, out, errs := cli(t, append([]string{"--target", url, "diff", "--old", "a", "--new", "b", "--key", "id", "--format", "json"}, part...)...)
		if code != exitOK || !strings.Contains(out, `"partitions": []`) {
			t.Errorf("%v: exit %d\n%s%s", part, code, out, errs)
		}
	}
}
