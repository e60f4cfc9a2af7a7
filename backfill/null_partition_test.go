package backfill_test

import (
	"context"
	"fmt"
	"testing"

	"trueup/backfill"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// nullDayLive is a live version whose partition column is NULL in some rows (events whose day
// the loader did not know): on ClickHouse a Nullable(Date) of a table with no PARTITION BY.
var nullDayLive = map[string][]string{
	"clickhouse": {
		"CREATE TABLE ev_raw (id Int64, d Nullable(Date), v Int64) ENGINE = MergeTree ORDER BY id",
		"CREATE TABLE ev__v1 (id Int64, d Nullable(Date), v Int64) ENGINE = MergeTree ORDER BY id",
		"INSERT INTO ev_raw SELECT number, if(number % 50 = 0, NULL, toDate('2026-07-01') + number % 10), 2 FROM system.numbers LIMIT 500",
	},
	"duckdb": {
		"CREATE TABLE ev_raw AS SELECT i AS id, CASE WHEN i % 50 = 0 THEN NULL ELSE DATE '2026-07-01' + (i % 10)::INT END AS d, 2 AS v FROM range(0, 500) t(i)",
		"CREATE TABLE ev__v1 (id BIGINT, d DATE, v BIGINT)",
	},
}

// TestBackfillKeepsRowsWithANullPartition: the rows whose partition column is NULL lie in no
// window of the scope, so the new version carries them from live like any row outside it. On
// DuckDB the carry's WHERE NOT (d >= $start AND d < $end) is NULL for them: the version lost
// them (490 rows of 500), and the validation, trusting the carry's recorded fingerprints,
// passed it.
func TestBackfillKeepsRowsWithANullPartition(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		for _, q := range append(nullDayLive[e.Info().Kind], "INSERT INTO ev__v1 SELECT id, d, 1 FROM ev_raw") {
			if err := e.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "ev", Table: "ev__v1"}}); err != nil {
			t.Fatal(err)
		}
		r, _ := soleBackfill(t, e, "backfills/fix_ev.sql", `-- table: ev
-- partition: d
-- key: id
-- reason: bug
-- objective: v was halved on 2026-07-03 and 04.
-- scope: 2026-07-03..2026-07-04
-- expect: inside scope rows +0..0%, sum(v) +100..100%; outside scope identical
SELECT id, d, v FROM ev_raw WHERE d >= $start AND d < $end
`)
		done := runToEnd(t, ctx, r, "fix_ev", backfill.RunOptions{Actor: "ann"})
		if done.State != backfill.RunValidated {
			t.Errorf("run ended %s: %s %s", done.State, done.Error, done.Validation)
		}
		res, err := e.Query(ctx, "SELECT count(*), count(d), sum(v) FROM ev__v2")
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(tsql.AsInt64(res.Rows[0][0]), " ", tsql.AsInt64(res.Rows[0][1]), " ", tsql.AsInt64(res.Rows[0][2]))
		// 500 rows, 10 of them without a day; the 100 of the two days rebuilt with v = 2
		if want := "500 490 600"; got != want {
			t.Errorf("ev__v2 rows, rows with a day, sum(v): %s, want %s", got, want)
		}
	})
}
