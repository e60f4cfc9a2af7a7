package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// sqlAt runs statements on the warehouse at url and closes it.
func sqlAt(t *testing.T, url string, stmts ...string) {
	t.Helper()
	e, err := tsql.Create(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, s := range stmts {
		if err := e.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// A diff the engine cannot run exits 2 with the engine's cause on stderr, never 1 as if the
// relations differed.
func TestDiffEngineErrorExits2(t *testing.T) {
	for kind, url := range targetURLs(t) {
		t.Run(kind, func(t *testing.T) {
			if kind == "duckdb" {
				sqlAt(t, url, "CREATE TABLE good AS SELECT 1 AS id, 5 AS v",
					"CREATE VIEW bad AS SELECT id, CAST('x' || id AS INTEGER) AS v FROM good")
			} else {
				sqlAt(t, url, "CREATE TABLE good (id Int64, v UInt8) ENGINE = Memory",
					"INSERT INTO good SELECT toInt64(1), toUInt8(5)",
					"CREATE VIEW bad AS SELECT id, throwIf(v > 0) AS v FROM good")
			}
			emptyHere(t)
			code, out, errs := cli(t, "--target", url, "diff", "--old", "good", "--new", "bad", "--key", "id")
			if code != exitUsage {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, out, errs)
			}
			cause := map[string]string{"duckdb": "Could not convert string 'x1' to INT32", "clickhouse": "throwIf"}[kind]
			if !strings.Contains(errs, cause) {
				t.Errorf("stderr lacks the cause %q:\n%s", cause, errs)
			}
		})
	}
}

// A native DuckDB UUID key against a copy holding it as text, in the same file or in
// ClickHouse (as UUID or String), matches row by row and prints in canonical form.
func TestDiffUUIDKeys(t *testing.T) {
	oldURL := "duckdb:" + filepath.Join(t.TempDir(), "a.duckdb")
	id := "('00000000-0000-4000-8000-' || substr(CAST(1000000000000 + i AS VARCHAR), 2))"
	sqlAt(t, oldURL, "CREATE TABLE u AS SELECT "+id+"::UUID AS id, i AS v FROM range(60) t(i)",
		"CREATE TABLE u_text AS SELECT "+id+" AS id, CASE WHEN i = 7 THEN 700 ELSE i END AS v FROM range(60) t(i) WHERE i <> 13")
	cases := map[string][]string{"duckdb_text": {"--target", oldURL, "diff", "--old", "u", "--new", "u_text", "--key", "id"}}
	if url := sqltest.ClickHouseURL(t); url != "" {
		chID := "concat('00000000-0000-4000-8000-', substring(toString(1000000000000 + number), 2))"
		sqlAt(t, url, "CREATE TABLE u (id UUID, v Int64) ENGINE = Memory",
			"INSERT INTO u SELECT toUUID("+chID+"), if(number = 7, 700, number) FROM system.numbers WHERE number <> 13 LIMIT 59",
			"CREATE TABLE u_text (id String, v Int64) ENGINE = Memory",
			"INSERT INTO u_text SELECT "+chID+", if(number = 7, 700, number) FROM system.numbers WHERE number <> 13 LIMIT 59")
		cases["clickhouse_uuid"] = []string{"diff", "--old-target", oldURL, "--new-target", url, "--old", "u", "--key", "id"}
		cases["clickhouse_text"] = []string{"diff", "--old-target", oldURL, "--new-target", url, "--old", "u", "--new", "u_text", "--key", "id"}
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			emptyHere(t)
			code, out, errs := cli(t, args...)
			if code != exitFailed {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
			}
			for _, want := range []string{
				"rows: 0 added, 1 removed, 1 changed, 0 duplicate keys",
				"id=00000000-0000-4000-8000-000000000013",
				"id=00000000-0000-4000-8000-000000000007",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// trueup diff compares each column at the coarser precision of its sides and says which: a
// 1 ms move between two DuckDB files and between TIMESTAMP and TIMESTAMPTZ is a change (exit
// 1); DOUBLE against REAL or DECIMAL(6,3) holding the same numbers is not (exit 0); nor is DuckDB
// TIMESTAMP with fractions against a ClickHouse DateTime, beyond the one row added.
func TestDiffPrecision(t *testing.T) {
	aURL := "duckdb:" + filepath.Join(t.TempDir(), "a.duckdb")
	bURL := "duckdb:" + filepath.Join(t.TempDir(), "b.duckdb")
	ts := func(name, typ, extra string) string {
		return "CREATE TABLE " + name + " AS SELECT i AS id, CAST(make_timestamp(CAST((1783684800 + i * 60) * 1000000 + (i % 10) * 100000" +
			extra + " AS BIGINT)) AS " + typ + ") AS ts, CAST(100.98 + i / 8 AS DOUBLE) AS x FROM range(60) t(i)"
	}
	ms := " + CASE WHEN i = 17 THEN 1000 ELSE 0 END"
	sqlAt(t, aURL, ts("e", "TIMESTAMP", ""), ts("e_tz", "TIMESTAMPTZ", ms),
		"CREATE TABLE e_real AS SELECT id, ts, CAST(x AS REAL) AS x FROM e",
		"CREATE TABLE e_dec AS SELECT id, ts, CAST(x AS DECIMAL(6,3)) AS x FROM e")
	sqlAt(t, bURL, ts("e", "TIMESTAMP", ms))
	type run struct {
		args []string
		code int
		want []string
	}
	runs := map[string]run{
		"files_1ms": {[]string{"diff", "--old-target", aURL, "--new-target", bURL, "--old", "e", "--key", "id"}, exitFailed,
			[]string{"rows: 0 added, 0 removed, 1 changed, 0 duplicate keys", "precision  ts microseconds, x 6 decimals"}},
		"tz_1ms": {[]string{"--target", aURL, "diff", "--old", "e", "--new", "e_tz", "--key", "id"}, exitFailed,
			[]string{"rows: 0 added, 0 removed, 1 changed, 0 duplicate keys", "precision  ts microseconds"}},
		"real": {[]string{"--target", aURL, "diff", "--old", "e", "--new", "e_real", "--key", "id"}, exitOK,
			[]string{"x float32, 6 decimals"}},
		"decimal": {[]string{"--target", aURL, "diff", "--old", "e", "--new", "e_dec", "--key", "id"}, exitOK,
			[]string{"x 3 decimals"}},
	}
	if url := sqltest.ClickHouseURL(t); url != "" {
		sqlAt(t, url, "CREATE TABLE e (id Int64, ts DateTime, x Float64) ENGINE = Memory",
			"INSERT INTO e SELECT toInt64(number), toDateTime(1783684800 + number * 60), 100.98 + number / 8 FROM system.numbers LIMIT 61")
		runs["clickhouse_datetime"] = run{[]string{"diff", "--old-target", aURL, "--new-target", url, "--old", "e", "--key", "id", "--format", "json"}, exitFailed,
			[]string{`"added": 1,`, `"changed": 0,`, `"ts": "seconds"`}}
	}
	for name, r := range runs {
		t.Run(name, func(t *testing.T) {
			emptyHere(t)
			code, out, errs := cli(t, r.args...)
			if code != r.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, r.code, out, errs)
			}
			for _, want := range r.want {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// trueup diff --partition on a timestamp column compares it by day, or by --grain; a grain
// that is not day, hour or month is bad usage (exit 2), and so is a grain on a column that is
// not a date or timestamp.
func TestDiffTimestampGrain(t *testing.T) {
	url := "duckdb:" + filepath.Join(t.TempDir(), "a.duckdb")
	sqlAt(t, url, "CREATE TABLE ev AS SELECT i AS id, TIMESTAMP '2026-07-30 00:00:00' + INTERVAL (i * 7) HOUR AS ts, 'a' AS v FROM range(12) t(i)",
		"CREATE TABLE ev2 AS SELECT id, ts, CASE WHEN id = 10 THEN 'b' ELSE v END AS v FROM ev")
	emptyHere(t)
	base := []string{"--target", url, "diff", "--old", "ev", "--new", "ev2", "--key", "id", "--partition", "ts", "--all"}
	for _, c := range []struct {
		grain string
		code  int
		want  []string
	}{
		{"", exitFailed, []string{"2026-07-31 ", "changed  2026-08-01  id=10: v a → b", "4 partitions: 3 unchanged, 0 expected, 1 unexpected"}},
		{"month", exitFailed, []string{"2026-07 ", "changed  2026-08  id=10: v a → b", "2 partitions: 1 unchanged, 0 expected, 1 unexpected"}},
		{"week", exitUsage, nil},
	} {
		args := base
		if c.grain != "" {
			args = append(slices.Clone(base), "--grain", c.grain)
		}
		code, out, errs := cli(t, args...)
		if code != c.code {
			t.Fatalf("--grain %q: exit %d, want %d\n%s\n%s", c.grain, code, c.code, out, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("--grain %q: stdout lacks %q:\n%s", c.grain, w, out)
			}
		}
	}
	if code, _, errs := cli(t, "--target", url, "diff", "--old", "ev", "--new", "ev2", "--key", "ts", "--partition", "id", "--grain", "month"); code != exitUsage {
		t.Errorf("--grain on an integer partition: exit %d, want 2\n%s", code, errs)
	}
}
