package main

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestCheckNaN: a DOUBLE column holding NaN gets the same verdicts on both engines, though
// DuckDB orders NaN above every number and ClickHouse compares it false with everything. A NaN
// lies in no range, so it fails accepted_range with a min only, a max only or both, unless the
// rule's where: leaves it out (isNaN(g) spells it on both); for not_constant and uniqueness it
// is one value, other than every number.
//
//	d           id  g     k     c
//	2026-07-01   1  NaN   NaN   NaN
//	2026-07-01   2  5     NaN   5
//	2026-07-02   3  NULL  NaN   5
//	2026-07-02   4  7     NaN   NULL
func TestCheckNaN(t *testing.T) {
	for name, url := range warehouseURLs(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := sqltest.Open(t, url)
			cols := []tsql.Column{
				{Name: "d", Kind: tsql.TypeDate},
				{Name: "id", Kind: tsql.TypeInt},
				{Name: "g", Kind: tsql.TypeFloat, Nullable: true},
				{Name: "k", Kind: tsql.TypeFloat},
				{Name: "c", Kind: tsql.TypeFloat, Nullable: true},
			}
			if err := e.CreateTable(ctx, "gauges", cols, "", nil); err != nil {
				t.Fatal(err)
			}
			d := func(s string) any { v, _ := time.Parse("2006-01-02", s); return v }
			nan := math.NaN()
			// NaN first: ClickHouse's min(c) and max(c) then say NaN, as if c held one value
			rows := [][]any{
				{d("2026-07-01"), int64(1), nan, nan, nan},
				{d("2026-07-01"), int64(2), 5.0, nan, 5.0},
				{d("2026-07-02"), int64(3), nil, nan, 5.0},
				{d("2026-07-02"), int64(4), 7.0, nan, nil},
			}
			if err := e.Insert(ctx, "gauges", []string{"d", "id", "g", "k", "c"}, rows); err != nil {
				t.Fatal(err)
			}
			dir := writeRules(t, map[string]string{
				"range_both.sql":  "-- kind: accepted_range\n-- table: gauges\n-- column: g\n-- min: 0\n-- max: 10\n",
				"range_min.sql":   "-- kind: accepted_range\n-- table: gauges\n-- column: g\n-- min: 0\n",
				"range_max.sql":   "-- kind: accepted_range\n-- table: gauges\n-- column: g\n-- max: 10\n-- partition: d\n",
				"range_excl.sql":  "-- kind: accepted_range\n-- table: gauges\n-- column: g\n-- min: 5\n-- max: 10\n-- inclusive: false\n",
				"range_where.sql": "-- kind: accepted_range\n-- table: gauges\n-- column: g\n-- min: 0\n-- max: 10\n-- where: NOT isNaN(g)\n",
				"const_c.sql":     "-- kind: not_constant\n-- table: gauges\n-- column: c\n",
				"const_c_day.sql": "-- kind: not_constant\n-- table: gauges\n-- column: c\n-- partition: d\n",
				"const_k.sql":     "-- kind: not_constant\n-- table: gauges\n-- column: k\n",
				"const_k_day.sql": "-- kind: not_constant\n-- table: gauges\n-- column: k\n-- partition: d\n",
				// NaN is one key, as GROUP BY has it: four rows of it are a duplicate
				"uniq_k.sql":  "-- kind: uniqueness\n-- table: gauges\n-- columns: k\n",
				"uniq_c.sql":  "-- kind: uniqueness\n-- table: gauges\n-- columns: c\n",
				"uniq_id.sql": "-- kind: uniqueness\n-- table: gauges\n-- columns: id, k\n",
				// the sum of a column holding NaN is NaN on both, within no tolerance of 12
				"sum_g.sql": "-- kind: totals\n-- table: gauges\n-- measure: sum(g)\n-- tolerance: 1%\n-- reference: SELECT 12.0\n",
			})
			code, doc, errs := checkJSON(t, url, dir)
			if code != exitFailed {
				t.Fatalf("exit %d, want 1\n%s", code, errs)
			}
			none := []string{}
			want := map[string]kindOutcome{
				"range_both":  {"fail", 1, none},
				"range_min":   {"fail", 1, none},
				"range_max":   {"fail", 1, []string{"2026-07-01"}},
				"range_excl":  {"fail", 2, none}, // NaN and 5
				"range_where": {"pass", 0, none},
				"const_c":     {"pass", 0, none}, // NaN and 5
				"const_c_day": {"fail", 1, []string{"2026-07-02"}},
				"const_k":     {"fail", 1, none},
				"const_k_day": {"fail", 2, []string{"2026-07-01", "2026-07-02"}},
				"sum_g":       {"fail", 1, none},
				"uniq_k":      {"fail", 1, none},
				"uniq_c":      {"fail", 1, none}, // 5 twice; NaN once
				"uniq_id":     {"pass", 0, none},
			}
			if diff := cmp.Diff(want, kindOutcomes(doc)); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			messages := map[string]string{}
			samples := map[string][]map[string]any{}
			for _, r := range doc.Results {
				messages[r.Rule], samples[r.Rule] = r.Message, r.Sample
			}
			wantMessages := map[string]string{
				"range_both":  "1 row whose g is outside [0, 10]",
				"range_min":   "1 row whose g is outside [0, ∞)",
				"range_max":   "1 row whose g is outside (-∞, 10]",
				"const_c_day": "1 partition of 2 where c holds one value only",
				"const_k":     "k holds one value only, NaN",
				"sum_g":       "sum(g) is NaN, the reference 12: more than 1% apart",
			}
			for rule, w := range wantMessages {
				if messages[rule] != w {
					t.Errorf("%s message %q, want %q", rule, messages[rule], w)
				}
			}
			nanRow := []map[string]any{{"d": "2026-07-01", "id": 1.0, "g": "NaN", "k": "NaN", "c": "NaN"}}
			wantSamples := map[string][]map[string]any{
				"range_both":  nanRow,
				"range_min":   nanRow,
				"range_max":   nanRow,
				"const_c_day": {{"partition": "2026-07-02", "c": 5.0, "rows": 2.0}},
				"const_k":     {{"k": "NaN", "rows": 4.0}},
				"uniq_k":      {{"k": "NaN", "rows": 4.0}},
				"uniq_c":      {{"c": 5.0, "rows": 2.0}},
				"const_k_day": {{"partition": "2026-07-01", "k": "NaN", "rows": 2.0}, {"partition": "2026-07-02", "k": "NaN", "rows": 2.0}},
			}
			for rule, w := range wantSamples {
				if diff := cmp.Diff(w, samples[rule]); diff != "" {
					t.Errorf("%s sample (-want +got):\n%s", rule, diff)
				}
			}
			_, out, _ := cli(t, "--target", url, "check", "--rules", dir, "--explain")
			for _, w := range []string{"passes when every non-NULL g is within [0, 10] (a NaN is outside)", "passes when k holds more than one distinct non-NULL value (NaN counts as one)"} {
				if !strings.Contains(out, w) {
					t.Errorf("--explain lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
