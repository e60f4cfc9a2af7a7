package rules

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestRowCountStrictBounds: with inclusive: false a count equal to a bound is outside it, as
// dbt-utils' fewer_rows_than and dbt-expectations' strictly judge; the shop's 39 orders pass a
// bound of 39 inclusive, and fail it strict.
func TestRowCountStrictBounds(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		loadShop(t, e)
		rule := func(bounds string) *fstest.MapFile {
			return &fstest.MapFile{Data: []byte("-- kind: row_count\n-- table: orders\n" + bounds)}
		}
		set, targets := loadSet(t, e, fstest.MapFS{
			"at_most.sql":       rule("-- max: 39\n"),
			"fewer.sql":         rule("-- max: 39\n-- inclusive: false\n"),
			"more.sql":          rule("-- min: 39\n-- inclusive: false\n"),
			"between.sql":       rule("-- min: 38\n-- max: 40\n-- inclusive: false\n"),
			"fewer_than_it.sql": rule("-- max: compare_to\n-- compare_to: orders\n-- inclusive: false\n"),
			"as_many.sql":       rule("-- max: compare_to\n-- compare_to: orders\n"),
		})
		run := NewRunner(targets).Run(t.Context(), set.Rules)
		none := []string{}
		want := map[string]outcome{
			"at_most": {StatusPass, 0, none}, "fewer": {StatusFail, 1, none}, "more": {StatusFail, 1, none},
			"between": {StatusPass, 0, none}, "fewer_than_it": {StatusFail, 1, none}, "as_many": {StatusPass, 0, none},
		}
		if diff := cmp.Diff(want, outcomes(run)); diff != "" {
			for _, r := range run.Results {
				t.Logf("%s: %s", r.Rule, r.Message)
			}
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
	})
}

// TestEqualityCountsAsExceptDoes: equality compares sets, as dbt-utils' except: a row one side
// lacks is one violation however many copies the other holds, and a row held more often on one
// side is held by both.
func TestEqualityCountsAsExceptDoes(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := t.Context()
		cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt, Nullable: true}, {Name: "v", Kind: tsql.TypeString, Nullable: true}}
		for table, rows := range map[string][][]any{
			"a": {{int64(1), "x"}, {int64(2), "y"}, {int64(2), "y"}, {int64(3), nil}, {int64(3), nil}},
			"b": {{int64(1), "x"}, {int64(3), nil}},
		} {
			if err := e.CreateTable(ctx, table, cols, "", nil); err != nil {
				t.Fatal(err)
			}
			if err := e.Insert(ctx, table, []string{"id", "v"}, rows); err != nil {
				t.Fatal(err)
			}
		}
		set, targets := loadSet(t, e, fstest.MapFS{
			"eq.sql": {Data: []byte("-- kind: equality\n-- table: a\n-- compare_to: b\n-- columns: id, v\n")},
		})
		run := NewRunner(targets).Run(ctx, set.Rules)
		if got := outcomes(run)["eq"]; got.Status != StatusFail || got.Violations != 1 {
			t.Errorf("a has (2, y) twice, b not at all: %+v (%s), want 1 violation", got, run.Results[0].Message)
		}
		if msg := run.Results[0].Message; msg != "1 row of a not in b" {
			t.Errorf("message %q", msg)
		}
	})
}
