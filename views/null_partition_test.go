package views_test

import (
	"context"
	"testing"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// nullOrders is orders__v1 whose day is NULL in some rows (orders the loader could not date): on
// ClickHouse a Nullable(Date) of a table with no PARTITION BY. July 1–20, 10 rows a day, and 3
// rows without a day.
var nullOrders = map[string][]string{
	"clickhouse": {
		"CREATE TABLE orders__v1 (id Int64, d Nullable(Date), region String, amount Int64) ENGINE = MergeTree ORDER BY id",
		"INSERT INTO orders__v1 SELECT number + 1, if(number < 200, toDate('2026-07-01') + number % 20, NULL), 'NA', 5 FROM system.numbers LIMIT 203",
	},
	"duckdb": {
		"CREATE TABLE orders__v1 AS SELECT i + 1 AS id, CASE WHEN i < 200 THEN DATE '2026-07-01' + (i % 20)::INT END AS d, 'NA' AS region, 5::BIGINT AS amount FROM range(0, 203) t(i)",
	},
}

// TestRowsWithoutAPartitionAreCarried: the rows whose partition column is NULL lie in no
// partition of the scope, and a pipeline writes them like any other: written to live while the
// new version is built, they are carried with the swap; written to the new version after it, they
// are carried back by the rollback; written to a version after it stopped being live, they are
// caught and caught up. Before, marks measured no NULL partition and all three lost them.
func TestRowsWithoutAPartitionAreCarried(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		for _, q := range nullOrders[e.Info().Kind] {
			if err := e.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		pointView(t, e, "orders", 1)
		s := views.New("w", e, ledgertest.Open(t))
		if _, err := s.Versions(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		buildLike(t, s, e)
		if n := count(t, e, "orders__v2", "d IS NULL"); n != 3 {
			t.Fatalf("the build holds %d of the 3 rows without a day", n)
		}
		undated := func(table string, first, n int) {
			t.Helper()
			rows := make([][]any, n)
			for i := range rows {
				rows[i] = []any{int64(first + i), nil, "NA", int64(5)}
			}
			if err := e.Insert(ctx, table, []string{"id", "d", "region", "amount"}, rows); err != nil {
				t.Fatal(err)
			}
		}

		undated("orders__v1", 1000, 2)
		write(t, e, "orders__v1", july(21), 1100, 1)
		plan, err := s.PlanSwap(ctx, "orders", "v2")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := carried(plan.Changes[0].Carried), "2026-07-21 +1 rows; d IS NULL +2 rows"; got != want {
			t.Errorf("planned carry = %q, want %q", got, want)
		}
		if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"}); err != nil {
			t.Fatal(err)
		}
		if n := count(t, e, "orders", "d IS NULL"); n != 5 {
			t.Errorf("after the swap readers see %d of the 5 rows without a day", n)
		}
		if n := count(t, e, "orders", "1=1"); n != 206 {
			t.Errorf("after the swap readers see %d rows, want 206", n)
		}

		undated("orders__v2", 2000, 1)
		rb, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		if got := carried(rb.Changes[0].Carried); got != "d IS NULL +1 rows" {
			t.Errorf("rollback carried %q", got)
		}
		if n := count(t, e, "orders", "d IS NULL"); n != 6 {
			t.Errorf("after the rollback readers see %d of the 6 rows without a day", n)
		}

		// a writer still writing v2
		undated("orders__v2", 3000, 4)
		stale, err := s.Stale(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if len(stale) != 1 || carried(stale[0].Partitions) != "d IS NULL +4 rows" {
			t.Fatalf("stale = %+v", stale)
		}
		if _, err := s.CatchUp(ctx, "orders", "ann"); err != nil {
			t.Fatal(err)
		}
		if n := count(t, e, "orders", "d IS NULL"); n != 10 {
			t.Errorf("after the catch-up readers see %d of the 10 rows without a day", n)
		}
		if n := count(t, e, "orders", "id >= 1000"); n != 8 {
			t.Errorf("after the catch-up readers see %d of the 8 rows written since the build, duplicated or lost", n)
		}
	})
}
