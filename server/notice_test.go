package server_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"trueup/ledger"
	"trueup/notices"
	"trueup/ops"
	"trueup/server"
)

// noticeServer serves a notice service over a fresh ledger with one drafted notice, and a
// subscription so that announcing it has a recipient (whose webhook is never reached here).
func noticeServer(t *testing.T) (*notices.Service, string) {
	t.Helper()
	svc := noticeService(t)
	ts := serve(t, server.Options{Notices: svc, NoticeOps: ops.NewNotices(svc)})
	return svc, ts.URL
}

// noticeService is noticeServer's notice service, for a test that serves it with other options.
func noticeService(t *testing.T) *notices.Service {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 8, 3, 9, 0, 0, 0, time.UTC)
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "state.duckdb"), ledger.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	cfg := notices.Channels{
		Webhooks:      map[string]notices.Webhook{"finance": {URL: "http://127.0.0.1:1/hook", Secret: "s"}},
		Subscriptions: []notices.Subscription{{Table: "daily_revenue", Webhook: "finance"}},
	}
	svc := notices.New(l, notices.Options{Channels: cfg})
	ev := notices.Evidence{
		Backfill: "fix_dedup_bug", RunID: 1, Reason: "bug", Objective: "Orders from 10 to 18 July were dropped.",
		Tables: []string{"orders", "daily_revenue"}, Versions: map[string]int{"orders": 2, "daily_revenue": 2},
		PartitionColumn: "order_date", Partitions: []string{"2026-07-10", "2026-07-11"},
		From: time.Date(2026, 7, 10, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 7, 12, 0, 0, 0, 0, time.UTC),
		Owner: "finance-data@example.com",
		Diff: []notices.PartitionDiff{
			{Table: "orders", Partition: "2026-07-09", OldCount: 100, NewCount: 100, Verdict: notices.VerdictIdentical},
			{Table: "orders", Partition: "2026-07-10", OldCount: 100, NewCount: 105, PctChange: 5, Verdict: notices.VerdictExpected,
				Measure: "sum(amount)", OldTotal: 1000, NewTotal: 1060},
			{Table: "orders", Partition: "2026-07-11", OldCount: 0, NewCount: 104, Verdict: notices.VerdictExpected,
				Measure: "sum(amount)", NewTotal: 990.5},
		},
		Compared: []notices.TableComparison{{Table: "orders", Partitions: 3, Identical: 1}},
		Exposures: []notices.ExposureChange{{Exposure: "board_revenue", Title: "Board revenue by month",
			Rows: []notices.ExposureRow{{Label: "July 2026", Column: "revenue", Before: ptr(1920000), After: ptr(2010000)}}}},
	}
	if _, err := svc.Draft(ctx, ev); err != nil {
		t.Fatal(err)
	}
	other := notices.Evidence{Backfill: "late_sessions", RunID: 2, Reason: "late-data", Tables: []string{"web_sessions"}}
	if _, err := svc.Draft(ctx, other); err != nil {
		t.Fatal(err)
	}
	return svc
}

func ptr(f float64) *float64 { return &f }

