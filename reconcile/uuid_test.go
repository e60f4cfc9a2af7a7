package reconcile_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// uuidTables makes u in old, 60 rows keyed by a native DuckDB UUID, and u2 in new: the same rows
// keyed by a UUID or by its text (newText), one row missing (13) and one changed (7).
func uuidTables(t *testing.T, old, new tsql.Engine, newText bool) {
	t.Helper()
	if new == nil {
		exec(t, old, "CREATE TABLE u AS SELECT ('00000000-0000-4000-8000-' || substr(CAST(1000000000000 + i AS VARCHAR), 2))::UUID AS id, i AS v FROM range(60) t(i)")
		return
	}
	exec(t, new, "DROP TABLE IF EXISTS u2")
	switch {
	case new.Info().Kind == "duckdb":
		id := "('00000000-0000-4000-8000-' || substr(CAST(1000000000000 + i AS VARCHAR), 2))"
		if !newText {
			id += "::UUID"
		}
		exec(t, new, "CREATE TABLE u2 AS SELECT "+id+" AS id, CASE WHEN i = 7 THEN 700 ELSE i END AS v FROM range(60) t(i) WHERE i <> 13")
	default:
		typ := "UUID"
		conv := "toUUID(s)"
		if newText {
			typ, conv = "String", "s"
		}
		exec(t, new, "CREATE TABLE u2 (id "+typ+", v Int64) ENGINE = Memory",
			"INSERT INTO u2 SELECT "+conv+", if(i = 7, 700, i) FROM (SELECT toInt64(number) AS i, "+
				"concat('00000000-0000-4000-8000-', substring(toString(1000000000000 + number), 2)) AS s FROM system.numbers LIMIT 60) WHERE i <> 13")
	}
}

func uuidKey(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// UUIDs are text in canonical form: in hashes, in matching and in output, whether the other
// side holds a UUID or its text, in one DuckDB file, in two, or in ClickHouse.
func TestUUIDKeys(t *testing.T) {
	duck := sqltest.DuckDB(t)
	other := sqltest.DuckDB(t)
	sides := map[string]tsql.Engine{"duckdb": duck, "duckdb_file": other}
	if ch := sqltest.ClickHouse(t); ch != nil {
		sides["clickhouse"] = ch
	}
	uuidTables(t, duck, nil, false) // u, read by every case
	for name, new := range sides {
		for _, text := range []bool{false, true} {
			label := name + "_uuid"
			if text {
				label = name + "_text"
			}
			t.Run(label, func(t *testing.T) {
				rel := "u2"
				if name == "duckdb" {
					rel = "u3"
					if text {
						rel = "u4"
					}
					exec(t, duck, "DROP TABLE IF EXISTS u2")
				}
				uuidTables(t, duck, new, text)
				if name == "duckdb" {
					exec(t, duck, "ALTER TABLE u2 RENAME TO "+rel)
				}
				r := diff(t, reconcile.Spec{
					Old: reconcile.Side{Engine: duck, Relation: "u"}, New: reconcile.Side{Engine: new, Relation: rel},
					Key: []string{"id"}})
				if got, want := r.Rows, (reconcile.RowCounts{Removed: 1, Changed: 1}); got != want {
					t.Fatalf("rows %+v, want %+v", got, want)
				}
				b, err := json.Marshal(r.Samples)
				if err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{`"id":"` + uuidKey(13) + `"`, `"id":"` + uuidKey(7) + `"`} {
					if !strings.Contains(string(b), want) {
						t.Errorf("samples lack %s:\n%s", want, b)
					}
				}
				var text strings.Builder
				if err := r.WriteText(&text, reconcile.TextOptions{}); err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{"removed  (all)  id=" + uuidKey(13), "changed  (all)  id=" + uuidKey(7)} {
					if !strings.Contains(text.String(), want) {
						t.Errorf("text lacks %q:\n%s", want, text.String())
					}
				}
			})
		}
	}
}
