package server_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"trueup/internal/mailtest"
	"trueup/ledger"
	"trueup/notices"
	"trueup/ops"
	"trueup/server"
)

// subscriptionSite is a server whose notices send email to a real SMTP receiver, with links
// to the server's own address.
type subscriptionSite struct {
	t    *testing.T
	base string
	mail *mailtest.Receiver
	svc  *notices.Service
	l    *ledger.Ledger
}

func newSubscriptionSite(t *testing.T, opt server.Options) *subscriptionSite {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	site := &subscriptionSite{t: t, base: "http://" + ln.Addr().String(), mail: mailtest.New(t)}
	now := time.Date(2026, 8, 3, 9, 0, 0, 0, time.UTC)
	site.l, err = ledger.Open(context.Background(), filepath.Join(t.TempDir(), "state.duckdb"), ledger.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.l.Close() })
	site.svc = notices.New(site.l, notices.Options{Channels: notices.Channels{
		PublicURL: site.base, Email: notices.Email{SMTP: site.mail.Addr, From: "trueup <trueup@example.com>"}}})
	opt.Notices, opt.NoticeOps, opt.Logger = site.svc, ops.NewNotices(site.svc), testLogger(t)
	srv := &http.Server{Handler: server.New(opt).Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return site
}

// notice drafts a notice about orders (run makes it a new one) and announces it.
func (s *subscriptionSite) announce(run int64) notices.Notice {
	s.t.Helper()
	ctx := context.Background()
	n, err := s.svc.Draft(ctx, notices.Evidence{Backfill: "fix_dedup_bug", RunID: run, Reason: "bug", Objective: "Orders from 10 July were dropped.",
		Tables: []string{"orders"}, Versions: map[string]int{"orders": 2}, PartitionColumn: "order_date", Partitions: []string{"2026-07-10"},
		Exposures: []notices.ExposureChange{{Exposure: "board_revenue", Title: "Board revenue by month",
			Rows: []notices.ExposureRow{{Label: "July 2026", Column: "revenue", Before: ptr(1920000), After: ptr(2010000)}}}}})
	if err != nil {
		s.t.Fatal(err)
	}
	if n, err = s.svc.Announce(ctx, n.ID, "alice"); err != nil {
		s.t.Fatal(err)
	}
	return n
}

func (s *subscriptionSite) deliver() {
	s.t.Helper()
	if _, err := s.svc.Outbox().Deliver(context.Background()); err != nil {
		s.t.Fatal(err)
	}
}

func (s *subscriptionSite) mailsTo(addr string) []mailtest.Message {
	var out []mailtest.Message
	for _, m := range s.mail.Messages() {
		if m.To == addr {
			out = append(out, m)
		}
	}
	return out
}

// postDoc posts a form from the browser's last page and parses the answer.
func postDoc(b *browser, path string, form url.Values) (int, *goquery.Document) {
	b.t.Helper()
	resp, body := b.post(path, form, true)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	return resp.StatusCode, doc
}

func getDoc(b *browser, path string) (int, *goquery.Document) {
	b.t.Helper()
	resp, doc := b.get(strings.TrimPrefix(path, b.base))
	return resp.StatusCode, doc
}

var (
	confirmURL = regexp.MustCompile(`http://[^\s]+/subscriptions/confirm/\S+`)
	leaveURL   = regexp.MustCompile(`^<(http://\S+/subscriptions/unsubscribe/\S+)>$`)
)

