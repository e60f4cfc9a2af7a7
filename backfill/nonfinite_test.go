package backfill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"trueup/backfill"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// readingsFile rebuilds nine days of readings, whose live version lacks the readings whose id
// ends in 3. Validation totals r, a DOUBLE, as it totals every float and decimal column.
const readingsFile = `-- table: readings
-- partition: d
-- grain: day
-- key: id
-- reason: bug
-- objective: The load dropped every tenth reading from 2026-07-10 to 2026-07-18.
-- scope: 2026-07-10..2026-07-18
-- expect: inside scope rows +5..15%, sum(r) +0..20%; outside scope identical
SELECT id, d, r FROM readings_raw WHERE d >= $start AND d < $end
`

// TestBackfillOverNonFiniteValues: a table whose float column holds a NaN outside the scope,
// and +Inf inside it, validates: the NaN partition is identical (NaN is NaN), the +Inf one's
// total did not move, and the diff, the validation and its changed partitions are kept in the
// ledger with those totals. The run used to end validation-failed (the diff could not be saved:
// "json: unsupported value: NaN"), refusing the swap of data that was fine.
func TestBackfillOverNonFiniteValues(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		var rows [][]any
		for n := int64(0); n < 310; n++ { // ten readings a day through July
			r := float64(n) * 1.25
			switch n {
			case 42: // 2026-07-05, outside the scope
				r = math.NaN()
			case 124: // 2026-07-13, inside
				r = math.Inf(1)
			}
			rows = append(rows, []any{n, day("2026-07-01").AddDate(0, 0, int(n/10)), r})
		}
		cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate}, {Name: "r", Kind: tsql.TypeFloat}}
		if err := e.CreateTable(ctx, "readings_raw", cols, "d", []string{"id"}); err != nil {
			t.Fatal(err)
		}
		if err := e.Insert(ctx, "readings_raw", []string{"id", "d", "r"}, rows); err != nil {
			t.Fatal(err)
		}
		if err := e.CreateTableAs(ctx, "readings__v1", "d", []string{"id"}, "SELECT id, d, r FROM readings_raw WHERE id % 10 != 3"); err != nil {
			t.Fatal(err)
		}
		if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "readings", Table: "readings__v1"}}); err != nil {
			t.Fatal(err)
		}
		r, diffs := soleBackfill(t, e, "backfills/fix_readings.sql", readingsFile)

		done := runToEnd(t, ctx, r, "fix_readings", backfill.RunOptions{Actor: "ann"})
		if done.State != backfill.RunValidated {
			t.Fatalf("run ended %s: %s %s", done.State, done.Error, done.Validation)
		}

		var v backfill.Validation
		if err := json.Unmarshal(done.Validation, &v); err != nil || len(v.Tables) != 1 {
			t.Fatalf("validation %s: %v", done.Validation, err)
		}
		tc := v.Tables[0]
		var changed []string
		for _, p := range tc.Changed {
			changed = append(changed, fmt.Sprintf("%s %d→%d %s %v→%v", p.Partition, p.OldCount, p.NewCount, p.Measure, p.OldTotal, p.NewTotal))
		}
		if len(changed) != 9 || !tc.ExpectationsMet || changed[3] != "2026-07-13 9→10 sum(r) +Inf→+Inf" {
			t.Errorf("validation of readings: met %v, changed partitions:\n%s", tc.ExpectationsMet, strings.Join(changed, "\n"))
		}

		saved, err := diffs.Get(ctx, tc.DiffID)
		if err != nil {
			t.Fatal(err)
		}
		p := saved.Partition("2026-07-05")
		if p == nil {
			t.Fatalf("the saved diff has no 2026-07-05: %+v", saved.Partitions)
		}
		m := p.Measures["r"]
		if got := fmt.Sprint(p.Verdict, " ", m.Old, " ", m.New, " ", m.Delta); got != "unchanged NaN NaN 0" {
			t.Errorf("saved diff, 2026-07-05: %s, want unchanged NaN NaN 0", got)
		}
	})
}
