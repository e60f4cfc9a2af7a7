package rules

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestRelationshipsRangeProof: integer keys of a parent that fill their range without a gap
// prove a relationship from the aggregate scan's min and max alone; a gap, or a child value
// outside the range, falls back to the anti-join, which finds the orphans exactly.
func TestRelationshipsRangeProof(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		loadShop(t, e)
		key := []tsql.Column{{Name: "customer_id", Kind: tsql.TypeInt}}
		parents := map[string][][]any{"customers_all": nil, "customers_gapped": nil, "customers_nine": nil}
		for i := int64(1); i <= 99; i++ {
			parents["customers_all"] = append(parents["customers_all"], []any{i})
		}
		// 1..4 and 99, the values orders uses: no orphan, but a gap
		parents["customers_gapped"] = [][]any{{int64(1)}, {int64(2)}, {int64(3)}, {int64(4)}, {int64(99)}}
		// 1..9 without a gap, 99 outside it: order 99 on 07-08 is an orphan
		for i := int64(1); i <= 9; i++ {
			parents["customers_nine"] = append(parents["customers_nine"], []any{i})
		}
		for name, rows := range parents {
			if err := e.CreateTable(ctx, name, key, "", nil); err != nil {
				t.Fatal(err)
			}
			if err := e.Insert(ctx, name, []string{"customer_id"}, rows); err != nil {
				t.Fatal(err)
			}
		}
		rel := func(parent string) *fstest.MapFile {
			return &fstest.MapFile{Data: []byte("-- kind: relationships\n-- table: orders\n-- column: customer_id\n-- parent: " + parent + "\n-- partition: d\n")}
		}
		fsys := fstest.MapFS{
			"orders/proved.sql":  rel("customers_all"),
			"orders/gapped.sql":  rel("customers_gapped"),
			"orders/outside.sql": rel("customers_nine"),
			// the aggregate scan the proof rides on
			"orders/rows.sql": {Data: []byte("-- kind: completeness\n-- table: orders\n-- partition: d\n-- min_rows: 1\n")},
		}
		targets := TargetMap{Default: "shop", Engines: map[string]tsql.Engine{"shop": e}}
		set, err := Load(ctx, fsys, "rules", targets)
		if err != nil {
			t.Fatal(err)
		}
		run := NewRunner(targets, WithClock(runClock)).Run(ctx, set.Rules)
		want := map[string]outcome{
			"proved":  {StatusPass, 0, []string{}},
			"gapped":  {StatusPass, 0, []string{}},
			"outside": {StatusFail, 1, []string{"2026-07-08"}},
			"rows":    {StatusPass, 0, []string{}},
		}
		if diff := cmp.Diff(want, outcomes(run)); diff != "" {
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
		antiJoin := map[string]bool{}
		for _, r := range run.Results {
			antiJoin[r.Rule] = strings.Contains(r.SQL, "NOT IN")
		}
		if diff := cmp.Diff(map[string]bool{"proved": false, "gapped": true, "outside": true, "rows": false}, antiJoin); diff != "" {
			t.Errorf("rules that ran an anti-join (-want +got):\n%s", diff)
		}
		if got := run.Results[indexOf(run, "outside")].Sample; len(got) != 1 || got[0][0].Value != int64(99) {
			t.Errorf("outside sample = %v, want customer_id 99", got)
		}
		// one aggregate scan of orders, three parent spans, two anti-joins after them
		if run.Queries != 6 {
			t.Errorf("queries = %d, want 6", run.Queries)
		}
	})
}
