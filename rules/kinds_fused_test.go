package rules

import (
	"maps"
	"testing"
	"testing/fstest"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestNewKindsAddNoQueries: the shop's rules with a rule of every new row kind beside them on
// orders issue exactly the queries the shop's rules issue alone (TestEveryKind's 18): they are
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
		if run.Queries != 18 {
			t.Errorf("queries = %d, want 18 as without the new rules", run.Queries)
		}
	})
}
