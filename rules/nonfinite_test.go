package rules

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestNonFiniteValues: DOUBLE columns holding NaN and infinities. Their rules run, and their
// results, samples holding NaN and infinities among them, are saved in the ledger and read back
// as they were printed: JSON has no NaN, and saving the run used to abort the check with "json:
// unsupported value" and no result shown. A total that is NaN, or +Inf, is within any tolerance
// of the same reference, as the engines compare values, and of no finite one.
func TestNonFiniteValues(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		nan, inf := math.NaN(), math.Inf(1)
		cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate}, {Name: "r", Kind: tsql.TypeFloat}}
		createRows(t, e, "readings", cols, [][]any{
			{int64(1), day("2026-07-01"), 1.0}, {int64(2), day("2026-07-01"), nan},
			{int64(3), day("2026-07-02"), inf}, {int64(4), day("2026-07-02"), 2.0},
			{int64(5), day("2026-07-03"), 3.0},
		})
		ref := []tsql.Column{{Name: "d", Kind: tsql.TypeDate}, {Name: "r", Kind: tsql.TypeFloat}}
		createRows(t, e, "same_totals", ref, [][]any{{day("2026-07-01"), nan}, {day("2026-07-02"), inf}, {day("2026-07-03"), 3.0}})
		createRows(t, e, "finite_totals", ref, [][]any{{day("2026-07-01"), 1.0}, {day("2026-07-02"), 2.0}, {day("2026-07-03"), 3.0}})
		// NaN in a range: cmd/trueup's TestCheckNaN. The gauges hold the infinities.
		createRows(t, e, "gauges", []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "g", Kind: tsql.TypeFloat}},
			[][]any{{int64(1), 5.0}, {int64(2), inf}, {int64(3), -inf}})
		totals := "-- kind: totals\n-- table: readings\n-- partition: d\n-- measure: sum(r)\n-- tolerance: 1%\n-- reference: "
		set, targets := loadSet(t, e, fstest.MapFS{
			"range_g.sql":        {Data: []byte("-- kind: accepted_range\n-- table: gauges\n-- column: g\n-- min: 0\n-- max: 10\n")},
			"totals_same.sql":    {Data: []byte(totals + "same_totals\n")},
			"totals_finite.sql":  {Data: []byte(totals + "finite_totals\n")},
			"totals_whole_r.sql": {Data: []byte("-- kind: totals\n-- table: readings\n-- measure: sum(r)\n-- reference: SELECT 1.0 AS r\n")},
		})
		run := NewRunner(targets, WithClock(runClock)).Run(ctx, set.Rules)

		want := map[string]outcome{
			"range_g":        {StatusFail, 2, []string{}},
			"totals_same":    {StatusPass, 0, []string{}},
			"totals_finite":  {StatusFail, 2, []string{"2026-07-01", "2026-07-02"}},
			"totals_whole_r": {StatusFail, 1, []string{}},
		}
		if diff := cmp.Diff(want, outcomes(run)); diff != "" {
			for _, r := range run.Results {
				t.Logf("%s: %s %s", r.Rule, r.Status, r.Message)
			}
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
		// shown is a result as check --format json writes it: its message and sample rows (sorted:
		// a range rule's sample is in no order).
		shown := func(r Result) string {
			rows := make([]string, len(r.Sample))
			for i, row := range r.Sample {
				b, err := json.Marshal(row)
				if err != nil {
					t.Errorf("%s: sample: %v", r.Rule, err)
				}
				rows[i] = string(b)
			}
			slices.Sort(rows)
			return r.Message + " " + strings.Join(rows, " ")
		}
		printed := map[string]string{}
		for _, r := range run.Results {
			printed[r.Rule] = shown(r)
		}
		wantPrinted := map[string]string{
			"range_g":        `2 rows whose g is outside [0, 10] {"id":2,"g":"+Inf"} {"id":3,"g":"-Inf"}`,
			"totals_same":    ` `,
			"totals_finite":  `2 partitions of 3 differ from the reference by more than 1% {"partition":"2026-07-01","value":"NaN","reference":1,"difference":"NaN","difference_pct":"NaN"} {"partition":"2026-07-02","value":"+Inf","reference":2,"difference":"+Inf","difference_pct":"+Inf"}`,
			"totals_whole_r": `sum(r) is NaN, the reference 1: more than 0 (exact) apart {"value":"NaN","reference":1,"difference":"NaN","difference_pct":"NaN"}`,
		}
		if diff := cmp.Diff(wantPrinted, printed); diff != "" {
			t.Errorf("results (-want +got):\n%s", diff)
		}

		s := openStore(t)
		if _, err := s.SaveRun(ctx, run, ""); err != nil {
			t.Fatalf("save: %v", err)
		}
		latest, err := s.Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		loaded := map[string]string{}
		for name, r := range latest {
			loaded[name] = shown(r)
		}
		if diff := cmp.Diff(wantPrinted, loaded); diff != "" {
			t.Errorf("results read back (-want +got):\n%s", diff)
		}
	})
}
