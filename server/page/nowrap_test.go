package page

import (
	"bytes"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

// TestTokensStayWhole: dates, addresses, durations and verdicts are each inside an element of
// class nowrap, so a narrow cell never shows "2026-07-/11", "data-platform@exa/mple.com",
// "50/ms" or "● / expected".
func TestTokensStayWhole(t *testing.T) {
	tests := []struct {
		name string
		page templ.Component
		want string // one token that must be whole inside a .nowrap element
	}{
		{"dashboard_card_dates", workList("Failing rules", "work-rules",
			[]WorkItem{{Name: "matches_raw", Detail: "9 failing partitions: 2026-07-10, 2026-07-11, 2026-07-12, …"}}), "2026-07-11"},
		{"audit_detail_dates", AuditPage(Audit{Rows: []AuditRow{{At: "2026-12-03 07:34", Outcome: "ok",
			Detail: "daily_revenue for 2026-09-01, 2026-09-02 into daily_revenue__v1"}}}), "2026-09-02"},
		{"rule_owner_address", RuleListPage(RuleList{Rules: []RuleRow{{Name: "r", Owner: "data-platform@example.com"}}}), "data-platform@example.com"},
		{"swap_duration", TableVersionsPage(TableVersions{Table: "orders", History: []PublishRow{{ID: 1, Kind: "swap", Duration: "50 ms"}}}), "50 ms"},
		{"diff_verdict", DiffPage(Diff{ID: 1, Partitions: []DiffPartitionRow{{Partition: "2026-07-10", Verdict: "expected"}}}), "expected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.page.Render(t.Context(), &buf); err != nil {
				t.Fatal(err)
			}
			doc, err := goquery.NewDocumentFromReader(&buf)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			doc.Find(".nowrap").Each(func(_ int, s *goquery.Selection) { found = found || s.Text() == tt.want })
			if !found {
				t.Errorf("%q is not whole inside a .nowrap element", tt.want)
			}
		})
	}
}
