package reconcile_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestNullPartitionComparedByKey: rows whose partition value is NULL are compared row by row
// too, matched by their key alone (a join on the partition column never matches NULL): a changed
// row, an added one and a removed one there are found and counted in the partition NULL, beside
// a change in a dated partition; in one engine and across two.
func TestNullPartitionComparedByKey(t *testing.T) {
	old := [][]any{
		{int64(1), day("2026-07-01"), "a", 1.0}, {int64(2), nil, "b", 2.0}, {int64(3), nil, "c", 3.0},
		{int64(4), nil, "d", 4.0}, {int64(5), day("2026-07-02"), "e", 5.0},
	}
	new := [][]any{
		{int64(1), day("2026-07-01"), "a", 1.5}, {int64(2), nil, "b", 2.0}, {int64(3), nil, "C", 3.0},
		{int64(6), nil, "f", 6.0}, {int64(5), day("2026-07-02"), "e", 5.0},
	}
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate, Nullable: true},
		{Name: "name", Kind: tsql.TypeString}, {Name: "amount", Kind: tsql.TypeFloat}}
	names := []string{"id", "d", "name", "amount"}
	put := func(t *testing.T, e tsql.Engine, table string, rows [][]any) {
		t.Helper()
		if e.Info().Kind == "clickhouse" { // 18.16 takes no Nullable column in a partition or sorting key
			exec(t, e, "CREATE TABLE "+table+" (id Int64, d Nullable(Date), name String, amount Float64) ENGINE = MergeTree ORDER BY id")
			if err := e.Insert(t.Context(), table, names, rows); err != nil {
				t.Fatal(err)
			}
			return
		}
		load(t, e, table, cols, names, rows)
	}
	check := func(t *testing.T, oldE, newE tsql.Engine) {
		t.Helper()
		put(t, oldE, "np_old", old)
		put(t, newE, "np_new", new)
		var lines []string
		r := diff(t, reconcile.Spec{Old: reconcile.Side{Engine: oldE, Relation: "np_old"}, New: reconcile.Side{Engine: newE, Relation: "np_new"},
			Key: []string{"id"}, Partition: "d", Rows: func(l reconcile.RowLine) error {
				lines = append(lines, l.Sign+" "+l.Partition+" "+fmt.Sprint(l.Values[0].Value))
				return nil
			}})
		if d := cmp.Diff(reconcile.RowCounts{Added: 1, Removed: 1, Changed: 2}, r.Rows); d != "" {
			t.Errorf("rows (-want +got):\n%s\nnotes %v", d, r.Notes)
		}
		for _, p := range r.Partitions {
			if p.Partition == "NULL" && (p.Rows == nil || p.Rows.Changed != 1 || p.Rows.Added != 1 || p.Rows.Removed != 1 || p.ChangedColumns["name"] != 1) {
				t.Errorf("partition NULL: %+v rows %+v changed %v", p, p.Rows, p.ChangedColumns)
			}
		}
		sort.Strings(lines)
		want := []string{"+ 2026-07-01 1", "+ NULL 3", "+ NULL 6", "- 2026-07-01 1", "- NULL 3", "- NULL 4"}
		if d := cmp.Diff(want, lines); d != "" {
			t.Errorf("rows streamed (-want +got):\n%s", d)
		}
	}
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) { check(t, e, e) })
	t.Run("across", func(t *testing.T) {
		engines := sqltest.Engines(t)
		if len(engines) < 2 {
			t.Skip("needs both engines")
		}
		check(t, engines[0], engines[1])
	})
}
