package reconcile_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/fault"
	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// renamedTables makes cm_old (id, region, name, amount, note) on old and cm_new on new, where
// name is called full_name. Against old: 2's note changed, 3's amount, 4's name, 5 (US) its
// amount, 6 (US) is gone and 7 (EU) is new.
func renamedTables(t *testing.T, old, new tsql.Engine) {
	t.Helper()
	oldRows := "(1, 'EU', 'ann', 10.5, 'a'), (2, 'EU', 'bob', 20.0, 'b'), (3, 'EU', 'cy', 30.0, 'c'), " +
		"(4, 'EU', 'dee', 40.0, 'd'), (5, 'US', 'ed', 50.0, 'e'), (6, 'US', 'flo', 60.0, 'f')"
	newRows := "(1, 'EU', 'ann', 10.5, 'a'), (2, 'EU', 'bob', 20.0, 'B'), (3, 'EU', 'cy', 31.0, 'c'), " +
		"(4, 'EU', 'dora', 40.0, 'd'), (5, 'US', 'ed', 55.0, 'e'), (7, 'EU', 'gus', 70.0, 'g')"
	make := func(e tsql.Engine, table, nameCol, rows string) {
		if e.Info().Kind == "duckdb" {
			exec(t, e, "DROP TABLE IF EXISTS "+table, "CREATE TABLE "+table+" AS SELECT * FROM (VALUES "+rows+") t(id, region, "+nameCol+", amount, note)")
			return
		}
		var sel []string
		for _, r := range strings.Split(strings.Trim(rows, "()"), "), (") {
			sel = append(sel, "SELECT "+r)
		}
		exec(t, e, "DROP TABLE IF EXISTS "+table,
			"CREATE TABLE "+table+" (id Int64, region String, "+nameCol+" String, amount Float64, note String) ENGINE = Memory",
			"INSERT INTO "+table+" SELECT * FROM ("+strings.Join(sel, " UNION ALL ")+")")
	}
	make(old, "cm_old", "name", oldRows)
	make(new, "cm_new", "full_name", newRows)
}

// --columns compares only the key and the listed columns, --map pairs a renamed column, and
// --where filters both sides in their own engines: in DuckDB, in ClickHouse, and across them.
func TestColumnsMapWhere(t *testing.T) {
	duck := sqltest.DuckDB(t)
	pairs := map[string][2]tsql.Engine{"duckdb": {duck, duck}}
	if ch := sqltest.ClickHouse(t); ch != nil {
		pairs["clickhouse"] = [2]tsql.Engine{ch, ch}
		pairs["duckdb_to_clickhouse"] = [2]tsql.Engine{duck, ch}
	}
	for name, e := range pairs {
		t.Run(name, func(t *testing.T) {
			renamedTables(t, e[0], e[1])
			base := reconcile.Spec{Old: reconcile.Side{Engine: e[0], Relation: "cm_old"}, New: reconcile.Side{Engine: e[1], Relation: "cm_new"},
				Key: []string{"id"}, Map: map[string]string{"name": "full_name"}}
			for _, c := range []struct {
				name     string
				edit     func(*reconcile.Spec)
				want     []string
				compared []string
			}{
				{name: "map", edit: func(*reconcile.Spec) {},
					want: []string{"added id=7 region=EU name=gus amount=70 note=g", "changed id=2 note b → B", "changed id=3 amount 30 → 31",
						"changed id=4 name dee → dora", "changed id=5 amount 50 → 55", "removed id=6 region=US name=flo amount=60 note=f"},
					compared: []string{"id", "region", "name", "amount", "note"}},
				{name: "columns", edit: func(s *reconcile.Spec) { s.Columns = []string{"name", "amount"} },
					want: []string{"added id=7 name=gus amount=70", "changed id=3 amount 30 → 31", "changed id=4 name dee → dora",
						"changed id=5 amount 50 → 55", "removed id=6 name=flo amount=60"},
					compared: []string{"id", "name", "amount"}},
				{name: "where", edit: func(s *reconcile.Spec) { s.Where = "region = 'EU' AND amount < 65"; s.Columns = []string{"amount"} },
					want:     []string{"changed id=3 amount 30 → 31"},
					compared: []string{"id", "amount"}},
			} {
				t.Run(c.name, func(t *testing.T) {
					s := base
					c.edit(&s)
					r := diff(t, s)
					if d := cmp.Diff(c.want, sampleLines(r)); d != "" {
						t.Errorf("samples (-want +got):\n%s", d)
					}
					if d := cmp.Diff(c.compared, r.Compared); d != "" {
						t.Errorf("compared (-want +got):\n%s", d)
					}
					if r.Schema.Differs() {
						t.Errorf("schema differs: %+v", r.Schema)
					}
					if (r.Renamed["name"] != "full_name") == slices.Contains(r.Compared, "name") || r.Where != s.Where {
						t.Errorf("renamed %v, where %q: the result must say what was compared", r.Renamed, r.Where)
					}
				})
			}
		})
	}
}

