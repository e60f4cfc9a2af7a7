package rules

import (
	"maps"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestNewKindsAddNoQueries: the shop's rules with a rule of every new row kind beside them on
// orders issue exactly the queries the shop's rules issue alone (TestEveryKind's 19): they are
// counted by the scans that run anyway, and passing they ask for nothing more.
func TestNewKindsAddNoQueries(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		loadShop(t, e)
		fsys := fstest.MapFS{}
		maps.Copy(fsys, shopRules)
		added := map[string]string{
			"orders/values_region.sql":  "-- kind: accepted_values\n-- table: orders\n-- column: region\n-- values: 'EU', 'NA', 'APAC', 'LATAM'\n",
			"orders/range_amount.sql":   "-- kind: accepted_range\n-- table: orders\n-- column: amount\n-- min: 0\n-- max: 100\n-- partition: d\n",
			"orders/expr_amount.sql":    "-- kind: expression\n-- table: orders\n-- expression: amount >= 0\n",
			"orders/pattern_region.sql": "-- kind: pattern\n-- table: orders\n-- column: region\n-- regex: ^[A-Z]+$\n",
			"orders/varied_region.sql":  "-- kind: not_constant\n-- table: orders\n-- column: region\n-- partition: d\n",
			"orders/rows_daily.sql":     "-- kind: row_count\n-- table: orders\n-- partition: d\n-- min: 4\n-- max: 10\n",
		}
		for name, text := range added {
			fsys[name] = &fstest.MapFile{Data: []byte(text)}
		}
		set, targets := loadSet(t, e, fsys)
		run := NewRunner(targets, WithClock(runClock), WithSchemaStore(&memSchemas{snap: map[string][]tsql.Column{}})).Run(t.Context(), set.Rules)
		got := map[string]Status{}
		for _, r := range run.Results {
			got[r.Rule] = r.Status
		}
		want := map[string]Status{}
		for name := range added {
			rule := name[len("orders/") : len(name)-len(".sql")]
			want[rule] = StatusPass
		}
		for rule := range want {
			if got[rule] != StatusPass {
				t.Errorf("%s: %s", rule, got[rule])
			}
		}
		if run.Queries != 19 {
			t.Errorf("queries = %d, want 19 as without the new rules", run.Queries)
		}
	})
}

// TestRowCountAcrossTargets compares a DuckDB table's row count with relations in ClickHouse
// (compare_to_target), per day and in all.
func TestRowCountAcrossTargets(t *testing.T) {
	duck := sqltest.DuckDB(t)
	ch := sqltest.ClickHouse(t)
	if ch == nil {
		t.Skip("needs ClickHouse")
	}
	loadShop(t, duck)
	loadShop(t, ch)
	targets := TargetMap{Default: "duck", Engines: map[string]tsql.Engine{"duck": duck, "ch": ch}}
	set, err := Load(t.Context(), fstest.MapFS{
		"same.sql":      {Data: []byte("-- kind: row_count\n-- table: orders\n-- compare_to: orders\n-- compare_to_target: ch\n")},
		"same_days.sql": {Data: []byte("-- kind: row_count\n-- table: orders\n-- partition: d\n-- compare_to: orders\n-- compare_to_target: ch\n")},
		"fewer.sql":     {Data: []byte("-- kind: row_count\n-- table: orders\n-- max: compare_to\n-- compare_to: raw\n-- compare_to_target: ch\n")},
		"days.sql":      {Data: []byte("-- kind: row_count\n-- table: orders\n-- partition: d\n-- compare_to: calendar\n-- compare_to_target: ch\n-- tolerance: 3\n")},
	}, "rules", targets)
	if err != nil {
		t.Fatal(err)
	}
	run := NewRunner(targets).Run(t.Context(), set.Rules)
	none := []string{}
	want := map[string]outcome{
		"same":      {StatusPass, 0, none},
		"same_days": {StatusPass, 0, none},
		"fewer":     {StatusFail, 1, none}, // 39 orders, 9 raw days
		// 4 orders a day against one calendar row, within 3; 07-02 has none (1 apart);
		// 07-06 has 5 and 07-10 6, more than 3 apart
		"days": {StatusFail, 2, []string{"2026-07-06", "2026-07-10"}},
	}
	if diff := cmp.Diff(want, outcomes(run)); diff != "" {
		for _, r := range run.Results {
			t.Logf("%s: %s", r.Rule, r.Message)
		}
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

// TestSchemaSnapshotOrdered: a snapshot rule with ordered: true fails when the same columns
// come back in another order; without it, the order does not matter.
func TestSchemaSnapshotOrdered(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := t.Context()
		cols := []tsql.Column{{Name: "a", Kind: tsql.TypeInt}, {Name: "b", Kind: tsql.TypeString}}
		if err := e.CreateTable(ctx, "dims", cols, "", nil); err != nil {
			t.Fatal(err)
		}
		set, targets := loadSet(t, e, fstest.MapFS{
			"ordered.sql":   {Data: []byte("-- kind: schema\n-- table: dims\n-- ordered: true\n")},
			"unordered.sql": {Data: []byte("-- kind: schema\n-- table: dims\n")},
		})
		runner := NewRunner(targets, WithSchemaStore(&memSchemas{snap: map[string][]tsql.Column{}}))
		if run := runner.Run(ctx, set.Rules); run.Failed() {
			t.Fatalf("first run records: %+v", run.Results)
		}
		if err := e.DropTable(ctx, "dims"); err != nil {
			t.Fatal(err)
		}
		if err := e.CreateTable(ctx, "dims", []tsql.Column{cols[1], cols[0]}, "", nil); err != nil {
			t.Fatal(err)
		}
		got := map[string]outcome{}
		for _, r := range runner.Run(ctx, set.Rules).Results {
			got[r.Rule] = outcome{r.Status, r.Violations, r.FailingPartitions}
		}
		want := map[string]outcome{"ordered": {StatusFail, 2, []string{}}, "unordered": {StatusPass, 0, []string{}}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("after reordering (-want +got):\n%s", diff)
		}
	})
}
