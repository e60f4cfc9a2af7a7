package notices_test

import (
	"sync"
	"time"

	"trueup/notices"
	tsql "trueup/sql"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 8, 3, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func f(v float64) *float64 { return &v }

// demoEvidence is what the demo's fix_dedup_bug backfill knows once its run is validated.
func demoEvidence() notices.Evidence {
	ev := notices.Evidence{
		Backfill:        "fix_dedup_bug",
		RunID:           3,
		Target:          "warehouse",
		Reason:          "bug",
		Objective:       "The dedup step dropped about 5% of orders from 2026-07-10 to 2026-07-18.",
		Tables:          []string{"orders", "daily_revenue", "customer_ltv", "region_summary"},
		Versions:        map[string]int{"orders": 2, "daily_revenue": 2, "customer_ltv": 2, "region_summary": 2},
		PartitionColumn: "order_date",
		From:            time.Date(2026, 7, 10, 0, 0, 0, 0, time.UTC),
		To:              time.Date(2026, 7, 19, 0, 0, 0, 0, time.UTC),
		PlannedSwap:     time.Date(2026, 8, 4, 9, 0, 0, 0, time.UTC),
		Owner:           "finance-data@example.com",
		Actor:           "alice",
		Rules: []notices.RuleCheck{
			{Rule: "matches_raw", Table: "daily_revenue", Passed: true},
			{Rule: "order_id_unique", Table: "orders", Passed: true},
			{Rule: "amount_not_null", Table: "orders", Passed: true},
		},
		Expectations: []notices.Expectation{
			{Text: "inside scope rows +0..6%, sum(amount) +0..6%", Met: true},
			{Text: "outside scope identical", Met: true},
		},
		Exposures: []notices.ExposureChange{
			{Exposure: "board_revenue", Title: "Board revenue by month", Audience: []string{"finance", "executive team"},
				Labels: []string{"month"}, Values: []string{"revenue"}, Unchanged: 2,
				Rows: []notices.ExposureRow{{Label: "July 2026", Column: "revenue", Before: f(1920412.5), After: f(2010871.25)}}},
			{Exposure: "region_revenue", Title: "Revenue by region", Audience: []string{"sales"},
				Labels: []string{"region"}, Values: []string{"revenue"},
				Rows: []notices.ExposureRow{
					{Label: "APAC", Column: "revenue", Before: f(1301200), After: f(1322911.4)},
					{Label: "EMEA", Column: "revenue", Before: f(1822000), After: f(1850102)},
					{Label: "LATAM", Column: "revenue", Before: f(402113), After: f(408900)},
					{Label: "NA", Column: "revenue", Before: f(2440100), After: f(2478300.5)},
				}},
		},
	}
	for d := 1; d <= 31; d++ {
		day := time.Date(2026, 7, d, 0, 0, 0, 0, time.UTC).Format("2006-01-02")
		pd := notices.PartitionDiff{Table: "orders", Partition: day, OldCount: 2100 + int64(d), NewCount: 2100 + int64(d), Verdict: notices.VerdictIdentical}
		if d >= 10 && d <= 18 {
			ev.Partitions = append(ev.Partitions, day)
			pd.NewCount = pd.OldCount + 80 + int64(d)
			pd.PctChange = float64(pd.NewCount-pd.OldCount) / float64(pd.OldCount) * 100
			pd.Verdict = notices.VerdictExpected
			pd.Measure, pd.OldTotal, pd.NewTotal = "sum(amount)", tsql.Number(float64(pd.OldCount)*87.25), tsql.Number(float64(pd.NewCount)*87.5)
		}
		ev.Diff = append(ev.Diff, pd)
	}
	ev.Compared = []notices.TableComparison{{Table: "orders", Partitions: 31, Identical: 22}}
	return ev
}