// A renamed key column is matched under its new name, in one engine and across two.
func TestMapKey(t *testing.T) {
	duck := sqltest.DuckDB(t)
	exec(t, duck, "CREATE TABLE mk_old AS SELECT * FROM (VALUES (1, 10), (2, 20), (3, 30)) t(id, v)")
	news := map[string]tsql.Engine{"duckdb": duck}
	exec(t, duck, "CREATE TABLE mk_new AS SELECT * FROM (VALUES (1, 10), (2, 21), (4, 40)) t(ident, v)")
	if ch := sqltest.ClickHouse(t); ch != nil {
		exec(t, ch, "DROP TABLE IF EXISTS mk_new", "CREATE TABLE mk_new (ident Int32, v Int32) ENGINE = Memory",
			"INSERT INTO mk_new SELECT 1, 10 UNION ALL SELECT 2, 21 UNION ALL SELECT 4, 40")
		news["clickhouse"] = ch
	}
	for name, e := range news {
		t.Run(name, func(t *testing.T) {
			r := diff(t, reconcile.Spec{Old: reconcile.Side{Engine: duck, Relation: "mk_old"}, New: reconcile.Side{Engine: e, Relation: "mk_new"},
				Key: []string{"id"}, Map: map[string]string{"id": "ident"}})
			want := []string{"added id=4 v=40", "changed id=2 v 20 → 21", "removed id=3 v=30"}
			if d := cmp.Diff(want, sampleLines(r)); d != "" || r.Schema.Differs() {
				t.Errorf("samples (-want +got):\n%s\nschema %+v", d, r.Schema)
			}
		})
	}
}

// A --where that is not a condition, does not parse in an engine, reaches outside the warehouse
// or closes the diff's own parentheses is refused before anything runs, saying why; so is a
// --map or --columns naming a column a side lacks.
func TestColumnsMapWhereRefused(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		renamedTables(t, e, e)
		for _, c := range []struct {
			name string
			edit func(*reconcile.Spec)
			want string
		}{
			{"where_number", func(s *reconcile.Spec) { s.Where = "amount" }, "not a condition"},
			{"where_text", func(s *reconcile.Spec) { s.Where = "region" }, "not a condition"},
			{"where_unknown_column", func(s *reconcile.Spec) { s.Where = "nope > 1" }, "--where"},
			{"where_closes_parens", func(s *reconcile.Spec) { s.Where = "1 = 1) OR (1 = 1" }, "closes what the condition did not open"},
			{"where_second_statement", func(s *reconcile.Spec) { s.Where = "1 = 1; DROP TABLE cm_old" }, "--where"},
			{"where_reads_a_file", func(s *reconcile.Spec) { s.Where = "id IN (SELECT 1 FROM file('x.csv'))" }, "outside the warehouse"},
			{"where_parameter", func(s *reconcile.Spec) { s.Where = "id = $v0" }, "parameter"},
			{"map_unknown_new", func(s *reconcile.Spec) { s.Map = map[string]string{"name": "nom"} }, `no column "nom" in new relation`},
			{"columns_unknown", func(s *reconcile.Spec) { s.Columns = []string{"nope"} }, `--columns column "nope"`},
		} {
			t.Run(c.name, func(t *testing.T) {
				s := reconcile.Spec{Old: reconcile.Side{Engine: e, Relation: "cm_old"}, New: reconcile.Side{Engine: e, Relation: "cm_new"},
					Key: []string{"id"}, Map: map[string]string{"name": "full_name"}}
				c.edit(&s)
				_, err := reconcile.Diff(context.Background(), s)
				if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("error %v, want invalid saying %q", err, c.want)
				}
				if testing.Verbose() {
					t.Log(err)
				}
			})
		}
		// the table is still there: nothing ran
		if _, err := e.Columns(context.Background(), "cm_old"); err != nil {
			t.Errorf("cm_old: %v", err)
		}
	})
}
