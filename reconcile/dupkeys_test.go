package reconcile_test

import (
	"context"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

var dupCols = []tsql.Column{
	{Name: "id", Kind: tsql.TypeInt, Nullable: true},
	{Name: "d", Kind: tsql.TypeDate},
	{Name: "v", Kind: tsql.TypeString},
}

// A key with more rows on one side than the other is one duplicate key with its surplus however
// the partition's row counts come out: when another key's extra row on the other side balances
// them, when the repeated rows are identical, beside a key repeated alike on both sides (no
// difference) and beside rows whose key is NULL (matched whole: listed and streamed, never
// counted as rows). The diff says the same in one engine, with --rows, and across two DuckDB
// files (and with ClickHouse, in it and across).
func TestDuplicateKeysWhenCountsBalance(t *testing.T) {
	at := func(id any, v string) []any { return []any{id, day("2026-07-10"), v} }
	steady := []any{int64(9), day("2026-07-11"), "s"} // a partition alike on both sides
	dup := []string{
		"  surplus new ×1 id=2 d=2026-07-10 v=y2",
		"  surplus old ×1 id=1 d=2026-07-10 v=x",
		"duplicate id=1 2/1",
		"duplicate id=2 1/2",
	}
	for _, c := range []struct {
		name     string
		old, new [][]any
		rows     reconcile.RowCounts
		samples  []string
		streamed []string
	}{
		{
			name: "extra_rows_on_each_side",
			old:  [][]any{at(int64(1), "x"), at(int64(1), "x"), at(int64(2), "y"), at(int64(3), "z")},
			new:  [][]any{at(int64(1), "x"), at(int64(2), "y"), at(int64(2), "y2"), at(int64(3), "z")},
			rows: reconcile.RowCounts{DuplicateKeys: 2}, samples: dup,
			streamed: []string{"+ id=2 d=2026-07-10 v=y2", "- id=1 d=2026-07-10 v=x"},
		},
		{
			name: "beside_null_keys",
			old: [][]any{at(int64(1), "x"), at(int64(1), "x"), at(int64(2), "y"), at(int64(3), "z"),
				at(nil, "n1"), at(nil, "n2")},
			new: [][]any{at(int64(1), "x"), at(int64(2), "y"), at(int64(2), "y2"), at(int64(3), "z"),
				at(nil, "n1"), at(nil, "n3")},
			rows:     reconcile.RowCounts{DuplicateKeys: 2, NullKeyAdded: 1, NullKeyRemoved: 1},
			samples:  append([]string{"added id=NULL d=2026-07-10 v=n3", "removed id=NULL d=2026-07-10 v=n2"}, dup...),
			streamed: []string{"+ id=2 d=2026-07-10 v=y2", "+ id=NULL d=2026-07-10 v=n3", "- id=1 d=2026-07-10 v=x", "- id=NULL d=2026-07-10 v=n2"},
		},
		{
			name: "identical_rows_repeated",
			old:  [][]any{at(int64(1), "x"), at(int64(1), "x"), at(int64(3), "z"), at(int64(5), "w")},
			new:  [][]any{at(int64(1), "x"), at(int64(3), "z"), at(int64(5), "w"), at(int64(5), "w")},
			rows: reconcile.RowCounts{DuplicateKeys: 2},
			samples: []string{"  surplus new ×1 id=5 d=2026-07-10 v=w", "  surplus old ×1 id=1 d=2026-07-10 v=x",
				"duplicate id=1 2/1", "duplicate id=5 1/2"},
			streamed: []string{"+ id=5 d=2026-07-10 v=w", "- id=1 d=2026-07-10 v=x"},
		},
		{
			name: "same_count_other_rows",
			old:  [][]any{at(int64(1), "a"), at(int64(1), "b"), at(int64(3), "z")},
			new:  [][]any{at(int64(1), "a"), at(int64(1), "c"), at(int64(3), "z")},
			rows: reconcile.RowCounts{DuplicateKeys: 1},
			samples: []string{"  surplus new ×1 id=1 d=2026-07-10 v=c", "  surplus old ×1 id=1 d=2026-07-10 v=b",
				"duplicate id=1 2/2"},
			streamed: []string{"+ id=1 d=2026-07-10 v=c", "- id=1 d=2026-07-10 v=b"},
		},
		{
			name: "beside_a_key_repeated_alike",
			old:  [][]any{at(int64(1), "x"), at(int64(1), "x"), at(int64(3), "z"), at(int64(7), "q"), at(int64(7), "q")},
			new:  [][]any{at(int64(1), "x"), at(int64(3), "z"), at(int64(7), "q"), at(int64(7), "q")},
			rows: reconcile.RowCounts{DuplicateKeys: 1}, samples: []string{"  surplus old ×1 id=1 d=2026-07-10 v=x", "duplicate id=1 2/1"},
			streamed: []string{"- id=1 d=2026-07-10 v=x"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			for name, e := range dupPaths(t) {
				t.Run(name, func(t *testing.T) {
					ctx := context.Background()
					for i, tb := range []string{"dk_old", "dk_new"} {
						if err := e[i].DropTable(ctx, tb); err != nil {
							t.Fatal(err)
						}
						load(t, e[i], tb, dupCols, []string{"id", "d", "v"}, append([][]any{steady}, [][][]any{c.old, c.new}[i]...))
					}
					s := reconcile.Spec{Old: reconcile.Side{Engine: e[0], Relation: "dk_old"}, New: reconcile.Side{Engine: e[1], Relation: "dk_new"},
						Key: []string{"id"}, Partition: "d"}
					var streamed []string
					for _, rows := range []bool{false, true} {
						s.Rows = nil
						if rows {
							s.Rows = func(l reconcile.RowLine) error { streamed = append(streamed, l.Sign+" "+l.Values.Text()); return nil }
						}
						r := diff(t, s)
						if d := cmp.Diff(c.rows, r.Rows); d != "" {
							t.Errorf("rows=%v: row counts (-want +got):\n%s", rows, d)
						}
						want := append([]string(nil), c.samples...)
						sort.Strings(want)
						if d := cmp.Diff(want, sampleLines(r)); d != "" {
							t.Errorf("rows=%v: samples (-want +got):\n%s", rows, d)
						}
						if d := cmp.Diff([]string{"2026-07-10 unexpected", "2026-07-11 unchanged"}, verdicts(r)); d != "" {
							t.Errorf("rows=%v: verdicts (-want +got):\n%s", rows, d)
						}
					}
					sort.Strings(streamed)
					if d := cmp.Diff(c.streamed, streamed); d != "" {
						t.Errorf("streamed rows (-want +got):\n%s", d)
					}
				})
			}
		})
	}
}

// Where no key repeats, the one join inside an engine is the whole row comparison: the rows read
// are the changed pair and, beside rows whose key is NULL, their groups; nothing is compared a
// second time. So too where a column's type changed (DATE to VARCHAR, compared as text).
func TestNoDuplicatesReadOnce(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		fresh := func(t *testing.T, oldCols, newCols []tsql.Column, old, new [][]any) {
			for i, tb := range []string{"dk_old", "dk_new"} {
				if err := e.DropTable(ctx, tb); err != nil {
					t.Fatal(err)
				}
				load(t, e, tb, [][]tsql.Column{oldCols, newCols}[i], []string{"id", "d", "v"}, [][][]any{old, new}[i])
			}
		}
		s := reconcile.Spec{Old: reconcile.Side{Engine: e, Relation: "dk_old"}, New: reconcile.Side{Engine: e, Relation: "dk_new"},
			Key: []string{"id"}, Partition: "d"}
		at := func(id any, v any) []any { return []any{id, day("2026-07-10"), v} }

		t.Run("beside_null_keys", func(t *testing.T) {
			fresh(t, dupCols, dupCols, [][]any{at(int64(1), "x"), at(int64(2), "y"), at(nil, "n1")},
				[][]any{at(int64(1), "x"), at(int64(2), "y2"), at(nil, "n1"), at(nil, "n3")})
			r := diff(t, s)
			if d := cmp.Diff([]string{"added id=NULL d=2026-07-10 v=n3", "changed id=2 v y → y2"}, sampleLines(r)); d != "" || r.Rows != (reconcile.RowCounts{Changed: 1, NullKeyAdded: 1}) {
				t.Errorf("rows %+v, samples (-want +got):\n%s", r.Rows, d)
			}
			// 2 of the changed pair, 3 groups of rows with a NULL key (n1 on each side, n3)
			if r.RowsTransferred != 5 {
				t.Errorf("%d rows read, want 5: the join's pair and the NULL-key groups", r.RowsTransferred)
			}
		})

		t.Run("type_changed", func(t *testing.T) {
			dated := append([]tsql.Column(nil), dupCols...)
			dated[2] = tsql.Column{Name: "v", Kind: tsql.TypeDate}
			old := [][]any{at(int64(1), day("2026-01-01")), at(int64(2), day("2026-01-02")), at(int64(3), day("2026-01-03"))}
			fresh(t, dated, dupCols, old, [][]any{at(int64(1), "2026-01-01"), at(int64(2), "2026-02-02"), at(int64(3), "2026-01-03")})
			r := diff(t, s)
			if d := cmp.Diff([]string{"changed id=2 v 2026-01-02 → 2026-02-02"}, sampleLines(r)); d != "" || r.Rows != (reconcile.RowCounts{Changed: 1}) {
				t.Errorf("rows %+v, samples (-want +got):\n%s", r.Rows, d)
			}
			if r.RowsTransferred != 2 {
				t.Errorf("%d rows read, want the changed pair's 2", r.RowsTransferred)
			}
		})
	})
}

// dupPaths are the pairs of engines a diff runs on: one DuckDB file, two DuckDB files (compared
// across engines) and, with ClickHouse, ClickHouse alone and DuckDB against it.
func dupPaths(t *testing.T) map[string][2]tsql.Engine {
	duck := sqltest.DuckDB(t)
	paths := map[string][2]tsql.Engine{"duckdb": {duck, duck}, "duckdb_files": {duck, sqltest.DuckDB(t)}}
	if ch := sqltest.ClickHouse(t); ch != nil {
		paths["clickhouse"] = [2]tsql.Engine{ch, ch}
		paths["duckdb_to_clickhouse"] = [2]tsql.Engine{duck, ch}
	}
	return paths
}

func verdicts(r *reconcile.Result) []string {
	var out []string
	for _, p := range r.Partitions {
		out = append(out, p.Partition+" "+p.Verdict)
	}
	return out
}
