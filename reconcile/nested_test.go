package reconcile_test

import (
	dbsql "database/sql"
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestNestedTypes: arrays, tuples or structs, maps and low-cardinality strings are compared by
// value inside each engine. On ClickHouse an outer join cannot make them NULL (join_use_nulls
// refuses "Nested type Array(String) cannot be inside Nullable type"), so they leave the join as
// text; the changed row of each kind is found, and nothing else.
func TestNestedTypes(t *testing.T) {
	check := func(t *testing.T, e tsql.Engine, want ...string) {
		t.Helper()
		r := diff(t, reconcile.Spec{Old: reconcile.Side{Engine: e, Relation: "old_t"}, New: reconcile.Side{Engine: e, Relation: "new_t"}, Key: []string{"id"}})
		expectChanged(t, r, false, want...)
	}
	t.Run("duckdb", func(t *testing.T) {
		e := sqltest.DuckDB(t)
		exec(t, e,
			"CREATE TABLE old_t AS SELECT i AS id, [CAST(i AS VARCHAR), 'x'] AS tags, {'a': i, 'b': 'k'} AS st, MAP {'k': i} AS m FROM range(100) t(i)",
			"CREATE TABLE new_t AS SELECT id, CASE WHEN id = 5 THEN ['5', 'y'] ELSE tags END AS tags, "+
				"CASE WHEN id = 6 THEN {'a': 60, 'b': 'k'} ELSE st END AS st, CASE WHEN id = 7 THEN MAP {'k': 70} ELSE m END AS m FROM old_t")
		check(t, e, "5 tags", "6 st", "7 m")

		// Lists differ where their elements do, not only where their text does: ['a', 'b c']
		// and ['a b', 'c'], [] and [''], [NULL] and [''].
		exec(t, e, "CREATE TABLE l_old AS SELECT * FROM (VALUES (1, ['a', 'b c']), (2, []::VARCHAR[]), (3, [NULL::VARCHAR]), (4, ['same'])) t(id, l)",
			"CREATE TABLE l_new AS SELECT * FROM (VALUES (1, ['a b', 'c']), (2, ['']), (3, ['']), (4, ['same'])) t(id, l)")
		r := diff(t, reconcile.Spec{Old: reconcile.Side{Engine: e, Relation: "l_old"}, New: reconcile.Side{Engine: e, Relation: "l_new"}, Key: []string{"id"}})
		if r.Rows.Changed != 3 {
			t.Errorf("lists: rows %+v, want ids 1, 2 and 3 changed", r.Rows)
		}
	})
	t.Run("clickhouse", func(t *testing.T) {
		url := sqltest.ClickHouseURL(t)
		if url == "" {
			return
		}
		// 18.16 makes a LowCardinality column only behind a setting trueup does not send.
		raw, err := dbsql.Open("clickhouse", url+"?allow_experimental_low_cardinality_type=1")
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		for _, s := range []string{
			"CREATE TABLE old_t (id UInt64, tags Array(String), st Tuple(UInt64, String), lc LowCardinality(String)) ENGINE = MergeTree ORDER BY id",
			"CREATE TABLE new_t AS old_t",
		} {
			if _, err := raw.ExecContext(t.Context(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		e := sqltest.Open(t, url)
		exec(t, e, "INSERT INTO old_t SELECT number, [toString(number), 'x'], (number, 'k'), 'lc' FROM numbers(100)",
			"INSERT INTO new_t SELECT id, if(id = 5, ['5', 'y'], tags), if(id = 6, (toUInt64(60), 'k'), st), if(id = 8, 'other', toString(lc)) FROM old_t")
		check(t, e, "5 tags", "6 st", "8 lc")

		// A list or tuple that left the join as text prints as one read from its table does:
		// a changed row (both sides joined) and a row of a partition only one side has alike.
		exec(t, e, "CREATE TABLE pr_old (id UInt64, d Date, l Array(String), tu Tuple(UInt8, Nullable(String)), n Array(Array(Int32))) ENGINE = MergeTree PARTITION BY d ORDER BY id",
			"CREATE TABLE pr_new AS pr_old",
			`INSERT INTO pr_old SELECT 1, toDate('2026-01-01'), ['a', 'b c'], (toUInt8(1), toNullable('x')), [[toInt32(1)], [2, 3]]`,
			`INSERT INTO pr_new SELECT 1, toDate('2026-01-01'), ['a b', 'c'], (toUInt8(1), toNullable('x')), [[toInt32(1), 2], [3]]
				UNION ALL SELECT 2, toDate('2026-01-02'), ['q\'s', 'NULL'], (toUInt8(2), CAST(NULL AS Nullable(String))), arrayFilter(x -> 0, [[toInt32(0)]])`)
		r := diff(t, reconcile.Spec{Old: reconcile.Side{Engine: e, Relation: "pr_old"}, New: reconcile.Side{Engine: e, Relation: "pr_new"}, Key: []string{"id"}, Partition: "d"})
		var got []string
		for _, c := range r.Samples.Changed {
			for _, col := range c.Columns {
				got = append(got, col.Column+" "+reconcile.ValueText(col.Old)+" → "+reconcile.ValueText(col.New))
			}
		}
		for _, row := range r.Samples.Added {
			for _, f := range row.Values {
				got = append(got, f.Name+" "+reconcile.ValueText(f.Value))
			}
		}
		want := []string{`l ["a","b c"] → ["a b","c"]`, `n [[1],[2,3]] → [[1,2],[3]]`,
			"id 2", "d 2026-01-02", `l ["q's","NULL"]`, `tu [2,null]`, `n []`}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("lists and tuples as printed (-want +got):\n%s", d)
		}

		// An Enum out of an outer join: a row only one side holds is added or removed, as with
		// any other column (18.16 filled the missing side with 0, which no Enum names).
		exec(t, e, "CREATE TABLE en_old (id UInt64, s Enum8('a' = 1, 'b' = 2), ns Nullable(Enum8('x' = 1))) ENGINE = MergeTree ORDER BY id",
			"CREATE TABLE en_new AS en_old",
			"INSERT INTO en_old SELECT number, if(number = 2, 'b', 'a'), if(number = 1, 'x', NULL) FROM numbers(5) WHERE number IN (1, 2, 4)",
			"INSERT INTO en_new SELECT number, if(number = 1, 'a', 'b'), if(number = 3, NULL, 'x') FROM numbers(5) WHERE number IN (1, 3, 4)")
		r = diff(t, reconcile.Spec{Old: reconcile.Side{Engine: e, Relation: "en_old"}, New: reconcile.Side{Engine: e, Relation: "en_new"}, Key: []string{"id"}})
		if r.Rows.Added != 1 || r.Rows.Removed != 1 || r.Rows.Changed != 1 || len(r.Samples.Changed) != 1 || len(r.Samples.Changed[0].Columns) != 2 {
			t.Errorf("enums: rows %+v, changed %+v; want 1 added, 1 removed, id 4 changed in s and ns", r.Rows, r.Samples.Changed)
		}
	})
}

// TestNestedTypesAcrossEngines: a DuckDB STRUCT (which its driver reads as a map of fields) and a
// ClickHouse Tuple (a list of values) holding the same values are the same, field by field in
// their declared order, nested in lists and structs too (a quoted field name included); a LIST
// and an Array likewise. Only the planted changes are found.
func TestNestedTypesAcrossEngines(t *testing.T) {
	engines := sqltest.Engines(t)
	if len(engines) < 2 {
		t.Skip("needs both engines")
	}
	duck, ch := engines[0], engines[1]
	exec(t, duck, `CREATE TABLE nest_old AS SELECT i AS id, [CAST(i AS VARCHAR), 'x'] AS tags,
		{'a': i, 'b c': 'k', 'l': [{'q': i * 2}]} AS st FROM range(50) t(i)`)
	exec(t, ch, "CREATE TABLE nest_new (id Int64, tags Array(String), st Tuple(Int64, String, Array(Tuple(Int64)))) ENGINE = MergeTree ORDER BY id",
		`INSERT INTO nest_new SELECT toInt64(number), if(number = 4, [toString(number), 'y'], [toString(number), 'x']),
			(toInt64(number), if(number = 3, 'K', 'k'), [tuple(toInt64(if(number = 5, 0, number * 2)))]) FROM numbers(50)`)
	r := diff(t, reconcile.Spec{Old: reconcile.Side{Engine: duck, Relation: "nest_old"}, New: reconcile.Side{Engine: ch, Relation: "nest_new"}, Key: []string{"id"}})
	expectChanged(t, r, false, "3 st", "4 tags", "5 st")
}

// expectChanged checks that r found exactly the changed rows want, each "ID COLUMN" (with
// values, "ID COLUMN OLD→NEW"), sorted, and no row added or removed.
func expectChanged(t *testing.T, r *reconcile.Result, values bool, want ...string) {
	t.Helper()
	var got []string
	for _, c := range r.Samples.Changed {
		for _, col := range c.Columns {
			cell := fmt.Sprintf("%v %s", c.Key.Get("id"), col.Column)
			if values {
				cell += fmt.Sprintf(" %v→%v", col.Old, col.New)
			}
			got = append(got, cell)
		}
	}
	sort.Strings(got)
	if d := cmp.Diff(want, got); d != "" || r.Rows.Changed != int64(len(want)) || r.Rows.Added+r.Rows.Removed != 0 {
		t.Errorf("changed (-want +got):\n%s\nrows %+v", d, r.Rows)
	}
}

// TestListsPrintApart: a list prints as JSON in text output, so that lists whose elements differ
// do not read alike (["a b"] and ["a","b"]; [] and [""]).
func TestListsPrintApart(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{[]any{"a b"}, `["a b"]`}, {[]any{"a", "b"}, `["a","b"]`}, {[]any{}, `[]`}, {[]any{""}, `[""]`},
		{[]string{"x"}, `["x"]`}, {map[string]any{"a": int64(1)}, `{"a":1}`}, {"plain", "plain"},
	} {
		if got := reconcile.ValueText(c.v); got != c.want {
			t.Errorf("ValueText(%#v) = %s, want %s", c.v, got, c.want)
		}
	}
}
