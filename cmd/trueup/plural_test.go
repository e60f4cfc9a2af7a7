package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCountsAreSingularForOne: what diff and check print of a count of one says it in the
// singular — a duplicate key, a rule, a query, a decimal — and many in the plural.
func TestCountsAreSingularForOne(t *testing.T) {
	aURL := "duckdb:" + filepath.Join(t.TempDir(), "a.duckdb")
	bURL := "duckdb:" + filepath.Join(t.TempDir(), "b.duckdb")
	sqlAt(t, aURL, "CREATE TABLE one AS SELECT 1 AS id", "CREATE TABLE t AS SELECT i AS id, DATE '2026-07-01' + CAST(i % 2 AS INTEGER) AS d, CAST(i AS DOUBLE) AS x FROM range(10) r(i)")
	// one key (3) twice in b, two keys (4, 5) twice in c
	sqlAt(t, bURL, "CREATE TABLE t AS SELECT i AS id, DATE '2026-07-01' + CAST(i % 2 AS INTEGER) AS d, CAST(i AS DOUBLE) AS x FROM range(10) r(i)",
		"INSERT INTO t VALUES (3, DATE '2026-07-02', 3.0)",
		"CREATE TABLE c AS SELECT * FROM t",
		"INSERT INTO c VALUES (4, DATE '2026-07-01', 4.0), (5, DATE '2026-07-02', 5.0)")
	emptyHere(t)
	for name, tc := range map[string]struct {
		args      []string
		code      int
		want, not []string
	}{
		"diff_rows_one": {[]string{"diff", "--old-target", aURL, "--new-target", bURL, "--old", "t", "--key", "id", "--rows"}, exitFailed,
			[]string{"rows: 0 added, 0 removed, 0 changed, 1 duplicate key\n"}, []string{"1 duplicate keys"}},
		"diff_rows_two": {[]string{"diff", "--old-target", aURL, "--new-target", bURL, "--old", "t", "--new", "c", "--key", "id", "--rows"}, exitFailed,
			[]string{"rows: 0 added, 0 removed, 0 changed, 3 duplicate keys\n"}, nil},
		"diff_text_one": {[]string{"diff", "--old-target", aURL, "--new-target", bURL, "--old", "t", "--key", "id", "--partition", "d"}, exitFailed,
			[]string{"1 duplicate key", "0 changed, 1 duplicate key\n"}, []string{"1 duplicate keys"}},
		"diff_precision_one": {[]string{"--target", aURL, "diff", "--old", "t", "--new", "t", "--key", "id", "--precision", "x=1"}, exitOK,
			[]string{"x 1 decimal\n"}, []string{"1 decimals"}},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errs := cli(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errs, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errs)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(out+errs, w) {
					t.Errorf("output says %q:\n%s%s", w, out, errs)
				}
			}
		})
	}
	dir := writeRules(t, map[string]string{"t/rows.sql": "-- kind: row_count\n-- table: t\n-- min: 1\n"})
	code, out, errs := cli(t, "--target", aURL, "check", "--rules", dir)
	if code != exitOK || !strings.Contains(out, ": 1 rule, 1 passed, 0 failed, 0 warned, 0 could not run; 1 query in ") {
		t.Errorf("check: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = cli(t, "--target", aURL, "check", "--rules", dir, "--explain")
	if code != exitOK || !strings.Contains(out, "-- 1 rule in 1 query (") {
		t.Errorf("check --explain: exit %d\n%s%s", code, out, errs)
	}
	dir = writeRules(t, map[string]string{
		"one/schema.sql": "-- kind: schema\n-- table: one\n",
		"t/min_rows.sql": "-- kind: completeness\n-- table: t\n-- partition: d\n-- min_rows: 1\n",
		"t/dist.sql":     "-- kind: distribution\n-- table: t\n-- partition: d\n-- dimension: x\n-- baseline: 1\n-- threshold: 99%\n",
	})
	code, out, errs = cli(t, "--target", aURL, "check", "--rules", dir, "--explain")
	for _, w := range []string{"at least 1 row per d", "over the 1 partition before", "-- 3 rules in "} {
		if !strings.Contains(out, w) {
			t.Errorf("check --explain lacks %q: exit %d\n%s%s", w, code, out, errs)
		}
	}
	code, out, errs = cli(t, "--target", aURL, "check", "--rules", dir, "--format", "json")
	if code != exitOK || !strings.Contains(out, `"message": "snapshot of 1 column recorded"`) {
		t.Errorf("check: exit %d\n%s%s", code, out, errs)
	}
}