func postForm(t *testing.T, u string, form url.Values) *http.Response {
	t.Helper()
	client := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestNoticePages(t *testing.T) {
	svc, base := noticeServer(t)

	t.Run("index_filters_by_table_and_state", func(t *testing.T) {
		doc := getPage(t, base+"/notices", http.StatusOK)
		if n := doc.Find(`[data-testid="notice-row"]`).Length(); n != 2 {
			t.Errorf("%d rows, want 2", n)
		}
		doc = getPage(t, base+"/notices?table=daily_revenue&state=draft", http.StatusOK)
		rows := doc.Find(`[data-testid="notice-row"]`)
		if rows.Length() != 1 || rows.AttrOr("data-id", "") != "1" {
			t.Errorf("filtered rows: %s", text(rows))
		}
		if href := doc.Find(`[data-testid="feed-link"]`).AttrOr("href", ""); href != "/notices.atom?table=daily_revenue" {
			t.Errorf("feed link %q", href)
		}
		if got := text(doc.Find(`[data-testid="subscription-row"]`)); got != "table daily_revenuefinance (webhook)" {
			t.Errorf("subscriptions %q", got)
		}
		getPage(t, base+"/notices?state=nonsense", http.StatusBadRequest)
	})

	t.Run("notice_page_puts_plain_language_first", func(t *testing.T) {
		doc := getPage(t, base+"/notices/1", http.StatusOK)
		if got := text(doc.Find(`[data-testid="notice-title"]`)); got != "Correction to orders and daily_revenue, 10–11 July 2026" {
			t.Errorf("title %q", got)
		}
		body := doc.Find(`[data-testid="notice-body"]`)
		if h := text(body.Find("h2").First()); h != "What happened" {
			t.Errorf("first heading %q", h)
		}
		html, _ := doc.Html()
		if strings.Index(html, `data-testid="notice-body"`) > strings.Index(html, `data-testid="notice-reports"`) {
			t.Error("numbers come before the plain-language text")
		}
		var cells []string
		doc.Find(`[data-testid="report-row"] td`).Each(func(_ int, c *goquery.Selection) { cells = append(cells, text(c)) })
		if got := strings.Join(cells, " "); got != "Board revenue by month July 2026 revenue 1,920,000 2,010,000 +4.7%" {
			t.Errorf("report row %q", got)
		}
		var rows []string
		doc.Find(`[data-testid="partition-row"]`).Each(func(_ int, r *goquery.Selection) {
			var cells []string
			r.Find("td").Each(func(_ int, c *goquery.Selection) { cells = append(cells, text(c)) })
			rows = append(rows, strings.Join(cells, " "))
		})
		if got := strings.Join(rows, " | "); got != "2026-07-10 100 105 +5.0% 1,000 1,060 +6.0% expected | "+
			"2026-07-11 0 104 new 0 990.50 new expected" {
			t.Errorf("changed partitions: %q", got)
		}
		if got := text(doc.Find(`[data-testid="partition-table"]`)); got != "orders — totals of sum(amount)" {
			t.Errorf("the changed partitions' table heading %q", got)
		}
		if got := text(doc.Find(`#partitions-heading`)); got != "Rows and totals per order_date, old and new" {
			t.Errorf("partitions heading %q", got)
		}
		if got := text(doc.Find(`[data-testid="notice-left-out"]`)); got != "1 partition is identical in the old and the new data and is not listed." {
			t.Errorf("left out %q", got)
		}
		if n := doc.Find(`[data-testid="notice-chart"] svg rect[data-partition]`).Length(); n != 3 {
			t.Errorf("chart has %d bars, want 3", n)
		}
		if doc.Find(`form[data-testid="announce"]`).Length() != 1 || doc.Find(`form[data-testid="edit"]`).Length() != 1 {
			t.Error("a draft lacks the announce button or the edit form")
		}
	})

	t.Run("edit_keeps_revisions", func(t *testing.T) {
		resp := postForm(t, base+"/notices/1/edit", url.Values{"title": {"July revenue is being corrected"}, "body": {"# What happened\nWe lost orders.\n"}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("edit: %d", resp.StatusCode)
		}
		doc := getPage(t, base+resp.Header.Get("Location"), http.StatusOK)
		if got := text(doc.Find(`[data-testid="notice-title"]`)); got != "July revenue is being corrected" {
			t.Errorf("title after edit %q", got)
		}
		if got := text(doc.Find(`[data-testid="notice-revisions"] summary`)); got != "2 revisions of the text" {
			t.Errorf("revisions %q", got)
		}
		// an empty title is a value the notice cannot take (invalid: 422), not a malformed request;
		// the page comes back with what was typed, and why it was not saved
		resp, err := http.PostForm(base+"/notices/1/edit", url.Values{"title": {"   "}, "body": {"A paragraph typed with care."}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("empty title: %d", resp.StatusCode)
		}
		refused, err := goquery.NewDocumentFromReader(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := refused.Find(`form[data-testid="edit"] textarea[name="body"]`).Text(); got != "A paragraph typed with care." {
			t.Errorf("the refused edit's form holds %q, want the text typed", got)
		}
		if got := text(refused.Find(`[data-testid="edit-error"]`)); !strings.HasPrefix(got, "Not saved: Notice 1: the title and the text must not be empty") {
			t.Errorf("the refused edit says %q", got)
		}
		if refused.Find(`[data-testid="notice-edit-refused"]`).Length() != 1 {
			t.Error("the refused edit is not said at the top of the page")
		}
		if got := text(refused.Find(`[data-testid="notice-title"]`)); got != "July revenue is being corrected" {
			t.Errorf("the refused edit's heading %q, want the notice's title as saved", got)
		}
	})

	t.Run("plan_form_sets_the_planned_time", func(t *testing.T) {
		resp := postForm(t, base+"/notices/1/edit", url.Values{"planned_swap": {"2026-08-04T09:00"}})
		if resp.StatusCode != http.StatusSeeOther || !strings.HasSuffix(resp.Header.Get("Location"), "?done=plan") {
			t.Fatalf("plan: %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		doc := getPage(t, base+resp.Header.Get("Location"), http.StatusOK)
		if got := text(doc.Find(`[data-testid="notice-state"]`)); got != "draft, not sent yet. The new data is planned to go live on Tuesday 4 August 2026 at 09:00 UTC." {
			t.Errorf("state %q", got)
		}
		if got := doc.Find(`form[data-testid="plan"] input[name="planned_swap"]`).AttrOr("value", ""); got != "2026-08-04T09:00" {
			t.Errorf("plan field %q", got)
		}
		if got := text(doc.Find(`[data-testid="notice-message"]`)); got != "Saved the planned time." {
			t.Errorf("message %q", got)
		}
		// a time in the past parses: it is a value the notice cannot take (invalid: 422)
		if resp := postForm(t, base+"/notices/1/edit", url.Values{"planned_swap": {"2026-08-01T09:00"}}); resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("a planned time in the past: %d", resp.StatusCode)
		}
	})

	t.Run("announce_then_announce_again", func(t *testing.T) {
		if resp, _ := post(t, base+"/notices/1/announce"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("announce: %d", resp.StatusCode)
		}
		doc := getPage(t, base+"/notices/1?done=announce", http.StatusOK)
		if got := doc.Find(`[data-testid="notice"]`).AttrOr("data-state", ""); got != "announced" {
			t.Errorf("state %q", got)
		}
		if got := text(doc.Find(`[data-testid="notice-recipients"]`)); got != "finance (webhook)" {
			t.Errorf("recipients %q", got)
		}
		if doc.Find(`form[data-testid="announce"]`).Length() != 0 || doc.Find(`form[data-testid="edit"]`).Length() != 0 {
			t.Error("an announced notice still offers announce or edit")
		}
		resp, body := post(t, base+"/notices/1/announce")
		if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "already announced") {
			t.Errorf("second announce: %d", resp.StatusCode)
		}
		ds, _ := svc.Deliveries(context.Background(), 1)
		if len(ds) != 1 {
			t.Errorf("%d deliveries, want 1", len(ds))
		}
	})

	t.Run("acknowledge_through_the_link", func(t *testing.T) {
		n, _ := svc.Get(context.Background(), 1)
		link := base + "/notices/1/ack/" + n.Recipients[0].Token
		doc := getPage(t, link, http.StatusOK)
		if doc.Find(`form[data-testid="ack-form"]`).Length() != 1 {
			t.Fatal("the ack link does not offer the button")
		}
		if n, _ := svc.Get(context.Background(), 1); n.Recipients[0].Acked() {
			t.Error("opening the link acknowledged (mail scanners open links)")
		}
		resp, _ := post(t, link)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("ack: %d", resp.StatusCode)
		}
		if n, _ := svc.Get(context.Background(), 1); !n.Recipients[0].Acked() {
			t.Error("not acknowledged")
		}
		doc = getPage(t, base+"/notices/1", http.StatusOK)
		if got := text(doc.Find(`[data-testid="notice-acks"]`)); got != "Sent to 1; 1 acknowledged." {
			t.Errorf("acks %q", got)
		}
		getPage(t, base+"/notices/1/ack/wrong", http.StatusNotFound)
	})

	t.Run("feed_has_announced_notices_only", func(t *testing.T) {
		resp, body := get(t, base+"/notices.atom")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/atom+xml") {
			t.Fatalf("feed: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var feed struct {
			ID      string `xml:"id"`
			Entries []struct {
				Title string `xml:"title"`
				ID    string `xml:"id"`
				Link  struct {
					Href string `xml:"href,attr"`
				} `xml:"link"`
			} `xml:"entry"`
		}
		if err := xml.Unmarshal([]byte(body), &feed); err != nil {
			t.Fatal(err)
		}
		if len(feed.Entries) != 1 || feed.Entries[0].Title != "July revenue is being corrected (announced)" {
			t.Fatalf("entries %+v", feed.Entries)
		}
		// No public_url is configured: the ids and links are absolute on the address the feed
		// was asked for (a feed reader cannot resolve /notices/1, and ids must be IRIs).
		if e := feed.Entries[0]; feed.ID != base+"/notices.atom" || e.ID != base+"/notices/1" || e.Link.Href != base+"/notices/1" {
			t.Errorf("feed id %q, entry id %q, link %q: want them under %s", feed.ID, e.ID, e.Link.Href, base)
		}
		_, body = get(t, base+"/notices.atom?table=web_sessions")
		if strings.Contains(body, "<entry>") {
			t.Error("the web_sessions feed has an entry (its notice is a draft)")
		}
	})

	t.Run("json_api", func(t *testing.T) {
		resp, body := get(t, base+"/api/v1/notices?table=daily_revenue")
		var list []map[string]any
		if err := json.Unmarshal([]byte(body), &list); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("list: %d %v", resp.StatusCode, err)
		}
		if len(list) != 1 || list[0]["id"] != 1.0 || list[0]["state"] != "announced" {
			t.Errorf("list %v", list)
		}
		for _, k := range []string{"id", "state", "tables", "partitions", "title", "body"} {
			if _, ok := list[0][k]; !ok {
				t.Errorf("notice JSON lacks %s", k)
			}
		}
		_, body = get(t, base+"/api/v1/notices/2")
		var one notices.JSON
		json.Unmarshal([]byte(body), &one)
		if one.ID != 2 || one.State != notices.StateDraft || len(one.Transitions) != 1 {
			t.Errorf("show %+v", one)
		}
		resp, body = get(t, base+"/api/v1/notices/99")
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "error") {
			t.Errorf("missing notice: %d %s", resp.StatusCode, body)
		}
		client := http.Client{}
		for _, tc := range []struct {
			body   string
			status int
			want   string
		}{
			{`{"planned_swap":"next week"}`, http.StatusBadRequest, "want a time such as"},
			{`{"planned_swap":"2026-08-04T11:30:00+02:00"}`, http.StatusOK, "Status: draft, not sent yet. The new data is planned to go live on Tuesday 4 August 2026 at 09:30 UTC."},
		} {
			r, err := client.Post(base+"/api/v1/notices/2/edit", "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if r.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("edit %s: %d %s, want %d and %q", tc.body, r.StatusCode, b, tc.status, tc.want)
			}
		}
		r, err := client.Post(base+"/api/v1/notices/2/withdraw", "application/json", strings.NewReader(`{"reason":"not needed"}`))
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(r.Body).Decode(&one)
		r.Body.Close()
		if one.State != notices.StateWithdrawn || one.Transitions[1].Reason != "not needed" {
			t.Errorf("withdraw via API: %+v", one)
		}
	})
}

func TestNoticesWithoutService(t *testing.T) {
	ts := serve(t, server.Options{})
	getPage(t, ts.URL+"/notices", http.StatusNotFound)
}

// TestNoticeFeedLinksFollowTheAskedAddress: without a public_url the feed's ids and links are
// rooted at the address the request asked for, so reads of it are shared only with requests for
// the same scheme and Host: one request with Host: evil.example must not hand its links to the
// readers who come after it while the answer is kept (ReadCache).
func TestNoticeFeedLinksFollowTheAskedAddress(t *testing.T) {
	svc := noticeService(t)
	if _, err := svc.Announce(context.Background(), 1, "alice"); err != nil {
		t.Fatal(err)
	}
	clock := &testClock{now: time.Date(2026, 8, 3, 9, 0, 0, 0, time.UTC)}
	// with tokens configured the server answers any Host, as it does behind a proxy
	ts := serve(t, server.Options{Notices: svc, NoticeOps: ops.NewNotices(svc), Auth: testAuth(false), ReadCache: time.Minute, Now: clock.Now})
	host := strings.TrimPrefix(ts.URL, "http://")

	link := func(t *testing.T, host string, header ...string) string {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/notices.atom", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var feed struct {
			Entries []struct {
				Link struct {
					Href string `xml:"href,attr"`
				} `xml:"link"`
			} `xml:"entry"`
		}
		if err := xml.NewDecoder(resp.Body).Decode(&feed); err != nil || resp.StatusCode != http.StatusOK || len(feed.Entries) != 1 {
			t.Fatalf("feed for Host %s: %d %v %+v", host, resp.StatusCode, err, feed.Entries)
		}
		return feed.Entries[0].Link.Href
	}

	for _, tc := range []struct {
		name   string
		host   string
		header []string
		want   string
	}{
		{"attacker_host_first", "evil.example", nil, "http://evil.example/notices/1"},
		{"real_host_after_it", host, nil, "http://" + host + "/notices/1"},
		{"forwarded_https", host, []string{"X-Forwarded-Proto", "https"}, "https://" + host + "/notices/1"},
		{"real_host_again", host, nil, "http://" + host + "/notices/1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := link(t, tc.host, tc.header...); got != tc.want {
				t.Errorf("entry link %q, want %q", got, tc.want)
			}
		})
	}
}

// TestEmptyFeedIsDatedNow: before anything is announced the feed lists no entry, and its
// updated time is when it was asked for, not 1970 (which a feed reader shows as a broken feed).
func TestEmptyFeedIsDatedNow(t *testing.T) {
	svc := noticeService(t) // two drafts, which a feed never lists
	now := time.Date(2026, 8, 5, 12, 30, 0, 0, time.UTC)
	ts := serve(t, server.Options{Notices: svc, NoticeOps: ops.NewNotices(svc), Now: func() time.Time { return now }})
	for _, p := range []string{"/notices.atom", "/tables/orders/notices.atom"} {
		resp, body := get(t, ts.URL+p)
		var feed struct {
			Updated string     `xml:"updated"`
			Entries []struct{} `xml:"entry"`
		}
		if err := xml.Unmarshal([]byte(body), &feed); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", p, resp.StatusCode, err)
		}
		if feed.Updated != "2026-08-05T12:30:00Z" || len(feed.Entries) != 0 {
			t.Errorf("GET %s: updated %q with %d entries, want 2026-08-05T12:30:00Z and none", p, feed.Updated, len(feed.Entries))
		}
	}
}
