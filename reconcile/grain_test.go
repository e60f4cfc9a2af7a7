package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"trueup/fault"
	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// monthRows are 12 orders over four days across a month's end, three a day: 2026-07-30 and 31,
// 2026-08-01 and 02.
func monthRows() [][]any {
	var rows [][]any
	for i := int64(1); i <= 12; i++ {
		rows = append(rows, []any{i, day("2026-07-30").AddDate(0, 0, int((i-1)/3)), fmt.Sprintf("c%d", i), float64(i) * 10.25, float64(i) / 4})
	}
	return rows
}

// TestDiffAtGrain: with Spec.Grain a partition is a month of a date column, labelled by its
// first day; what the row comparison finds per row is summed into its month.
func TestDiffAtGrain(t *testing.T) {
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
		monthly := func() reconcile.Spec {
			s := spec(e)
			s.Grain = "month"
			return s
		}

		t.Run("identical", func(t *testing.T) {
			fresh(t, monthRows(), monthRows())
			r := diff(t, monthly())
			checkOverview(t, r,
				"2026-07 both 6→6 match=true unchanged",
				"2026-08 both 6→6 match=true unchanged")
			if r.Grain != "month" || r.Differs {
				t.Errorf("grain %q, differs %v", r.Grain, r.Differs)
			}
		})

		t.Run("rows_summed_into_their_month", func(t *testing.T) {
			newRows := edit(monthRows(), func(r []any) []any {
				switch r[0].(int64) {
				case 2: // 2026-07-30
					return nil
				case 8: // 2026-08-01
					r[3] = 99.99
				}
				return r
			})
			newRows = append(newRows, []any{int64(100), day("2026-08-02"), "new", 1.5, nil})
			fresh(t, monthRows(), newRows)
			r := diff(t, monthly())
			checkOverview(t, r,
				"2026-07 both 6→5 match=false unexpected +0 -1 ~0 dup0",
				"2026-08 both 6→7 match=false unexpected +1 -0 ~1 dup0")
			if len(r.Samples.Added) != 1 || r.Samples.Added[0].Partition != "2026-08" || r.Samples.Added[0].Values.Get("d") == nil {
				t.Errorf("added sample: %+v", r.Samples.Added)
			}
			if len(r.Samples.Changed) != 1 || r.Samples.Changed[0].Partition != "2026-08" {
				t.Errorf("changed sample: %+v", r.Samples.Changed)
			}
		})

		t.Run("a_day_moved_inside_its_month_is_seen", func(t *testing.T) {
			// Rows are matched on their own day and key: the row leaves one day and joins the
			// other, inside the one month, which therefore differs.
			fresh(t, monthRows(), edit(monthRows(), func(r []any) []any {
				if r[0].(int64) == 1 {
					r[1] = day("2026-07-31")
				}
				return r
			}))
			r := diff(t, monthly())
			checkOverview(t, r,
				"2026-07 both 6→6 match=false unexpected +1 -1 ~0 dup0",
				"2026-08 both 6→6 match=true unchanged")
		})

		t.Run("duplicate_key_compared_again_exactly", func(t *testing.T) {
			fresh(t, monthRows(), append(monthRows(), monthRows()[3], monthRows()[9])) // 2026-07-31, 2026-08-02
			r := diff(t, monthly())
			checkOverview(t, r,
				"2026-07 both 6→7 match=false unexpected +0 -0 ~0 dup1",
				"2026-08 both 6→7 match=false unexpected +0 -0 ~0 dup1")
		})

		t.Run("restricted_to_a_month_by_one_of_its_days", func(t *testing.T) {
			fresh(t, monthRows(), edit(monthRows(), func(r []any) []any {
				if r[0].(int64) == 2 || r[0].(int64) == 8 {
					return nil
				}
				return r
			}))
			s := monthly()
			s.Partitions = []string{"2026-08-15"}
			checkOverview(t, diff(t, s), "2026-08 both 6→5 match=false unexpected +0 -1 ~0 dup0")
		})

		t.Run("expectations_judge_the_month_holding_their_days", func(t *testing.T) {
			fresh(t, monthRows(), append(monthRows(), []any{int64(100), day("2026-08-02"), "new", 1.5, nil}))
			s := monthly()
			exp, err := reconcile.ParseExpectations("inside 2026-08-02..2026-08-02 rows +1; outside identical")
			if err != nil {
				t.Fatal(err)
			}
			s.Expect = exp
			r := diff(t, s)
			checkOverview(t, r,
				"2026-07 both 6→6 match=true unchanged",
				"2026-08 both 6→7 match=false expected +1 -0 ~0 dup0")
			if !r.ExpectationsMet {
				t.Error("expectations not met")
			}
		})

		t.Run("hours_of_a_timestamp", func(t *testing.T) {
			cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "ts", Kind: tsql.TypeTimestamp}, {Name: "v", Kind: tsql.TypeString}}
			var old [][]any
			for i := int64(0); i < 6; i++ { // 10:00, 10:20, 10:40, 11:00, …
				old = append(old, []any{i, day("2026-07-10").Add(10*time.Hour + time.Duration(i)*20*time.Minute), "a"})
			}
			new := edit(old, func(r []any) []any {
				if r[0].(int64) == 4 {
					r[2] = "b"
				}
				return r
			})
			for _, tb := range []string{"old_t", "new_t"} {
				if err := e.DropTable(ctx, tb); err != nil {
					t.Fatal(err)
				}
			}
			for tb, rows := range map[string][][]any{"old_t": old, "new_t": new} {
				if err := e.CreateTable(ctx, tb, cols, "", []string{"id"}); err != nil {
					t.Fatal(err)
				}
				if err := e.Insert(ctx, tb, []string{"id", "ts", "v"}, rows); err != nil {
					t.Fatal(err)
				}
			}
			s := reconcile.Spec{Old: reconcile.Side{Engine: e, Relation: "old_t"}, New: reconcile.Side{Engine: e, Relation: "new_t"},
				Key: []string{"id"}, Partition: "ts", Grain: "hour"}
			checkOverview(t, diff(t, s),
				"2026-07-10T10:00 both 3→3 match=true unchanged",
				"2026-07-10T11:00 both 3→3 match=false unexpected +0 -0 ~1 dup0")
		})

		t.Run("a_grain_needs_a_date_or_timestamp", func(t *testing.T) {
			fresh(t, monthRows(), monthRows())
			for _, s := range []reconcile.Spec{
				func() reconcile.Spec { s := monthly(); s.Partition = "id"; return s }(),
				func() reconcile.Spec { s := monthly(); s.Grain = "week"; return s }(),
			} {
				if _, err := reconcile.Diff(ctx, s); !errors.Is(err, fault.ErrInvalid) {
					t.Errorf("partition %s grain %s: %v, want invalid", s.Partition, s.Grain, err)
				}
			}
		})
	})
}

