package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/fault"
	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

func day(s string) time.Time { t, _ := time.Parse("2006-01-02", s); return t }

var orderCols = []tsql.Column{
	{Name: "id", Kind: tsql.TypeInt},
	{Name: "d", Kind: tsql.TypeDate},
	{Name: "name", Kind: tsql.TypeString, Nullable: true},
	{Name: "amount", Type: "DECIMAL(18,2)", Kind: tsql.TypeDecimal},
	{Name: "score", Kind: tsql.TypeFloat, Nullable: true},
}

var orderNames = []string{"id", "d", "name", "amount", "score"}

// baseRows are 12 orders over three days, four a day.
func baseRows() [][]any {
	var rows [][]any
	for i := int64(1); i <= 12; i++ {
		d := day("2026-07-10").AddDate(0, 0, int((i-1)/4))
		var name any = fmt.Sprintf("c%d", i)
		if i == 4 {
			name = nil
		}
		rows = append(rows, []any{i, d, name, float64(i) * 10.25, float64(i) / 4})
	}
	return rows
}

func load(t *testing.T, e tsql.Engine, table string, cols []tsql.Column, names []string, rows [][]any) {
	t.Helper()
	ctx := context.Background()
	if err := e.CreateTable(ctx, table, cols, "d", []string{"d"}); err != nil {
		t.Fatalf("create %s: %v", table, err)
	}
	if len(rows) > 0 {
		if err := e.Insert(ctx, table, names, rows); err != nil {
			t.Fatalf("insert into %s: %v", table, err)
		}
	}
}

// edit returns rows with fn applied to a copy of each; fn returns nil to drop a row.
func edit(rows [][]any, fn func(r []any) []any) [][]any {
	var out [][]any
	for _, r := range rows {
		if x := fn(append([]any(nil), r...)); x != nil {
			out = append(out, x)
		}
	}
	return out
}

func spec(e tsql.Engine) reconcile.Spec {
	return reconcile.Spec{
		Old:       reconcile.Side{Engine: e, Relation: "old_t"},
		New:       reconcile.Side{Engine: e, Relation: "new_t"},
		Key:       []string{"id"},
		Partition: "d",
		Measures:  []string{"amount"},
	}
}

func diff(t *testing.T, s reconcile.Spec) *reconcile.Result {
	t.Helper()
	r, err := reconcile.Diff(context.Background(), s)
	if err != nil {
		t.Fatalf("diff: %v", err)
	}
	return r
}

// overview is what a person reads first: per partition presence, counts, checksum, verdict, rows.
func overview(r *reconcile.Result) []string {
	var out []string
	for _, p := range r.Partitions {
		s := fmt.Sprintf("%s %s %d→%d match=%v %s", p.Partition, p.Presence, p.OldCount, p.NewCount, p.ChecksumMatch, p.Verdict)
		if p.Rows != nil {
			s += fmt.Sprintf(" +%d -%d ~%d dup%d", p.Rows.Added, p.Rows.Removed, p.Rows.Changed, p.Rows.DuplicateKeys)
		}
		out = append(out, s)
	}
	return out
}

func checkOverview(t *testing.T, r *reconcile.Result, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, overview(r)); diff != "" {
		t.Errorf("partitions (-want +got):\n%s", diff)
	}
}