// The path through the pages, with a real SMTP receiver: subscribe from a notice's
// page → the confirmation mail → its link → an announced notice reaches the address once →
// the List-Unsubscribe header's one-click POST ends it → the next notice does not; forged and
// reused links are refused with a page saying so; the answer to a request is the same whether
// the address is new, known, or limited.
func TestSubscribeConfirmNoticeUnsubscribe(t *testing.T) {
	site := newSubscriptionSite(t, server.Options{})
	first := site.announce(1)
	const addr = "dana@example.com"

	b := newBrowser(t, site.base)
	status, doc := getDoc(b, "/notices/1")
	if status != http.StatusOK || doc.Find(`[data-testid=subscribe-form]`).Length() != 1 {
		t.Fatalf("notice page: %d, subscribe forms %d", status, doc.Find(`[data-testid=subscribe-form]`).Length())
	}
	if got := doc.Find(`[data-testid=subscribe-follow] option`).First().AttrOr("value", ""); got != "table:orders" {
		t.Errorf("the notice's form offers %q first, want table:orders", got)
	}
	// The report's name on the notice is a link that chooses it in the form.
	follow := doc.Find(`[data-testid=follow-reports] a`)
	if follow.Length() != 1 || follow.Text() != "Board revenue by month" {
		t.Fatalf("follow-reports links %q", follow.Text())
	}
	_, chosen := getDoc(b, "/notices/1"+follow.AttrOr("href", ""))
	if got := chosen.Find(`[data-testid=subscribe-follow] option[selected]`).AttrOr("value", ""); got != "exposure:board_revenue" {
		t.Errorf("after the report's link the form chooses %q", got)
	}
	answer := func(email string) string {
		t.Helper()
		status, doc := postDoc(b, "/subscriptions", url.Values{"email": {email}, "follow": {"table:orders"}})
		if status != http.StatusOK {
			t.Fatalf("subscribe %s: %d %s", email, status, doc.Text())
		}
		return doc.Find(`[data-testid=subscription-text]`).Text()
	}
	fresh := answer(addr)
	if !strings.Contains(fresh, "confirmation link is on its way") {
		t.Fatalf("answer %q", fresh)
	}
	if again, other := answer(addr), answer("someone.else@example.com"); again != fresh || other != fresh {
		t.Errorf("answers differ (enumeration): %q / %q / %q", fresh, again, other)
	}
	site.deliver()
	ms := site.mailsTo(addr)
	if len(ms) != 1 {
		t.Fatalf("%d messages to %s after two requests, want one confirmation", len(ms), addr)
	}
	link := confirmURL.FindString(ms[0].Text)
	if link == "" {
		t.Fatalf("no confirmation link in %q", ms[0].Text)
	}

	anon := newBrowser(t, site.base)
	status, doc = getDoc(anon, link)
	if status != http.StatusOK || doc.Find(`[data-testid=subscription-heading]`).Text() != "Subscribed" {
		t.Fatalf("confirm: %d %q", status, doc.Find("main").Text())
	}
	if _, ok := doc.Find(`[data-testid=subscription-manage-link]`).Attr("href"); !ok {
		t.Errorf("the confirmation page has no link to manage the subscription")
	}
	status, doc = getDoc(anon, link)
	if status != http.StatusConflict || !strings.Contains(doc.Find(`[data-testid=error-message]`).Text(), "used already") {
		t.Errorf("reused link: %d %q", status, doc.Find(`[data-testid=error-message]`).Text())
	}
	forged := link[:strings.LastIndex(link, ".")+1] + "AAAAAAAAAAAAAAAAAAAAAA"
	status, doc = getDoc(anon, forged)
	if status != http.StatusNotFound || !strings.Contains(doc.Find(`[data-testid=error-message]`).Text(), "not one trueup sent") {
		t.Errorf("forged link: %d %q", status, doc.Find(`[data-testid=error-message]`).Text())
	}

	// The operator sees the subscription on the notices page.
	_, doc = getDoc(b, "/notices")
	rows := doc.Find(`[data-testid=self-subscription-row]`)
	if rows.Length() != 2 || !strings.Contains(rows.Eq(0).Text(), addr) || rows.Eq(0).AttrOr("data-state", "") != "active" ||
		rows.Eq(1).AttrOr("data-state", "") != "pending" {
		t.Errorf("notices page lists %q, want %s active and the unconfirmed one pending", rows.Text(), addr)
	}

	if _, err := site.svc.Withdraw(context.Background(), first.ID, "alice", "redo"); err != nil {
		t.Fatal(err)
	}
	site.announce(2)
	site.deliver()
	site.deliver()
	ms = site.mailsTo(addr)
	if len(ms) != 2 || !strings.HasPrefix(ms[1].Header.Get("Subject"), "Upcoming data change") {
		t.Fatalf("messages to %s: %d, want the confirmation and one announcement", addr, len(ms))
	}
	lm := leaveURL.FindStringSubmatch(ms[1].Header.Get("List-Unsubscribe"))
	if lm == nil || ms[1].Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Fatalf("List-Unsubscribe %q, List-Unsubscribe-Post %q", ms[1].Header.Get("List-Unsubscribe"), ms[1].Header.Get("List-Unsubscribe-Post"))
	}
	// What a mail program does (RFC 8058): a POST of List-Unsubscribe=One-Click, no cookie.
	resp, err := http.Post(lm[1], "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("one-click unsubscribe: %s", resp.Status)
	}
	if _, err := site.svc.Withdraw(context.Background(), 2, "alice", "redo"); err != nil {
		t.Fatal(err)
	}
	before := len(site.mailsTo(addr))
	site.announce(3)
	site.deliver()
	for _, m := range site.mailsTo(addr)[before:] {
		if strings.HasPrefix(m.Header.Get("Subject"), "Upcoming data change") {
			t.Errorf("after the one-click unsubscribe, %s got %q", addr, m.Header.Get("Subject"))
		}
	}
}

