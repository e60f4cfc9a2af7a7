package notices_test

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"trueup/internal/golden"
	"trueup/notices"
)

func TestChart(t *testing.T) {
	ev := demoEvidence()
	ev.Diff[20].Verdict, ev.Diff[20].NewCount, ev.Diff[20].PctChange = notices.VerdictUnexpected, ev.Diff[20].OldCount-40, -1.9
	svg := notices.Chart(ev.Diff, "orders")
	golden.Check(t, "chart.golden.svg", svg)
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Errorf("chart is not well-formed XML: %v", err)
	}
	if got := strings.Count(svg, "<rect x=") - 3; got != 31 {
		t.Errorf("%d bars, want one per partition (31)", got)
	}
	if !strings.Contains(svg, `data-partition="2026-07-21" data-verdict="unexpected"`) {
		t.Error("the unexpected partition is not marked")
	}
	numbered := notices.Chart([]notices.PartitionDiff{{Table: "t", Partition: "10"}, {Table: "t", Partition: "2"}, {Table: "t", Partition: "-1"}}, "t")
	if a, b, c := strings.Index(numbered, `data-partition="-1"`), strings.Index(numbered, `data-partition="2"`), strings.Index(numbered, `data-partition="10"`); !(a >= 0 && a < b && b < c) {
		t.Errorf("integer partitions out of order (-1, 2, 10): at %d, %d, %d", a, b, c)
	}
	// An aggregate of one row a day: the rows do not move, the revenue does, and the bars are
	// the revenue's change (a chart of rows would be a flat line).
	daily := []notices.PartitionDiff{
		{Table: "daily_revenue", Partition: "2026-07-10", OldCount: 1, NewCount: 1, Measure: "sum(revenue)", OldTotal: 100, NewTotal: 105, Verdict: notices.VerdictExpected},
		{Table: "daily_revenue", Partition: "2026-07-11", OldCount: 1, NewCount: 1, Measure: "sum(revenue)", OldTotal: 200, NewTotal: 200, Verdict: notices.VerdictIdentical},
	}
	if got := notices.Charted(daily, "daily_revenue"); got != "sum(revenue)" {
		t.Errorf("an aggregate's chart shows %q, want sum(revenue)", got)
	}
	revenue := notices.Chart(daily, "daily_revenue")
	for _, want := range []string{`aria-label="Change in sum(revenue) per partition of daily_revenue"`, `2026-07-10: 100 → 105 sum(revenue) (+5.0%), expected`} {
		if !strings.Contains(revenue, want) {
			t.Errorf("the aggregate's chart lacks %q:\n%s", want, revenue)
		}
	}
	if got := notices.Charted(ev.Diff, "orders"); got != "rows" {
		t.Errorf("a table whose rows change charts %q, want rows", got)
	}
	if empty := notices.Chart(nil, "orders"); !strings.Contains(empty, "No partitions compared yet") {
		t.Errorf("empty chart: %s", empty)
	}
}

func TestFeed(t *testing.T) {
	at := time.Date(2026, 8, 3, 9, 0, 0, 0, time.UTC)
	announced := notices.Notice{ID: 2, State: notices.StateAnnounced, Title: "Correction to orders, 10–18 July 2026",
		Body: "# What happened\nOrders were dropped.\n", Tables: []string{"orders", "daily_revenue"}, CreatedAt: at, UpdatedAt: at.Add(time.Hour),
		Evidence:    notices.Evidence{Owner: "finance-data@example.com"},
		Transitions: []notices.Transition{{To: notices.StateDraft, At: at}, {From: notices.StateDraft, To: notices.StateAnnounced, At: at.Add(time.Hour), Actor: "alice"}}}
	draft := notices.Notice{ID: 3, State: notices.StateDraft, Title: "Not yet", CreatedAt: at, UpdatedAt: at.Add(2 * time.Hour)}
	out, err := notices.Feed([]notices.Notice{draft, announced}, "https://trueup.example.com", "/notices.atom?table=orders", "orders", at)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "feed.golden.atom", string(out))
	if strings.Contains(string(out), "Not yet") {
		t.Error("a draft is in the feed")
	}
	// An entry's numbers are tables a feed reader shows as tables, not tab-separated text.
	announced.Evidence = demoEvidence()
	out, err = notices.Feed([]notices.Notice{announced}, "https://trueup.example.com", "/notices.atom", "", at)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.Contains(s, `<content type="html">`) || !strings.Contains(s, "&lt;table") || strings.Contains(s, "\t") {
		t.Errorf("the entry's content is not HTML with tables:\n%s", s)
	}
	// A feed with nothing announced yet (a draft only) is as new as the answer, not from 1970.
	out, err = notices.Feed([]notices.Notice{draft}, "https://trueup.example.com", "/notices.atom", "", at.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.Contains(s, "<updated>2026-08-04T09:00:00Z</updated>") || strings.Contains(s, "<entry>") {
		t.Errorf("the empty feed's updated time is not when it was made:\n%s", s)
	}
}
