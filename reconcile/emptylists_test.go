package reconcile_test

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// An empty list, a NULL list and a list of one NULL are three different values: a row whose list
// went from one to another is changed, in the summary and in what --rows prints alike. DuckDB's
// own hash() reads [] as NULL (and [NULL] as [] or [[]], a struct of NULLs as a NULL struct), so
// a diff whose only change was [] to NULL said the tables were identical, and --rows left such
// rows out of a diff that counted them. ClickHouse 18.16 has no Nullable(Array): there [], [NULL]
// and [”] stand for it, and a tuple of a NULL for a NULL struct.
func TestEmptyListsDiffer(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		if e.Info().Kind == "duckdb" {
			exec(t, e,
				"CREATE TABLE el_old AS SELECT * FROM (VALUES (1, []::INT[], ['x']), (2, [1], []::VARCHAR[]), (3, NULL::INT[], NULL::VARCHAR[]), "+
					"(4, [NULL]::INT[], ['']), (5, [7], ['same'])) t(id, l, s)",
				"CREATE TABLE el_new AS SELECT * FROM (VALUES (1, NULL::INT[], ['x']), (2, [1], NULL::VARCHAR[]), (3, []::INT[], []::VARCHAR[]), "+
					"(4, []::INT[], [NULL]::VARCHAR[]), (5, [7], ['same'])) t(id, l, s)",
				// Only [] to NULL, and a struct of a NULL to a NULL struct, nested in a list too:
				// nothing else tells the tables apart.
				"CREATE TABLE eo_old AS SELECT * FROM (VALUES (1, []::INT[], {'a': NULL}::STRUCT(a INT), [[]]::INT[][]), "+
					"(2, [2], {'a': 2}::STRUCT(a INT), [[2]])) t(id, l, st, n)",
				"CREATE TABLE eo_new AS SELECT * FROM (VALUES (1, NULL::INT[], NULL::STRUCT(a INT), [NULL]::INT[][]), "+
					"(2, [2], {'a': 2}::STRUCT(a INT), [[2]])) t(id, l, st, n)")
		} else {
			exec(t, e,
				"CREATE TABLE el_old (id Int64, l Array(Nullable(Int32)), s Array(Nullable(String))) ENGINE = MergeTree ORDER BY id",
				"CREATE TABLE el_new AS el_old",
				"INSERT INTO el_old SELECT 1, CAST([] AS Array(Nullable(Int32))), CAST(['x'] AS Array(Nullable(String))) "+
					"UNION ALL SELECT 2, [toNullable(toInt32(1))], CAST([] AS Array(Nullable(String))) "+
					"UNION ALL SELECT 3, [CAST(NULL AS Nullable(Int32))], [toNullable('')] "+
					"UNION ALL SELECT 4, [CAST(NULL AS Nullable(Int32))], [toNullable('')] "+
					"UNION ALL SELECT 5, [toNullable(toInt32(7))], [toNullable('same')]",
				"INSERT INTO el_new SELECT 1, [CAST(NULL AS Nullable(Int32))], CAST(['x'] AS Array(Nullable(String))) "+
					"UNION ALL SELECT 2, [toNullable(toInt32(1))], [CAST(NULL AS Nullable(String))] "+
					"UNION ALL SELECT 3, CAST([] AS Array(Nullable(Int32))), CAST([] AS Array(Nullable(String))) "+
					"UNION ALL SELECT 4, CAST([] AS Array(Nullable(Int32))), [CAST(NULL AS Nullable(String))] "+
					"UNION ALL SELECT 5, [toNullable(toInt32(7))], [toNullable('same')]",
				"CREATE TABLE eo_old (id Int64, l Array(Nullable(Int32)), st Tuple(Nullable(Int32)), n Array(Array(Nullable(Int32)))) ENGINE = MergeTree ORDER BY id",
				"CREATE TABLE eo_new AS eo_old",
				"INSERT INTO eo_old SELECT 1, CAST([] AS Array(Nullable(Int32))), tuple(CAST(NULL AS Nullable(Int32))), [CAST([] AS Array(Nullable(Int32)))] "+
					"UNION ALL SELECT 2, [toNullable(toInt32(2))], tuple(toNullable(toInt32(2))), [[toNullable(toInt32(2))]]",
				"INSERT INTO eo_new SELECT 1, [CAST(NULL AS Nullable(Int32))], tuple(toNullable(toInt32(0))), [[CAST(NULL AS Nullable(Int32))]] "+
					"UNION ALL SELECT 2, [toNullable(toInt32(2))], tuple(toNullable(toInt32(2))), [[toNullable(toInt32(2))]]")
		}
		for _, c := range []struct {
			old, new string
			changed  []string // the ids changed, as --rows prints them
		}{
			{"el_old", "el_new", []string{"1", "2", "3", "4"}},
			{"eo_old", "eo_new", []string{"1"}},
		} {
			s := reconcile.Spec{Old: reconcile.Side{Engine: e, Relation: c.old}, New: reconcile.Side{Engine: e, Relation: c.new}, Key: []string{"id"}}
			r := diff(t, s)
			var ids []string
			for _, ch := range r.Samples.Changed {
				ids = append(ids, reconcile.ValueText(ch.Key.Get("id")))
			}
			sort.Strings(ids)
			if d := cmp.Diff(c.changed, ids); d != "" || r.Rows.Changed != int64(len(c.changed)) {
				t.Errorf("%s vs %s: changed rows %+v (-want +got ids):\n%s", c.old, c.new, r.Rows, d)
			}

			var lines []string
			s.Rows = func(l reconcile.RowLine) error {
				lines = append(lines, l.Sign+reconcile.ValueText(l.Values.Get("id")))
				return nil
			}
			streamed := diff(t, s)
			var want []string
			for _, id := range c.changed {
				want = append(want, "+"+id, "-"+id)
			}
			sort.Strings(want)
			sort.Strings(lines)
			if d := cmp.Diff(want, lines); d != "" || streamed.Rows != r.Rows {
				t.Errorf("%s vs %s with --rows: rows %+v, want %+v; lines (-want +got):\n%s", c.old, c.new, streamed.Rows, r.Rows, d)
			}
		}
	})
}