func TestDiff(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		fresh := func(t *testing.T, old, new [][]any) {
			t.Helper()
			for _, tb := range []string{"old_t", "new_t"} {
				if err := e.DropTable(ctx, tb); err != nil {
					t.Fatal(err)
				}
			}
			load(t, e, "old_t", orderCols, orderNames, old)
			load(t, e, "new_t", orderCols, orderNames, new)
		}

		t.Run("identical", func(t *testing.T) {
			fresh(t, baseRows(), baseRows())
			r := diff(t, spec(e))
			checkOverview(t, r,
				"2026-07-10 both 4→4 match=true unchanged",
				"2026-07-11 both 4→4 match=true unchanged",
				"2026-07-12 both 4→4 match=true unchanged")
			if r.Differs || !r.ExpectationsMet || r.RowsTransferred != 0 || r.Rows != (reconcile.RowCounts{}) {
				t.Errorf("identical tables: differs=%v met=%v transferred=%d rows=%+v", r.Differs, r.ExpectationsMet, r.RowsTransferred, r.Rows)
			}
			m := r.Partitions[0].Measures["amount"]
			if m.Old != 102.5 || m.New != 102.5 || *m.PctChange != 0 {
				t.Errorf("amount totals: %+v", m)
			}
		})

		t.Run("added_removed_changed", func(t *testing.T) {
			newRows := edit(baseRows(), func(r []any) []any {
				switch r[0].(int64) {
				case 2:
					return nil
				case 5:
					r[3] = 99.99
				case 6:
					r[2] = "renamed"
				}
				return r
			})
			newRows = append(newRows, []any{int64(100), day("2026-07-11"), "new", 1.5, nil})
			fresh(t, baseRows(), newRows)
			r := diff(t, spec(e))
			checkOverview(t, r,
				"2026-07-10 both 4→3 match=false unexpected +0 -1 ~0 dup0",
				"2026-07-11 both 4→5 match=false unexpected +1 -0 ~2 dup0",
				"2026-07-12 both 4→4 match=true unchanged")
			if diff := cmp.Diff(reconcile.RowCounts{Added: 1, Removed: 1, Changed: 2}, r.Rows); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]int64{"amount": 1, "name": 1}, r.ChangedColumns); diff != "" {
				t.Errorf("changed columns (-want +got):\n%s", diff)
			}
			var changes []string
			for _, c := range r.Samples.Changed {
				for _, col := range c.Columns {
					changes = append(changes, fmt.Sprintf("%s id=%v %s: %v → %v", c.Partition, c.Key.Get("id"), col.Column, col.Old, col.New))
				}
			}
			want := []string{"2026-07-11 id=5 amount: 51.25 → 99.99", "2026-07-11 id=6 name: c6 → renamed"}
			if diff := cmp.Diff(want, changes); diff != "" {
				t.Errorf("changed samples (-want +got):\n%s", diff)
			}
			if len(r.Samples.Removed) != 1 || r.Samples.Removed[0].Key.Get("id") != int64(2) || r.Samples.Removed[0].Values.Get("name") != "c2" {
				t.Errorf("removed sample: %+v", r.Samples.Removed)
			}
			if len(r.Samples.Added) != 1 || r.Samples.Added[0].Key.Get("id") != int64(100) || r.Samples.Added[0].Partition != "2026-07-11" {
				t.Errorf("added sample: %+v", r.Samples.Added)
			}
			if r.ExpectationsMet || !r.Differs {
				t.Error("differences without expectations must be unexpected")
			}
			if r.RowsTransferred == 0 || r.RowsTransferred > 10 {
				t.Errorf("rows read out: %d, want only the differing keys' rows", r.RowsTransferred)
			}
		})

		t.Run("added_row_of_default_values", func(t *testing.T) {
			// Zero and NULLs: what ClickHouse puts on the unmatched side of a join unless
			// told to use NULLs. The row must still come out as added.
			fresh(t, baseRows(), append(baseRows(), []any{int64(0), day("2026-07-10"), nil, 0.0, nil}))
			r := diff(t, spec(e))
			if r.Rows != (reconcile.RowCounts{Added: 1}) || len(r.Samples.Added) != 1 || r.Samples.Added[0].Key.Get("id") != int64(0) {
				t.Errorf("added row of defaults: %+v %+v", r.Rows, r.Samples.Added)
			}
		})

		t.Run("moved_row_is_removed_and_added", func(t *testing.T) {
			fresh(t, baseRows(), edit(baseRows(), func(r []any) []any {
				if r[0].(int64) == 2 {
					r[1] = day("2026-07-11")
				}
				return r
			}))
			checkOverview(t, diff(t, spec(e)),
				"2026-07-10 both 4→3 match=false unexpected +0 -1 ~0 dup0",
				"2026-07-11 both 4→5 match=false unexpected +1 -0 ~0 dup0",
				"2026-07-12 both 4→4 match=true unchanged")
		})

		t.Run("every_partition_differs", func(t *testing.T) {
			// Most partitions differ, so the row diff runs without a partition filter.
			fresh(t, baseRows(), edit(baseRows(), func(r []any) []any {
				if id := r[0].(int64); id == 1 || id == 5 || id == 9 {
					r[2] = "x"
				}
				if id := r[0].(int64); id == 12 {
					return nil
				}
				return r
			}))
			r := diff(t, spec(e))
			checkOverview(t, r,
				"2026-07-10 both 4→4 match=false unexpected +0 -0 ~1 dup0",
				"2026-07-11 both 4→4 match=false unexpected +0 -0 ~1 dup0",
				"2026-07-12 both 4→3 match=false unexpected +0 -1 ~1 dup0")
			if r.RowsTransferred != 7 {
				t.Errorf("rows read out: %d, want the 7 rows of the 4 differing keys", r.RowsTransferred)
			}
		})

		t.Run("matching_partitions_are_not_joined", func(t *testing.T) {
			// Two of three partitions differ: the row join reads those two and not the third.
			fresh(t, baseRows(), edit(baseRows(), func(r []any) []any {
				if id := r[0].(int64); id == 1 || id == 9 {
					r[2] = "x"
				}
				return r
			}))
			rec := &recorder{Engine: e}
			s := spec(e)
			s.Old.Engine, s.New.Engine = rec, rec
			r := diff(t, s)
			checkOverview(t, r,
				"2026-07-10 both 4→4 match=false unexpected +0 -0 ~1 dup0",
				"2026-07-11 both 4→4 match=true unchanged",
				"2026-07-12 both 4→4 match=false unexpected +0 -0 ~1 dup0")
			joins := 0
			for _, st := range rec.statements {
				if !strings.Contains(st.query, "JOIN") {
					continue
				}
				joins++
				var bound []string
				for _, a := range st.args {
					bound = append(bound, fmt.Sprint(a))
				}
				// the days are rendered as literals where the dialect can, else bound
				if got := st.query + " " + strings.Join(bound, " "); strings.Contains(got, "2026-07-11") || !strings.Contains(got, "2026-07-10") || !strings.Contains(got, "2026-07-12") {
					t.Errorf("row join reads %q: want the two differing days and not 2026-07-11", got)
				}
			}
			if joins != 1 {
				t.Errorf("%d row joins, want 1", joins)
			}
		})

		t.Run("same_key_in_two_partitions_is_two_keys", func(t *testing.T) {
			// Rows are matched on (partition, key): id 5 on 2026-07-10 is not id 5 on 2026-07-11,
			// and neither is a duplicate. Every partition differs, so nothing is filtered.
			extra := func(name string) []any { return []any{int64(5), day("2026-07-10"), name, 1.0, nil} }
			touch := func(r []any) []any {
				if id := r[0].(int64); id == 6 || id == 9 {
					r[2] = "x"
				}
				return r
			}
			fresh(t, append(baseRows(), extra("a")), append(edit(baseRows(), touch), extra("b")))
			checkOverview(t, diff(t, spec(e)),
				"2026-07-10 both 5→5 match=false unexpected +0 -0 ~1 dup0",
				"2026-07-11 both 4→4 match=false unexpected +0 -0 ~1 dup0",
				"2026-07-12 both 4→4 match=false unexpected +0 -0 ~1 dup0")

			// The extra id 5 gone from 2026-07-10; id 5 on 2026-07-11 is unchanged.
			fresh(t, append(baseRows(), extra("a")), edit(baseRows(), func(r []any) []any {
				if id := r[0].(int64); id == 1 || id == 6 || id == 9 {
					r[2] = "x"
				}
				return r
			}))
			checkOverview(t, diff(t, spec(e)),
				"2026-07-10 both 5→4 match=false unexpected +0 -1 ~1 dup0",
				"2026-07-11 both 4→4 match=false unexpected +0 -0 ~1 dup0",
				"2026-07-12 both 4→4 match=false unexpected +0 -0 ~1 dup0")

			// A daily snapshot: the same 50 ids every day, one changed row a day. Only the changed
			// pairs are read, not every pairing of an id's days.
			var snap [][]any
			for d := 0; d < 3; d++ {
				for id := int64(1); id <= 50; id++ {
					snap = append(snap, []any{id, day("2026-07-10").AddDate(0, 0, d), "s", float64(id), nil})
				}
			}
			fresh(t, snap, edit(snap, func(r []any) []any {
				if r[0].(int64) == 7 {
					r[2] = "changed"
				}
				return r
			}))
			r := diff(t, spec(e))
			if r.Rows != (reconcile.RowCounts{Changed: 3}) || r.RowsTransferred != 6 {
				t.Errorf("snapshot: %+v with %d rows read out, want 3 changed rows and 6 rows read", r.Rows, r.RowsTransferred)
			}
		})

		t.Run("nulls_compare_equal_and_to_values", func(t *testing.T) {
			// Row 4 has a NULL name on both sides; row 8 gets a NULL score; row 12 a name for a NULL.
			oldRows := edit(baseRows(), func(r []any) []any {
				if r[0].(int64) == 12 {
					r[2] = nil
				}
				return r
			})
			newRows := edit(baseRows(), func(r []any) []any {
				if r[0].(int64) == 8 {
					r[4] = nil
				}
				return r
			})
			fresh(t, oldRows, newRows)
			r := diff(t, spec(e))
			checkOverview(t, r,
				"2026-07-10 both 4→4 match=true unchanged",
				"2026-07-11 both 4→4 match=false unexpected +0 -0 ~1 dup0",
				"2026-07-12 both 4→4 match=false unexpected +0 -0 ~1 dup0")
			if diff := cmp.Diff(map[string]int64{"name": 1, "score": 1}, r.ChangedColumns); diff != "" {
				t.Errorf("changed columns (-want +got):\n%s", diff)
			}
			for _, c := range r.Samples.Changed {
				if c.Key.Get("id") == int64(8) && (c.Columns[0].Old != 2.0 || c.Columns[0].New != nil) {
					t.Errorf("NULL sample: %+v", c.Columns)
				}
			}
		})

		t.Run("float_tolerance", func(t *testing.T) {
			newRows := edit(baseRows(), func(r []any) []any {
				if r[0].(int64) == 9 {
					r[4] = r[4].(float64) + 0.004
				}
				return r
			})
			fresh(t, baseRows(), newRows)
			strict := diff(t, spec(e))
			if strict.Rows.Changed != 1 || strict.ChangedColumns["score"] != 1 {
				t.Errorf("without tolerance: rows %+v columns %v", strict.Rows, strict.ChangedColumns)
			}
			for _, tol := range []string{"0.01", "1%"} {
				s := spec(e)
				tl, err := reconcile.ParseTolerance(tol)
				if err != nil {
					t.Fatal(err)
				}
				s.Tolerance = map[string]reconcile.Tolerance{"score": tl}
				r := diff(t, s)
				checkOverview(t, r,
					"2026-07-10 both 4→4 match=true unchanged",
					"2026-07-11 both 4→4 match=true unchanged",
					"2026-07-12 both 4→4 match=false unchanged +0 -0 ~0 dup0")
				if r.Differs || !r.ExpectationsMet {
					t.Errorf("tolerance %s: differs=%v met=%v", tol, r.Differs, r.ExpectationsMet)
				}
			}
			s := spec(e)
			s.Tolerance = map[string]reconcile.Tolerance{"score": {Rel: 0.0001}}
			if r := diff(t, s); r.Rows.Changed != 1 {
				t.Errorf("0.01%% tolerance should not cover 0.004 on 2.25: %+v", r.Rows)
			}
		})

		t.Run("tolerance_for_every_float_column", func(t *testing.T) {
			fresh(t, baseRows(), edit(baseRows(), func(r []any) []any {
				switch r[0].(int64) {
				case 9:
					r[4] = r[4].(float64) + 0.004 // score, a DOUBLE
				case 10:
					r[3] = r[3].(float64) + 0.01 // amount, a DECIMAL
				}
				return r
			}))
			s := spec(e)
			s.Tolerance = map[string]reconcile.Tolerance{reconcile.AnyColumn: {Abs: 0.02}}
			if r := diff(t, s); r.Rows != (reconcile.RowCounts{}) || r.Differs {
				t.Errorf("within 0.02 everywhere: %+v differs=%v", r.Rows, r.Differs)
			}
			s.Tolerance[reconcile.AnyColumn] = reconcile.Tolerance{Abs: 0.005}
			if r := diff(t, s); r.Rows.Changed != 1 || r.ChangedColumns["amount"] != 1 {
				t.Errorf("0.005: want amount of order 10 changed: %+v %v", r.Rows, r.ChangedColumns)
			}
		})

		t.Run("ignored_column_present_on_both_sides", func(t *testing.T) {
			fresh(t, baseRows(), edit(baseRows(), func(r []any) []any {
				if r[0].(int64) == 2 {
					r[2] = "renamed"
				}
				return r
			}))
			s := spec(e)
			s.Ignore = []string{"name"}
			r := diff(t, s)
			if r.Differs || slices.Contains(r.Compared, "name") {
				t.Errorf("ignoring name: differs=%v compared=%v", r.Differs, r.Compared)
			}
			if r := diff(t, spec(e)); r.Rows.Changed != 1 {
				t.Errorf("not ignored: %+v", r.Rows)
			}
		})

		t.Run("samples_bounded_counts_exact", func(t *testing.T) {
			fresh(t, baseRows(), edit(baseRows(), func(r []any) []any {
				if r[0].(int64) <= 7 {
					r[2] = "x"
				}
				return r
			}))
			s := spec(e)
			s.Samples = 2
			r := diff(t, s)
			if r.Rows.Changed != 7 || len(r.Samples.Changed) != 2 {
				t.Errorf("changed %d with %d samples, want 7 and 2", r.Rows.Changed, len(r.Samples.Changed))
			}
			for _, p := range r.Partitions {
				if p.Samples != nil && len(p.Samples.Changed) > 2 {
					t.Errorf("partition %s keeps %d samples", p.Partition, len(p.Samples.Changed))
				}
			}
		})

		t.Run("duplicate_keys", func(t *testing.T) {
			base := baseRows()
			newRows := append(baseRows(), base[2], []any{int64(7), day("2026-07-11"), "other", 1.0, nil})
			fresh(t, baseRows(), newRows)
			r := diff(t, spec(e))
			checkOverview(t, r,
				"2026-07-10 both 4→5 match=false unexpected +0 -0 ~0 dup1",
				"2026-07-11 both 4→5 match=false unexpected +0 -0 ~0 dup1",
				"2026-07-12 both 4→4 match=true unchanged")
			var dups []string
			for _, d := range r.Samples.Duplicates {
				dups = append(dups, fmt.Sprintf("%s id=%v old=%d new=%d", d.Partition, d.Key.Get("id"), d.OldRows, d.NewRows))
				for _, s := range d.Surplus { // which rows are the surplus
					dups = append(dups, fmt.Sprintf("  %s ×%d %s", s.Side, s.Times, s.Values.Text()))
				}
			}
			want := []string{"2026-07-10 id=3 old=1 new=2", "  new ×1 id=3 d=2026-07-10 name=c3 amount=30.75 score=0.75",
				"2026-07-11 id=7 old=1 new=2", "  new ×1 id=7 d=2026-07-11 name=other amount=1 score=NULL"}
			if diff := cmp.Diff(want, dups); diff != "" {
				t.Errorf("duplicates (-want +got):\n%s", diff)
			}

			// id 3 twice on both sides, alike, beside a changed row: no difference, not counted.
			twice := append(baseRows(), base[2])
			fresh(t, twice, edit(twice, func(r []any) []any {
				if r[0].(int64) == 1 {
					r[2] = "x"
				}
				return r
			}))
			checkOverview(t, diff(t, spec(e)),
				"2026-07-10 both 5→5 match=false unexpected +0 -0 ~1 dup0",
				"2026-07-11 both 4→4 match=true unchanged",
				"2026-07-12 both 4→4 match=true unchanged")
		})

		t.Run("missing_and_new_partitions", func(t *testing.T) {
			newRows := edit(baseRows(), func(r []any) []any {
				if r[1].(time.Time).Equal(day("2026-07-12")) {
					r[1] = day("2026-07-13")
				}
				return r
			})
			fresh(t, baseRows(), newRows)
			r := diff(t, spec(e))
			checkOverview(t, r,
				"2026-07-10 both 4→4 match=true unchanged",
				"2026-07-11 both 4→4 match=true unchanged",
				"2026-07-12 old_only 4→0 match=false unexpected +0 -4 ~0 dup0",
				"2026-07-13 new_only 0→4 match=false unexpected +4 -0 ~0 dup0")
			p := r.Partition("2026-07-13")
			if p.PctChange != nil || p.Samples == nil || len(p.Samples.Added) != 4 {
				t.Errorf("new partition: pct=%v samples=%+v", p.PctChange, p.Samples)
			}
			if p := r.Partition("2026-07-12"); *p.PctChange != -100 {
				t.Errorf("missing partition pct: %v", *p.PctChange)
			}
		})

		t.Run("schema_differences_reported", func(t *testing.T) {
			for _, tb := range []string{"old_t", "new_t"} {
				e.DropTable(ctx, tb)
			}
			load(t, e, "old_t", orderCols, orderNames, baseRows())
			wider := append(append([]tsql.Column(nil), orderCols[:4]...), tsql.Column{Name: "channel", Kind: tsql.TypeString})
			load(t, e, "new_t", wider, []string{"id", "d", "name", "amount", "channel"}, edit(baseRows(), func(r []any) []any {
				return append(r[:4], "web")
			}))
			r := diff(t, spec(e))
			if len(r.Schema.Added) != 1 || r.Schema.Added[0].Name != "channel" || len(r.Schema.Removed) != 1 || r.Schema.Removed[0].Name != "score" {
				t.Errorf("schema: %+v", r.Schema)
			}
			if !r.Differs || r.ExpectationsMet {
				t.Error("an added and a removed column must be a difference")
			}
			for _, p := range r.Partitions {
				if p.Verdict != reconcile.VerdictUnchanged {
					t.Errorf("partition %s: common columns are equal, got %s", p.Partition, p.Verdict)
				}
			}
			s := spec(e)
			s.Ignore = []string{"channel", "score"}
			if r := diff(t, s); r.Differs || !r.ExpectationsMet {
				t.Errorf("ignored schema changes: differs=%v met=%v notes=%v", r.Differs, r.ExpectationsMet, r.Notes)
			}
		})

		t.Run("decimal_and_double_compare_by_value", func(t *testing.T) {
			for _, tb := range []string{"old_t", "new_t"} {
				e.DropTable(ctx, tb)
			}
			load(t, e, "old_t", orderCols, orderNames, baseRows())
			dbl := append([]tsql.Column(nil), orderCols...)
			dbl[3] = tsql.Column{Name: "amount", Kind: tsql.TypeFloat}
			load(t, e, "new_t", dbl, orderNames, baseRows())
			r := diff(t, spec(e))
			if len(r.Schema.Changed) != 1 || r.Schema.Changed[0].Name != "amount" {
				t.Errorf("type change not reported: %+v", r.Schema)
			}
			if r.Differs || r.Rows != (reconcile.RowCounts{}) {
				t.Errorf("equal values of DECIMAL and DOUBLE differ: %v %+v", overview(r), r.Samples.Changed)
			}
		})

		t.Run("huge_numbers_of_decimal_and_double", func(t *testing.T) {
			for _, tb := range []string{"old_t", "new_t"} {
				e.DropTable(ctx, tb)
			}
			huge := func(r []any) []any {
				switch r[0].(int64) {
				case 1:
					r[3] = 2e13
				case 2:
					r[3] = 5e13
				}
				return r
			}
			load(t, e, "old_t", orderCols, orderNames, edit(baseRows(), huge))
			dbl := append([]tsql.Column(nil), orderCols...)
			dbl[3] = tsql.Column{Name: "amount", Kind: tsql.TypeFloat}
			load(t, e, "new_t", dbl, orderNames, edit(baseRows(), func(r []any) []any {
				if r = huge(r); r[0].(int64) == 1 {
					r[3] = 3e13
				}
				return r
			}))
			r := diff(t, spec(e))
			if r.Rows != (reconcile.RowCounts{Changed: 1}) || r.ChangedColumns["amount"] != 1 || len(r.Differing()) != 1 {
				t.Errorf("want order 1's amount 2e13→3e13 alone: %v %+v", overview(r), r.Rows)
			}
		})

		t.Run("null_keys_counted_not_matched", func(t *testing.T) {
			nk := append([]tsql.Column(nil), orderCols...)
			nk[0].Nullable = true
			for _, tb := range []string{"old_t", "new_t"} {
				e.DropTable(ctx, tb)
			}
			load(t, e, "old_t", nk, orderNames, baseRows())
			load(t, e, "new_t", nk, orderNames, append(baseRows(), []any{nil, day("2026-07-10"), "nokey", 1.0, nil}))
			r := diff(t, spec(e))
			p := r.Partition("2026-07-10")
			if p.NewNullKeys != 1 || p.OldNullKeys != 0 || p.Verdict != reconcile.VerdictUnexpected || p.Rows == nil || !p.Rows.Zero() {
				t.Errorf("NULL key partition: %+v rows=%+v", p, p.Rows)
			}
			// counted apart from the rows added, and said so beside them
			if p.Rows == nil || p.Rows.NullKeyAdded != 1 || p.Rows.NullKeyRemoved != 0 || r.Rows.NullKeyAdded != 1 || r.Rows.Added != 0 {
				t.Errorf("rows with a NULL key matched whole: partition %+v, diff %+v", p.Rows, r.Rows)
			}
			var text strings.Builder
			r.WriteText(&text, reconcile.TextOptions{})
			if !strings.Contains(text.String(), "rows: 0 added, 0 removed, 0 changed, 0 duplicate keys; with a NULL key, matched whole: 1 added, 0 removed\n") {
				t.Errorf("the text does not count the row with a NULL key beside its sample:\n%s", text.String())
			}
			// listed in the samples like any other row
			if got := sampleLines(r); !slices.Contains(got, "added id=NULL d=2026-07-10 name=nokey amount=1 score=NULL") {
				t.Errorf("samples %q: want the NULL-key row added", got)
			}

			// The same row with a NULL key on both sides, and a change within tolerance beside
			// it: unchanged. The NULL-key row renamed as well: unexpected.
			nokey := func(name string) []any { return []any{nil, day("2026-07-10"), name, 1.0, nil} }
			nudged := edit(baseRows(), func(r []any) []any {
				if r[0].(int64) == 2 {
					r[4] = r[4].(float64) + 0.004
				}
				return r
			})
			for _, tc := range []struct {
				newName, verdict string
			}{{"nokey", reconcile.VerdictUnchanged}, {"renamed", reconcile.VerdictUnexpected}} {
				for _, tb := range []string{"old_t", "new_t"} {
					e.DropTable(ctx, tb)
				}
				load(t, e, "old_t", nk, orderNames, append(baseRows(), nokey("nokey")))
				load(t, e, "new_t", nk, orderNames, append(nudged, nokey(tc.newName)))
				s := spec(e)
				s.Tolerance = map[string]reconcile.Tolerance{"score": {Abs: 0.01}}
				if p := diff(t, s).Partition("2026-07-10"); p.ChecksumMatch || p.Verdict != tc.verdict {
					t.Errorf("NULL-key row %q within tolerance: match=%v verdict %s, want %s (%v)", tc.newName, p.ChecksumMatch, p.Verdict, tc.verdict, p.Reasons)
				}
			}
		})

		t.Run("null_partition_compared_by_key", func(t *testing.T) {
			nd := append([]tsql.Column(nil), orderCols...)
			nd[1].Nullable = true
			undated := []any{int64(78), nil, "undated", 2.0, nil}
			for i, rows := range [][][]any{append(baseRows(), undated), append(baseRows(), undated, []any{int64(77), nil, "undated", 1.0, nil})} {
				tb := []string{"old_t", "new_t"}[i]
				e.DropTable(ctx, tb)
				// ClickHouse refuses a nullable partition key: the table is not partitioned there.
				if err := e.CreateTable(ctx, tb, nd, "", []string{"id"}); err != nil {
					t.Fatal(err)
				}
				if err := e.Insert(ctx, tb, orderNames, rows); err != nil {
					t.Fatal(err)
				}
			}
			r := diff(t, spec(e))
			checkOverview(t, r,
				"NULL both 1→2 match=false unexpected +1 -0 ~0 dup0",
				"2026-07-10 both 4→4 match=true unchanged",
				"2026-07-11 both 4→4 match=true unchanged",
				"2026-07-12 both 4→4 match=true unchanged")
			if len(r.Notes) != 0 || r.Rows.Added != 1 || len(r.Samples.Added) != 1 || r.Samples.Added[0].Key.Get("id") != int64(77) {
				t.Errorf("the undated row added: rows %+v, added %+v, notes %v", r.Rows, r.Samples.Added, r.Notes)
			}
		})

		t.Run("restricted_to_partitions", func(t *testing.T) {
			newRows := edit(baseRows(), func(r []any) []any {
				if r[0].(int64) == 1 || r[0].(int64) == 9 {
					r[3] = 0.0
				}
				return r
			})
			fresh(t, baseRows(), newRows)
			s := spec(e)
			s.Partitions = []string{"2026-07-12"}
			checkOverview(t, diff(t, s), "2026-07-12 both 4→4 match=false unexpected +0 -0 ~1 dup0")
			s.Partitions = nil
			s.Windows = []tsql.Window{{Column: "d", Type: tsql.TypeDate, Start: day("2026-07-10"), End: day("2026-07-12")}}
			checkOverview(t, diff(t, s),
				"2026-07-10 both 4→4 match=false unexpected +0 -0 ~1 dup0",
				"2026-07-11 both 4→4 match=true unchanged")
		})

		t.Run("whole_relation_without_partition", func(t *testing.T) {
			newRows := edit(baseRows(), func(r []any) []any {
				if r[0].(int64) == 3 {
					return nil
				}
				return r
			})
			fresh(t, baseRows(), newRows)
			s := spec(e)
			s.Partition = ""
			checkOverview(t, diff(t, s), "(all) both 12→11 match=false unexpected +0 -1 ~0 dup0")
		})

		t.Run("bad_input", func(t *testing.T) {
			fresh(t, baseRows(), baseRows())
			for name, mut := range map[string]func(s *reconcile.Spec){
				"unknown_relation":      func(s *reconcile.Spec) { s.New.Relation = "no_such_table" },
				"unknown_key":           func(s *reconcile.Spec) { s.Key = []string{"nope"} },
				"unknown_partition":     func(s *reconcile.Spec) { s.Partition = "nope" },
				"unknown_measure":       func(s *reconcile.Spec) { s.Measures = []string{"nope"} },
				"text_measure":          func(s *reconcile.Spec) { s.Measures = []string{"name"} },
				"unknown_tolerance":     func(s *reconcile.Spec) { s.Tolerance = map[string]reconcile.Tolerance{"nope": {Abs: 1}} },
				"no_key":                func(s *reconcile.Spec) { s.Key = nil },
				"float_partition":       func(s *reconcile.Spec) { s.Partition = "score" },
				"bad_partition_value":   func(s *reconcile.Spec) { s.Partitions = []string{"July"} },
				"ignore_key":            func(s *reconcile.Spec) { s.Ignore = []string{"id"} },
				"injection_in_relation": func(s *reconcile.Spec) { s.Old.Relation = "old_t; DROP TABLE new_t" },
			} {
				t.Run(name, func(t *testing.T) {
					s := spec(e)
					mut(&s)
					if _, err := reconcile.Diff(ctx, s); !errors.Is(err, fault.ErrInvalid) {
						t.Errorf("got %v, want invalid", err)
					}
				})
			}
			if _, err := e.Columns(ctx, "new_t"); err != nil {
				t.Errorf("new_t after the injection attempt: %v", err)
			}
		})

		t.Run("partitions_of_different_types", func(t *testing.T) {
			textDay := append([]tsql.Column(nil), orderCols...)
			textDay[1] = tsql.Column{Name: "d", Kind: tsql.TypeString}
			e.DropTable(ctx, "new_t")
			if err := e.CreateTable(ctx, "new_t", textDay, "", []string{"id"}); err != nil {
				t.Fatal(err)
			}
			_, err := reconcile.Diff(ctx, spec(e))
			if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), `partition column "d" is`) {
				t.Errorf("got %v, want invalid naming the partition column's types", err)
			}
		})
	})
}

// recorder is an engine that keeps the statements it reads with and their arguments.
type recorder struct {
	tsql.Engine
	statements []struct {
		query string
		args  []any
	}
}

func (r *recorder) Each(ctx context.Context, q string, args []any, fn func([]any) error) error {
	r.statements = append(r.statements, struct {
		query string
		args  []any
	}{q, args})
	return r.Engine.Each(ctx, q, args, fn)
}