// TestTimestampPartitions: a timestamp partition column is compared by day unless a grain says
// otherwise — in one engine and across DuckDB and ClickHouse — so an events table whose every
// row has its own timestamp is not a partition a row; a change is found in its day or month.
func TestTimestampPartitions(t *testing.T) {
	ctx := context.Background()
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "ts", Kind: tsql.TypeTimestamp}, {Name: "v", Kind: tsql.TypeString}}
	var old [][]any // every 7 hours from 2026-07-30 to 2026-08-02: 12 rows, each its own ts
	for i := int64(0); i < 12; i++ {
		old = append(old, []any{i, day("2026-07-30").Add(time.Duration(i) * 7 * time.Hour), "a"})
	}
	new := edit(old, func(r []any) []any {
		if r[0].(int64) == 10 { // 2026-08-01 22:00
			r[2] = "b"
		}
		return r
	})
	put := func(t *testing.T, e tsql.Engine, table string, rows [][]any) {
		t.Helper()
		if err := e.DropTable(ctx, table); err != nil {
			t.Fatal(err)
		}
		if err := e.CreateTable(ctx, table, cols, "", []string{"id"}); err != nil {
			t.Fatal(err)
		}
		if err := e.Insert(ctx, table, []string{"id", "ts", "v"}, rows); err != nil {
			t.Fatal(err)
		}
	}
	byDay := []string{
		"2026-07-30 both 4→4 match=true unchanged",
		"2026-07-31 both 3→3 match=true unchanged",
		"2026-08-01 both 4→4 match=false unexpected +0 -0 ~1 dup0",
		"2026-08-02 both 1→1 match=true unchanged",
	}
	byMonth := []string{
		"2026-07 both 7→7 match=true unchanged",
		"2026-08 both 5→5 match=false unexpected +0 -0 ~1 dup0",
	}
	check := func(t *testing.T, s reconcile.Spec) {
		t.Helper()
		r := diff(t, s)
		checkOverview(t, r, byDay...)
		if r.Grain != "day" || len(r.Samples.Changed) != 1 || r.Samples.Changed[0].Partition != "2026-08-01" {
			t.Errorf("grain %q, changed samples %+v", r.Grain, r.Samples.Changed)
		}
		s.Grain = "month"
		checkOverview(t, diff(t, s), byMonth...)
	}
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		put(t, e, "old_t", old)
		put(t, e, "new_t", new)
		check(t, reconcile.Spec{Old: reconcile.Side{Engine: e, Relation: "old_t"}, New: reconcile.Side{Engine: e, Relation: "new_t"},
			Key: []string{"id"}, Partition: "ts"})
	})
	t.Run("across_engines", func(t *testing.T) {
		engines := sqltest.Engines(t)
		if len(engines) < 2 {
			t.Skip("needs both engines")
		}
		put(t, engines[0], "old_t", old)
		put(t, engines[1], "new_t", new)
		s := reconcile.Spec{Old: reconcile.Side{Engine: engines[0], Relation: "old_t"}, New: reconcile.Side{Engine: engines[1], Relation: "new_t"},
			Key: []string{"id"}, Partition: "ts"}
		check(t, s)
	})
}
