package main

import (
	"context"
	"strings"
	"testing"

	tsql "trueup/sql"
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
