package reconcile_test

import (
	"testing"

	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestWideIntegersExact: integers beyond a double's 53 bits (a UBIGINT or UInt64 above the largest
// BIGINT, a HUGEINT) compare exactly: a change in the last digit is a changed row, named in the
// changed columns, and printed with every digit.
func TestWideIntegersExact(t *testing.T) {
	check := func(t *testing.T, e tsql.Engine, cols ...string) {
		t.Helper()
		r := diff(t, reconcile.Spec{Old: reconcile.Side{Engine: e, Relation: "wide_old"}, New: reconcile.Side{Engine: e, Relation: "wide_new"}, Key: []string{"id"}})
		want := []string{"1 ub 18446744073709551615→18446744073709551614"}
		if len(cols) > 1 {
			want = append(want, "2 h 123456789012345678901234567→123456789012345678901234568")
		}
		expectChanged(t, r, true, want...)
		changed := map[string]int64{}
		for _, p := range r.Partitions {
			for c, n := range p.ChangedColumns {
				changed[c] += n
			}
		}
		for _, c := range cols {
			if changed[c] != 1 {
				t.Errorf("changed columns %v, want %s once", changed, c)
			}
		}
	}
	t.Run("duckdb", func(t *testing.T) {
		e := sqltest.DuckDB(t)
		exec(t, e,
			"CREATE TABLE wide_old AS SELECT i AS id, CAST(18446744073709551615 AS UBIGINT) AS ub, CAST('123456789012345678901234567' AS HUGEINT) AS h FROM range(5) t(i)",
			"CREATE TABLE wide_new AS SELECT id, CASE WHEN id = 1 THEN CAST(18446744073709551614 AS UBIGINT) ELSE ub END AS ub, CASE WHEN id = 2 THEN h + 1 ELSE h END AS h FROM wide_old")
		check(t, e, "ub", "h")
	})
	t.Run("clickhouse", func(t *testing.T) {
		e := sqltest.ClickHouse(t)
		if e == nil {
			return
		}
		exec(t, e, "CREATE TABLE wide_old (id Int64, ub UInt64) ENGINE = MergeTree ORDER BY id",
			"CREATE TABLE wide_new AS wide_old",
			"INSERT INTO wide_old SELECT toInt64(number), toUInt64('18446744073709551615') FROM numbers(5)",
			"INSERT INTO wide_new SELECT id, if(id = 1, toUInt64('18446744073709551614'), ub) FROM wide_old")
		check(t, e, "ub")
	})
}