// Bad input gets a clear answer and changes nothing: malformed addresses and follows on the
// form and the JSON API, unknown JSON fields; a flood from one client is answered 429.
func TestSubscribeBadInput(t *testing.T) {
	site := newSubscriptionSite(t, server.Options{})
	b := newBrowser(t, site.base)
	b.get("/notices")
	for _, form := range []url.Values{
		{"email": {"not an address"}, "follow": {"all"}},
		{"email": {"a@example.com\r\nBcc: x@example.com"}, "follow": {"all"}},
		{"email": {"a@example.com"}, "follow": {"table:orders\r\nX: y"}},
	} {
		status, doc := postDoc(b, "/subscriptions", form)
		if status != http.StatusUnprocessableEntity || doc.Find(`[data-testid=error-message]`).Text() == "" {
			t.Errorf("%v: %d %q", form, status, doc.Find(`[data-testid=error-message]`).Text())
		}
	}
	api := func(body string) (*http.Response, string) {
		t.Helper()
		return send(t, site.base+"/api/v1/subscriptions", body)
	}
	if resp, body := api(`{"email": "a@example.com", "follow": "all", "folow": "x"}`); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "folow") {
		t.Errorf("unknown field: %s %s", resp.Status, body)
	}
	if resp, body := api(`{"email": "a@b", "follow": "all"}`); resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "not an email address") {
		t.Errorf("bad address: %s %s", resp.Status, body)
	}
	if resp, body := api(`{"email": "api@example.com", "follow": "table:orders", "alerts": true}`); resp.StatusCode != http.StatusAccepted || !strings.Contains(body, "on its way") {
		t.Errorf("subscribe by API: %s %s", resp.Status, body)
	}
	subs, err := site.svc.SelfSubscriptions(context.Background())
	if err != nil || len(subs) != 1 || subs[0].Email != "api@example.com" || !subs[0].Alerts {
		t.Errorf("stored %+v, %v: want only api@example.com's", subs, err)
	}
	limited := false
	for i := range 12 {
		resp, _ := api(`{"email": "flood` + string(rune('a'+i)) + `@example.com", "follow": "all"}`)
		if resp.StatusCode == http.StatusTooManyRequests {
			limited = resp.Header.Get("Retry-After") != ""
			break
		}
	}
	if !limited {
		t.Errorf("a flood of requests from one client was never answered 429 with Retry-After")
	}
}

// The team sees who subscribed from the pages: operators the address, viewers it masked, the
// public nothing; an approver removes one, and nothing more is sent to it.
func TestSelfSubscriptionsForTheTeam(t *testing.T) {
	site := newSubscriptionSite(t, server.Options{Auth: testAuth(false)})
	if _, err := site.svc.Subscribe(context.Background(), notices.SubscribeRequest{Email: "carla@example.com", Follow: "all"}); err != nil {
		t.Fatal(err)
	}
	site.deliver()
	link := confirmURL.FindString(site.mailsTo("carla@example.com")[0].Text)
	if status, _ := getDoc(newBrowser(t, site.base), link); status != http.StatusOK {
		t.Fatalf("confirm: %d", status)
	}
	seen := func(who string) (string, int) {
		t.Helper()
		b := newBrowser(t, site.base)
		if who != "" {
			b.login(who)
		}
		_, doc := b.get("/notices")
		return doc.Find(`[data-testid=self-subscription-row] td`).Eq(1).Text(), doc.Find(`[data-testid=self-subscription-remove]`).Length()
	}
	for _, tt := range []struct{ who, to string }{{"", ""}, {"vera", "c***@example.com"}, {"otto", "carla@example.com"}, {"ann", "carla@example.com"}} {
		if to, _ := seen(tt.who); to != tt.to {
			t.Errorf("%q sees %q, want %q", tt.who, to, tt.to)
		}
	}
	if _, n := seen("otto"); n != 0 {
		t.Errorf("an operator is offered %d remove buttons", n)
	}
	// the public is not told who subscribes, nor that nobody does
	_, public := newBrowser(t, site.base).get("/notices")
	if got := strings.Join(strings.Fields(public.Find(`#subs-heading`).Parent().Text()), " "); strings.Contains(got, "Nobody subscribes") ||
		!strings.Contains(got, "Subscribe below to be told by email") {
		t.Errorf("the public reads %q about who hears of changes", got)
	}
	if resp, body := call(t, http.MethodPost, site.base+"/api/v1/subscriptions/1/remove", testTokens["otto"][0], ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("operator removes: %s %s", resp.Status, body)
	}
	ann := newBrowser(t, site.base)
	ann.login("ann")
	ann.get("/notices")
	if resp, body := ann.post("/subscriptions/1/remove", nil, true); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approver removes: %s %s", resp.Status, body)
	}
	if to, _ := seen("ann"); to != "" {
		t.Errorf("after the removal the page still lists %q", to)
	}
	site.announce(1)
	site.deliver()
	if n := len(site.mailsTo("carla@example.com")); n != 1 {
		t.Errorf("%d messages to a removed subscriber, want only the confirmation", n)
	}
}

