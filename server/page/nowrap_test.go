package page

import (
	"bytes"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

// TestShortTokensStayWhole: a state badge (its dot with it), a date and time and a duration are
// each inside an element of class nowrap, so a narrow cell never shows "●/done",
// "validation-/failed", "2026-12-03 11:/41" or "50/ms"; the long
// text beside them (a change's summary, a reason) is not, so it wraps instead of widening the page.
func TestShortTokensStayWhole(t *testing.T) {
	tests := []struct {
		name string
		page templ.Component
		want []string // tokens that must each be the whole text of a .nowrap element
		wrap string   // long text that must not be inside one
	}{
		{"versions_state_when_took", TableVersionsPage(TableVersions{Table: "orders",
			Versions: []VersionRow{{Name: "v2", State: "validation-failed"}},
			History:  []PublishRow{{ID: 1, Kind: "swap", State: "done", At: "2026-12-03 11:41:07 UTC", Duration: "50 ms", Summary: "orders v1 → v2, customer_ltv v1 → v2, daily_revenue v1 → v2", Reason: "the dedup fix, reviewed by finance"}}}),
			[]string{"validation-failed", "done", "2026-12-03 11:41:07 UTC", "50 ms"}, "orders v1 → v2, customer_ltv v1 → v2, daily_revenue v1 → v2"},
		{"audit_detail_dates", AuditPage(Audit{Rows: []AuditRow{{At: "2026-12-03 07:34", Outcome: "ok",
			Detail: "daily_revenue for 2026-09-01, 2026-09-02 into daily_revenue__v1"}}}),
			[]string{"2026-09-01", "2026-09-02"}, "daily_revenue for 2026-09-01, 2026-09-02 into daily_revenue__v1"},
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
			whole := map[string]bool{}
			doc.Find(".nowrap").Each(func(_ int, s *goquery.Selection) { whole[strings.TrimSpace(s.Text())] = true })
			for _, w := range tt.want {
				if !whole[w] {
					t.Errorf("%q is not whole inside a .nowrap element", w)
				}
			}
			doc.Find(".nowrap").Each(func(_ int, s *goquery.Selection) {
				if strings.Contains(s.Text(), tt.wrap) {
					t.Errorf("long text %q is inside a .nowrap element: it would widen its table", tt.wrap)
				}
			})
		})
	}
}

// TestAddressBreaksBeforeItsAt: an owner's address offers its cell a break before the @, which
// the browser takes before breaking it mid-word ("data-platform@exa" / "mple.com").
func TestAddressBreaksBeforeItsAt(t *testing.T) {
	var buf bytes.Buffer
	if err := RuleListPage(RuleList{Rules: []RuleRow{{Name: "r", Owner: "data-platform@example.com"}}}).Render(t.Context(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	cell := doc.Find("[data-testid=rule-owner] small")
	html, _ := cell.Html()
	if cell.Text() != "data-platform@example.com" || !strings.Contains(html, "data-platform<wbr/>@example.com") {
		t.Errorf("owner cell %q: want the address with a break before its @", html)
	}
}
