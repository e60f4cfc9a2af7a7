package rules

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestKindOptions covers options of the kinds beyond TestEveryKind, over the shop (see
// loadShop): an absolute tolerance, the share of a measure, a completeness reference given as a
// SELECT, and more duplicate keys than one query fetches.
func TestKindOptions(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		loadShop(t, e)
		// the totals of orders per day, 07-04 off by 2 and 07-05 off by 2.5
		amount := map[string]float64{"2026-07-04": 42, "2026-07-05": 42.5, "2026-07-06": 60, "2026-07-10": 60}
		var off [][]any
		for d := day("2026-07-01"); d.Before(day("2026-07-11")); d = d.AddDate(0, 0, 1) {
			if a, ok := amount[d.Format("2006-01-02")]; ok {
				off = append(off, []any{d, a})
			} else if !d.Equal(day("2026-07-02")) {
				off = append(off, []any{d, 40.0})
			}
		}
		createRows(t, e, "raw_off", []tsql.Column{{Name: "d", Kind: tsql.TypeDate}, {Name: "amount", Type: "DECIMAL(18,2)", Kind: tsql.TypeDecimal}}, off)
		// 12,000 keys, each twice on its day
		var keys [][]any
		for i := 0; i < 12_000; i++ {
			d := day("2026-07-01").AddDate(0, 0, i%3)
			keys = append(keys, []any{d, int64(i)}, []any{d, int64(i)})
		}
		createRows(t, e, "keys_twice", []tsql.Column{{Name: "d", Kind: tsql.TypeDate}, {Name: "k", Kind: tsql.TypeInt}}, keys)

		totals := "-- kind: totals\n-- table: orders\n-- partition: d\n-- measure: sum(amount)\n-- tolerance: 2\n-- reference: "
		dist := "-- kind: distribution\n-- table: orders\n-- partition: d\n-- dimension: region\n-- measure: sum(amount)\n-- baseline: 3\n-- threshold: "
		fsys := fstest.MapFS{
			// raw is 2 above orders on 07-04
			"tolerance_within.sql": {Data: []byte(totals + "raw\n")},
			"tolerance_beyond.sql": {Data: []byte(totals + "raw_off\n")},
			// on 07-06 EU takes 50% of the amount (30 of 60) but 40% of the rows, against 25%
			"amount_share_tight.sql": {Data: []byte(dist + "20%\n")},
			"amount_share_loose.sql": {Data: []byte(dist + "30%\n")},
			// the calendar has 07-02, on which there is no order; raw has not
			"reference_select_fail.sql": {Data: []byte("-- kind: completeness\n-- table: orders\n-- partition: d\n-- reference: SELECT d FROM calendar\n")},
			"reference_select_pass.sql": {Data: []byte("-- kind: completeness\n-- table: orders\n-- partition: d\n\nSELECT d\nFROM raw\n")},
			"keys_daily.sql":            {Data: []byte("-- kind: uniqueness\n-- table: keys_twice\n-- columns: k\n-- partition: d\n")},
			"keys_table.sql":            {Data: []byte("-- kind: uniqueness\n-- table: keys_twice\n-- columns: k\n")},
		}
		set, targets := loadSet(t, e, fsys)
		run := NewRunner(targets, WithClock(runClock)).Run(ctx, set.Rules)
		none := []string{}
		want := map[string]outcome{
			"tolerance_within":      {StatusPass, 0, none},
			"tolerance_beyond":      {StatusFail, 1, []string{"2026-07-05"}},
			"amount_share_tight":    {StatusFail, 1, []string{"2026-07-06"}},
			"amount_share_loose":    {StatusPass, 0, none},
			"reference_select_fail": {StatusFail, 1, []string{"2026-07-02"}},
			"reference_select_pass": {StatusPass, 0, none},
			"keys_daily":            {StatusFail, 12_000, []string{"2026-07-01", "2026-07-02", "2026-07-03"}},
			"keys_table":            {StatusFail, 12_000, none},
		}
		if diff := cmp.Diff(want, outcomes(run)); diff != "" {
			for _, r := range run.Results {
				if r.Status == StatusError {
					t.Logf("%s: %s", r.Rule, r.Message)
				}
			}
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
		samples := map[string][]Row{
			"tolerance_beyond":   {{{Name: "partition", Value: "2026-07-05"}, {Name: "value", Value: 40.0}, {Name: "reference", Value: 42.5}, {Name: "difference", Value: -2.5}, {Name: "difference_pct", Value: -5.88}}},
			"amount_share_tight": {{{Name: "partition", Value: "2026-07-06"}, {Name: "region", Value: "EU"}, {Name: "share_pct", Value: 50.0}, {Name: "baseline_pct", Value: 25.0}, {Name: "change_pct", Value: 25.0}}},
		}
		for rule, w := range samples {
			if diff := cmp.Diff(w, run.Results[indexOf(run, rule)].Sample); diff != "" {
				t.Errorf("%s sample (-want +got):\n%s", rule, diff)
			}
		}
		if got := run.Results[indexOf(run, "keys_table")].Sample; len(got) != 10 || got[0].Get("rows") != int64(2) {
			t.Errorf("keys_table sample = %v, want 10 keys of 2 rows", got)
		}
	})
}

// TestDistributionLeavesTheNullPartitionOut: rows whose day is NULL belong to no partition: they
// are neither a baseline partition nor judged (two of them, all status a, counted as one of the
// 7 days before and moved the baseline to 57%, failing an even day).
func TestDistributionLeavesTheNullPartitionOut(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		var rows [][]any
		for i := range 8 {
			d := day("2026-11-01").AddDate(0, 0, i)
			rows = append(rows, []any{d, "a"}, []any{d, "b"})
		}
		rows = append(rows, []any{nil, "a"}, []any{nil, "a"})
		createRows(t, e, "events", []tsql.Column{{Name: "d", Kind: tsql.TypeDate, Nullable: true}, {Name: "status", Kind: tsql.TypeString}}, rows)
		set, targets := loadSet(t, e, fstest.MapFS{"share.sql": {Data: []byte("-- kind: distribution\n-- table: events\n-- partition: d\n-- dimension: status\n-- baseline: 7\n-- threshold: 5%\n")}})
		run := NewRunner(targets, WithClock(runClock)).Run(ctx, set.Rules)
		if diff := cmp.Diff(map[string]outcome{"share": {StatusPass, 0, []string{}}}, outcomes(run)); diff != "" {
			t.Errorf("outcomes (-want +got):\n%s\n%s", diff, run.Results[0].Message)
		}
	})
}