// The manage link of a message shows what the address follows and changes it: follow one more
// thing (active at once: the link proves the address), stop one, stop all; a changed link is
// refused and changes nothing. The table's feed lists its announced notices.
func TestManageSubscriptionsAndTableFeed(t *testing.T) {
	site := newSubscriptionSite(t, server.Options{})
	ctx := context.Background()
	if _, err := site.svc.Subscribe(ctx, notices.SubscribeRequest{Email: "erin@example.com", Follow: "table:orders"}); err != nil {
		t.Fatal(err)
	}
	site.deliver()
	b := newBrowser(t, site.base)
	_, doc := getDoc(b, confirmURL.FindString(site.mailsTo("erin@example.com")[0].Text))
	manage := doc.Find(`[data-testid=subscription-manage-link]`).AttrOr("href", "")
	if manage == "" {
		t.Fatal("no manage link")
	}
	follows := func(doc *goquery.Document) []string {
		return doc.Find(`[data-testid=manage-follow] td:first-child`).Map(func(_ int, s *goquery.Selection) string { return s.Text() })
	}
	_, doc = getDoc(b, manage)
	if got := follows(doc); len(got) != 1 || got[0] != "table orders" {
		t.Fatalf("manage page lists %v", got)
	}
	status, doc := postDoc(b, manage, url.Values{"follow": {"exposure:board_revenue"}, "alerts": {"on"}})
	if got := follows(doc); status != http.StatusOK || len(got) != 2 || got[1] != "report board_revenue" {
		t.Fatalf("after following: %d %v", status, got)
	}
	if status, doc = postDoc(b, manage, url.Values{"follow": {"table:a b"}}); status != http.StatusUnprocessableEntity {
		t.Errorf("following a bad name: %d %s", status, doc.Text())
	}
	_, doc = getDoc(b, manage)
	id := doc.Find(`[data-testid=manage-follow]`).First().AttrOr("data-id", "")
	status, doc = postDoc(b, manage+"/end", url.Values{"id": {id}})
	if got := follows(doc); status != http.StatusOK || len(got) != 1 || got[0] != "report board_revenue" ||
		!strings.Contains(doc.Find(`[data-testid=manage-flash]`).Text(), "no more messages about table orders") {
		t.Fatalf("after stopping one: %d %v %q", status, got, doc.Find(`[data-testid=manage-flash]`).Text())
	}
	tampered := manage[:len(manage)-2] + "xx"
	if status, _ := postDoc(b, tampered+"/end", url.Values{}); status != http.StatusNotFound {
		t.Errorf("a changed link: %d, want 404", status)
	}
	if status, doc = postDoc(b, manage+"/end", url.Values{}); status != http.StatusOK || len(follows(doc)) != 0 {
		t.Errorf("after stopping all: %d %v", status, follows(doc))
	}

	site.announce(1)
	resp, body := get(t, site.base+"/tables/orders/notices.atom")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/atom+xml") ||
		!strings.Contains(body, "<title>trueup change notices: orders</title>") || !strings.Contains(body, site.base+"/tables/orders/notices.atom") ||
		strings.Count(body, "<entry>") != 1 {
		t.Errorf("table feed: %s %s", resp.Status, body)
	}
	if _, body := get(t, site.base+"/tables/daily_revenue/notices.atom"); strings.Contains(body, "<entry>") {
		t.Errorf("another table's feed lists the orders notice")
	}
}
