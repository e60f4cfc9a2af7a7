package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"trueup/ledger"
	"trueup/notices"
	"trueup/ops"
	"trueup/server"
	"trueup/views"
)

func TestAuditPages(t *testing.T) {
	l := testLedger(t)
	ctx := t.Context()
	for i := 1; i <= 120; i++ {
		actor := "ann"
		if i%2 == 0 {
			actor = "bob"
		}
		if _, err := l.Audit(ctx, ledger.Entry{Actor: actor, Action: "view.swap", Target: fmt.Sprintf("t%03d", i),
			Params: map[string]any{"n": i}, Outcome: ledger.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	ts := serve(t, server.Options{Audit: l})

	t.Run("newest_first_fifty_to_a_page", func(t *testing.T) {
		doc := getPage(t, ts.URL+"/audit", http.StatusOK)
		rows := doc.Find(`[data-testid="audit-row"]`)
		if rows.Length() != 50 || text(rows.First().Find(`[data-testid="audit-target"]`)) != "t120" {
			t.Errorf("%d rows, first %q", rows.Length(), text(rows.First()))
		}
		if doc.Find(`[data-testid="pager-prev"]`).Length() != 0 || doc.Find(`[data-testid="pager-next"]`).AttrOr("href", "") != "/audit?page=2" {
			t.Errorf("pager on page 1: %s", text(doc.Find(`[data-testid="pager"]`)))
		}
		doc = getPage(t, ts.URL+"/audit?page=3", http.StatusOK)
		rows = doc.Find(`[data-testid="audit-row"]`)
		if rows.Length() != 20 || text(rows.Last().Find(`[data-testid="audit-target"]`)) != "t001" {
			t.Errorf("page 3: %d rows, last %q", rows.Length(), text(rows.Last()))
		}
		if doc.Find(`[data-testid="pager-next"]`).Length() != 0 || doc.Find(`[data-testid="pager-prev"]`).AttrOr("href", "") != "/audit?page=2" {
			t.Errorf("pager on page 3: %s", text(doc.Find(`[data-testid="pager"]`)))
		}
		if n := doc.Find(`nav [aria-current="page"]`).Length(); n != 1 || text(doc.Find(`nav [aria-current="page"]`)) != "Audit" {
			t.Error("the navigation does not mark Audit")
		}
	})

	t.Run("filter_keeps_to_the_pages", func(t *testing.T) {
		doc := getPage(t, ts.URL+"/audit?actor=bob&page=2", http.StatusOK)
		rows := doc.Find(`[data-testid="audit-row"]`)
		if rows.Length() != 10 || text(rows.First().Find(`[data-testid="audit-actor"]`)) != "bob" {
			t.Errorf("bob page 2: %d rows", rows.Length())
		}
		if href := doc.Find(`[data-testid="pager-prev"]`).AttrOr("href", ""); href != "/audit?actor=bob" {
			t.Errorf("prev = %q", href)
		}
	})

	t.Run("api_limit_offset_and_link", func(t *testing.T) {
		resp, body := get(t, ts.URL+"/api/v1/audit?limit=30&offset=100")
		var got []struct {
			Target string         `json:"target"`
			Params map[string]any `json:"params"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil || len(got) != 20 || got[0].Target != "t020" {
			t.Errorf("window: %v %d %s", err, len(got), body[:min(200, len(body))])
		}
		if resp.Header.Get("Link") != "" {
			t.Errorf("Link on the last window: %q", resp.Header.Get("Link"))
		}
		resp, _ = get(t, ts.URL+"/api/v1/audit?limit=30")
		if link := resp.Header.Get("Link"); link != `</api/v1/audit?limit=30&offset=30>; rel="next"` {
			t.Errorf("Link = %q", link)
		}
	})

	t.Run("nonsense_is_a_400", func(t *testing.T) {
		for _, q := range []string{"page=0", "page=x", "page=-1", "page=99999999"} {
			getPage(t, ts.URL+"/audit?"+q, http.StatusBadRequest)
		}
		for _, q := range []string{"limit=0", "limit=1001", "offset=-1", "limit=1e3"} {
			if resp, _ := get(t, ts.URL+"/api/v1/audit?"+q); resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s: %d", q, resp.StatusCode)
			}
		}
	})
}

func TestNoticePagesArePaged(t *testing.T) {
	l := testLedger(t)
	svc := notices.New(l, notices.Options{})
	for i := 1; i <= 55; i++ {
		if _, err := svc.Draft(t.Context(), notices.Evidence{Backfill: fmt.Sprintf("b%02d", i), RunID: int64(i), Reason: "bug", Tables: []string{"orders"}}); err != nil {
			t.Fatal(err)
		}
	}
	ts := serve(t, server.Options{Notices: svc, NoticeOps: ops.NewNotices(svc)})
	doc := getPage(t, ts.URL+"/notices?table=orders", http.StatusOK)
	if n := doc.Find(`[data-testid="notice-row"]`).Length(); n != 50 {
		t.Errorf("page 1: %d rows", n)
	}
	if href := doc.Find(`[data-testid="pager-next"]`).AttrOr("href", ""); href != "/notices?page=2&table=orders" {
		t.Errorf("next = %q", href)
	}
	doc = getPage(t, ts.URL+"/notices?table=orders&page=2", http.StatusOK)
	rows := doc.Find(`[data-testid="notice-row"]`)
	if rows.Length() != 5 || rows.Last().AttrOr("data-id", "") != "1" {
		t.Errorf("page 2: %d rows, last %s", rows.Length(), rows.Last().AttrOr("data-id", ""))
	}
	resp, body := get(t, ts.URL+"/api/v1/notices?limit=10&offset=50")
	var got []map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil || len(got) != 5 || resp.Header.Get("Link") != "" {
		t.Errorf("api window: %v %d, Link %q", err, len(got), resp.Header.Get("Link"))
	}
	resp, _ = get(t, ts.URL+"/api/v1/notices?limit=10")
	if !strings.Contains(resp.Header.Get("Link"), "offset=10") {
		t.Errorf("Link = %q", resp.Header.Get("Link"))
	}
}

func TestRuleHistoryIsPaged(t *testing.T) {
	m := ruleMonitor(t)
	for range 25 {
		if _, err := m.RunNow(t.Context(), "positive", "ann"); err != nil {
			t.Fatal(err)
		}
	}
	ts := serve(t, server.Options{Rules: m})
	doc := getPage(t, ts.URL+"/rules/positive", http.StatusOK)
	if n := doc.Find(`[data-testid="history-row"]`).Length(); n != 20 {
		t.Errorf("page 1: %d rows", n)
	}
	if href := doc.Find(`[data-testid="pager-next"]`).AttrOr("href", ""); href != "/rules/positive?page=2" {
		t.Errorf("next = %q", href)
	}
	doc = getPage(t, ts.URL+"/rules/positive?page=2", http.StatusOK)
	if n := doc.Find(`[data-testid="history-row"]`).Length(); n != 5 {
		t.Errorf("page 2: %d rows", n)
	}
	_, body := get(t, ts.URL+"/api/v1/rules/positive?limit=10&offset=20")
	var d struct {
		History []map[string]any `json:"history"`
		Latest  map[string]any   `json:"latest"`
	}
	if err := json.Unmarshal([]byte(body), &d); err != nil || len(d.History) != 5 || d.Latest == nil {
		t.Errorf("api history window: %v %d", err, len(d.History))
	}
	getPage(t, ts.URL+"/rules/positive?page=100000", http.StatusBadRequest)
}

func TestBackfillListIsPaged(t *testing.T) {
	ts := serve(t, server.Options{Backfills: ops.NewBackfills(backfillService(t))})
	resp, body := get(t, ts.URL+"/api/v1/backfills?limit=1")
	var got []map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil || len(got) != 1 {
		t.Fatalf("limit=1: %v %s", err, body)
	}
	if resp.Header.Get("Link") == "" {
		t.Skip("the test project has one backfill: nothing to page")
	}
	getPage(t, ts.URL+"/backfills?page=1", http.StatusOK)
	getPage(t, ts.URL+"/backfills?page=nope", http.StatusBadRequest)
}

// TestHugePageIsA400: a page number whose offset does not fit an int is refused like any other
// page out of range, on every paged list (it overflowed into a negative offset: a panic on
// /notices and /rules, an engine error on /audit).
func TestHugePageIsA400(t *testing.T) {
	l := testLedger(t)
	ntc := notices.New(l, notices.Options{})
	ts := serve(t, server.Options{Audit: l, Notices: ntc, NoticeOps: ops.NewNotices(ntc), Rules: ruleMonitor(t)})
	for _, path := range []string{"/notices", "/rules", "/audit", "/rules/positive"} {
		for _, n := range []string{"184467440737095518", "9223372036854775807"} {
			t.Run(strings.TrimPrefix(path, "/")+"_"+n, func(t *testing.T) {
				doc := getPage(t, ts.URL+path+"?page="+n, http.StatusBadRequest)
				if got := text(doc.Find("main")); !strings.Contains(got, "?page=") && !strings.Contains(got, "pages reach") {
					t.Errorf("the page does not say what was wrong: %q", got)
				}
			})
		}
	}
}

// TestAuditAPIReachesItsMaximum: the documented largest window, limit=1000, gives 1000 entries
// and a Link to the rest (it gave 100 and no Link); above it is a 400 that names the range.
func TestAuditAPIReachesItsMaximum(t *testing.T) {
	l := testLedger(t)
	if _, err := l.DB().ExecContext(t.Context(), `INSERT INTO audit_log (at_time, actor, action, target, params, outcome)
		SELECT now(), 'ann', 'view.swap', 't' || range, '{}', 'ok' FROM range(1005)`); err != nil {
		t.Fatal(err)
	}
	ts := serve(t, server.Options{Audit: l})
	resp, body := get(t, ts.URL+"/api/v1/audit?limit=1000")
	var got []map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil || len(got) != 1000 {
		t.Errorf("limit=1000: %d entries, %v", len(got), err)
	}
	if link := resp.Header.Get("Link"); link != `</api/v1/audit?limit=1000&offset=1000>; rel="next"` {
		t.Errorf("Link = %q", link)
	}
	resp, body = get(t, ts.URL+"/api/v1/audit?limit=1000&offset=1000")
	if err := json.Unmarshal([]byte(body), &got); err != nil || len(got) != 5 || resp.Header.Get("Link") != "" {
		t.Errorf("the rest: %d entries, %v, Link %q", len(got), err, resp.Header.Get("Link"))
	}

	resp, body = get(t, ts.URL+"/api/v1/audit?limit=1001")
	var e struct{ Error string }
	if err := json.Unmarshal([]byte(body), &e); err != nil || resp.StatusCode != http.StatusBadRequest ||
		e.Error != `?limit="1001": want a whole number from 1 to 1000.` {
		t.Errorf("limit=1001: %d %s", resp.StatusCode, body)
	}
}

// TestTableHistoryIsPaged: a table's swaps and rollbacks page past the newest 20, on the page
// and in the API (both stopped at the newest 20: page 2 was empty).
func TestTableHistoryIsPaged(t *testing.T) {
	_, s := versionedWarehouse(t)
	ctx := t.Context()
	for i := range 25 { // 13 swaps and 12 rollbacks, #1 the first swap, #25 the last
		var err error
		if i%2 == 0 {
			_, err = s.Swap(ctx, views.SwapRequest{Table: "daily_revenue", To: "v2", Actor: "ann", Reason: fmt.Sprint("swap ", i+1)})
		} else {
			_, err = s.Rollback(ctx, views.RollbackRequest{Table: "daily_revenue", Actor: "ann", Reason: fmt.Sprint("rollback ", i+1)})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	ts := serve(t, server.Options{Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})
	ids := func(rows *goquery.Selection) []string {
		var out []string
		rows.Each(func(_ int, r *goquery.Selection) { out = append(out, r.AttrOr("data-id", "")) })
		return out
	}

	doc := getPage(t, ts.URL+"/tables/daily_revenue", http.StatusOK)
	if got := ids(doc.Find(`[data-testid="publish-row"]`)); len(got) != 20 || got[0] != "25" || got[19] != "6" {
		t.Errorf("page 1: %v", got)
	}
	next := doc.Find(`[data-testid="pager-next"]`).AttrOr("href", "")
	if next != "/tables/daily_revenue?page=2" {
		t.Errorf("next = %q", next)
	}
	doc = getPage(t, ts.URL+next, http.StatusOK)
	if got := ids(doc.Find(`[data-testid="publish-row"]`)); !slices.Equal(got, []string{"5", "4", "3", "2", "1"}) {
		t.Errorf("page 2: %v", got)
	}
	if doc.Find(`[data-testid="pager-next"]`).Length() != 0 {
		t.Error("a next link on the last page")
	}

	type listing struct {
		History []struct {
			ID int64 `json:"id"`
		} `json:"history"`
	}
	resp, body := get(t, ts.URL+"/api/v1/tables/daily_revenue")
	var l listing
	if err := json.Unmarshal([]byte(body), &l); err != nil || len(l.History) != 20 || l.History[0].ID != 25 {
		t.Errorf("api default window: %v %d", err, len(l.History))
	}
	if link := resp.Header.Get("Link"); link != `</api/v1/tables/daily_revenue?limit=20&offset=20>; rel="next"` {
		t.Errorf("Link = %q", link)
	}
	resp, body = get(t, ts.URL+"/api/v1/tables/daily_revenue?limit=20&offset=20")
	l = listing{}
	if err := json.Unmarshal([]byte(body), &l); err != nil || len(l.History) != 5 || l.History[4].ID != 1 || resp.Header.Get("Link") != "" {
		t.Errorf("api second window: %v %s, Link %q", err, body, resp.Header.Get("Link"))
	}
	_, body = get(t, ts.URL+"/api/v1/tables/daily_revenue?limit=1000")
	l = listing{}
	if err := json.Unmarshal([]byte(body), &l); err != nil || len(l.History) != 25 {
		t.Errorf("api limit=1000: %v %d", err, len(l.History))
	}
}
