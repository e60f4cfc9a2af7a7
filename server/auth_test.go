package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"trueup/config"
	"trueup/ledger"
	"trueup/notices"
	"trueup/ops"
	"trueup/server"
)

// Tokens of the auth tests, by name: the plain token and its role.
var testTokens = map[string][2]string{
	"ann":  {"ann-token-0123456789", config.RoleApprover},
	"bob":  {"bob-token-0123456789", config.RoleApprover},
	"otto": {"otto-token-0123456789", config.RoleOperator},
	"vera": {"vera-token-0123456789", config.RoleViewer},
}

func testAuth(fourEyes bool) config.Auth {
	a := config.Auth{FourEyes: fourEyes}
	for _, name := range []string{"ann", "bob", "otto", "vera"} {
		a.Tokens = append(a.Tokens, config.Token{Name: name, Role: testTokens[name][1], SHA256: config.HashToken(testTokens[name][0])})
	}
	return a
}

// testClock is a clock a test moves by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func testLedger(t *testing.T) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(t.Context(), filepath.Join(t.TempDir(), "state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// browser is a person at a browser: it keeps cookies, sends what browsers send with a form
// (Origin, Sec-Fetch-Site) and does not follow redirects, so tests see them.
type browser struct {
	t      *testing.T
	base   string
	client *http.Client
	csrf   string // from the last page loaded
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(req *http.Request) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// get loads a page and remembers the CSRF token its forms carry.
func (b *browser) get(path string) (*http.Response, *goquery.Document) {
	b.t.Helper()
	req, _ := http.NewRequestWithContext(b.t.Context(), http.MethodGet, b.base+path, nil)
	req.Header.Set("Sec-Fetch-Site", "none")
	resp, body := b.do(req)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	if v, ok := doc.Find(`input[name="csrf"]`).First().Attr("value"); ok {
		b.csrf = v
	} else if h, ok := doc.Find("body").Attr("hx-headers"); ok {
		var hs map[string]string
		if err := json.Unmarshal([]byte(h), &hs); err != nil {
			b.t.Fatalf("hx-headers %q: %v", h, err)
		}
		b.csrf = hs["X-CSRF-Token"]
	}
	return resp, doc
}

// post submits a form from one of our pages; withCSRF false leaves the token out.
func (b *browser) post(path string, form url.Values, withCSRF bool) (*http.Response, string) {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if withCSRF {
		form.Set("csrf", b.csrf)
	}
	req, _ := http.NewRequestWithContext(b.t.Context(), http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}

// login logs in with name's token through the login page.
func (b *browser) login(name string) {
	b.t.Helper()
	b.get("/login")
	resp, body := b.post("/login", url.Values{"token": {testTokens[name][0]}}, true)
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("login as %s: %d %s", name, resp.StatusCode, body)
	}
}

// call sends an API request, with a bearer token when token is not "".
func call(t *testing.T, method, u, token string, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func cookieNamed(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestLogin(t *testing.T) {
	l := testLedger(t)
	ts := serve(t, server.Options{Auth: testAuth(false), Audit: l})

	t.Run("anonymous_page_goes_to_login", func(t *testing.T) {
		b := newBrowser(t, ts.URL)
		resp, _ := b.get("/audit?actor=ann")
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?next=%2Faudit%3Factor%3Dann" {
			t.Errorf("GET /audit: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})

	t.Run("login_page_sets_a_visitor_cookie_and_a_form_token", func(t *testing.T) {
		b := newBrowser(t, ts.URL)
		resp, doc := b.get("/login?next=/audit")
		ck := cookieNamed(resp, "trueup_visitor")
		if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Secure {
			t.Errorf("visitor cookie = %+v", ck)
		}
		if b.csrf == "" || doc.Find(`[data-testid="login-form"] input[name="token"][type="password"]`).Length() != 1 {
			t.Error("no login form with a CSRF token and a password field")
		}
		if got := doc.Find(`input[name="next"]`).AttrOr("value", ""); got != "/audit" {
			t.Errorf("next = %q", got)
		}
		if doc.Find(`[data-testid="login-link"]`).Length() != 1 {
			t.Error("no log-in link in the header")
		}
	})

	t.Run("login_without_csrf_is_refused", func(t *testing.T) {
		b := newBrowser(t, ts.URL)
		b.get("/login")
		resp, _ := b.post("/login", url.Values{"token": {testTokens["ann"][0]}}, false)
		if resp.StatusCode != http.StatusForbidden || cookieNamed(resp, "trueup_session") != nil {
			t.Errorf("status %d, session cookie %v", resp.StatusCode, cookieNamed(resp, "trueup_session"))
		}
	})

	t.Run("wrong_token_is_refused", func(t *testing.T) {
		b := newBrowser(t, ts.URL)
		b.get("/login")
		resp, body := b.post("/login", url.Values{"token": {"guess"}}, true)
		doc := parse(t, body)
		if resp.StatusCode != http.StatusUnauthorized || text(doc.Find(`[data-testid="login-error"]`)) != "That token is not valid." {
			t.Errorf("status %d: %s", resp.StatusCode, text(doc.Find("main")))
		}
	})

	t.Run("good_token_starts_a_session", func(t *testing.T) {
		b := newBrowser(t, ts.URL)
		b.get("/login?next=/audit")
		resp, body := b.post("/login", url.Values{"token": {testTokens["ann"][0]}, "next": {"/audit"}}, true)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/audit" {
			t.Fatalf("status %d to %q: %s", resp.StatusCode, resp.Header.Get("Location"), body)
		}
		ck := cookieNamed(resp, "trueup_session")
		if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Secure || ck.MaxAge <= 0 {
			t.Errorf("session cookie = %+v", ck)
		}
		resp, doc := b.get("/audit")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /audit: %d", resp.StatusCode)
		}
		if got := text(doc.Find(`[data-testid="visitor-name"]`)); got != "ann (approver)" {
			t.Errorf("header names %q", got)
		}
		if h := doc.Find("body").AttrOr("hx-headers", ""); !strings.Contains(h, `"X-CSRF-Token":"`+b.csrf+`"`) || b.csrf == "" {
			t.Errorf("hx-headers = %q, csrf %q", h, b.csrf)
		}
		if got := text(doc.Find(`[data-testid="audit-row"]`).First()); !strings.Contains(got, "ann") || !strings.Contains(got, "auth.login") {
			t.Errorf("audit log's newest entry = %q", got)
		}

		// Logging out ends the session on the server, not only in this browser.
		stolen := *ck
		b.get("/audit")
		if resp, _ := b.post("/logout", nil, true); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("logout: %d", resp.StatusCode)
		}
		other := newBrowser(t, ts.URL)
		u, _ := url.Parse(ts.URL)
		other.client.Jar.SetCookies(u, []*http.Cookie{&stolen})
		if resp, _ := other.get("/audit"); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("the old session cookie still works after logout: %d", resp.StatusCode)
		}
	})

	t.Run("secure_cookie_behind_tls", func(t *testing.T) {
		b := newBrowser(t, ts.URL)
		b.get("/login")
		form := url.Values{"token": {testTokens["vera"][0]}, "csrf": {b.csrf}}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-Proto", "https")
		resp, _ := b.do(req)
		if ck := cookieNamed(resp, "trueup_session"); ck == nil || !ck.Secure {
			t.Errorf("session cookie behind https = %+v", ck)
		}
	})

	t.Run("next_never_leaves_the_site", func(t *testing.T) {
		b := newBrowser(t, ts.URL)
		b.get("/login")
		resp, _ := b.post("/login", url.Values{"token": {testTokens["vera"][0]}, "next": {"//evil.example/"}}, true)
		if loc := resp.Header.Get("Location"); loc != "/" {
			t.Errorf("Location = %q", loc)
		}
	})

	t.Run("viewer_may_read_but_not_write", func(t *testing.T) {
		b := newBrowser(t, ts.URL)
		b.login("vera")
		if resp, _ := b.get("/audit"); resp.StatusCode != http.StatusOK {
			t.Errorf("GET /audit: %d", resp.StatusCode)
		}
		resp, body := b.post("/notices/1/announce", nil, true)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "This needs the approver role; vera is a viewer.") {
			t.Errorf("viewer announce: %d %s", resp.StatusCode, text(parse(t, body).Find("main")))
		}
	})
}

// TestLoginRateLimit: five wrong tokens from an address in a minute and the next wrong one from
// it is a 429 with Retry-After, for a minute; a right token from the same address still logs in
// (behind a proxy every browser shares one address, and one person's typos must not lock the
// team out), and does not lift the limit on wrong ones.
func TestLoginRateLimit(t *testing.T) {
	clock := &testClock{now: time.Date(2026, 8, 3, 9, 0, 0, 0, time.UTC)}
	ts := serve(t, server.Options{Auth: testAuth(false), Now: clock.Now, Audit: testLedger(t)})
	guesser := newBrowser(t, ts.URL)
	guesser.get("/login")
	for i := range 5 {
		if resp, _ := guesser.post("/login", url.Values{"token": {"guess"}}, true); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d", i+1, resp.StatusCode)
		}
	}
	wrong := func(b *browser, want int) {
		t.Helper()
		resp, body := b.post("/login", url.Values{"token": {"guess again"}}, true)
		if resp.StatusCode != want || cookieNamed(resp, "trueup_session") != nil {
			t.Fatalf("wrong token: %d, want %d: %s", resp.StatusCode, want, text(parse(t, body).Find("main")))
		}
		if want == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "60" {
			t.Errorf("Retry-After %q, want 60", resp.Header.Get("Retry-After"))
		}
	}
	wrong(guesser, http.StatusTooManyRequests)

	ann := newBrowser(t, ts.URL) // another browser at the same address
	ann.get("/login")
	wrong(ann, http.StatusTooManyRequests)
	resp, body := ann.post("/login", url.Values{"token": {testTokens["ann"][0]}}, true)
	if resp.StatusCode != http.StatusSeeOther || cookieNamed(resp, "trueup_session") == nil {
		t.Fatalf("right token after someone else's failures: %d: %s", resp.StatusCode, text(parse(t, body).Find("main")))
	}
	if resp, _ := ann.get("/audit"); resp.StatusCode != http.StatusOK {
		t.Errorf("logged in, yet GET /audit is a %d", resp.StatusCode)
	}
	wrong(guesser, http.StatusTooManyRequests)

	clock.add(61 * time.Second)
	wrong(guesser, http.StatusUnauthorized)
}

func TestSessionExpires(t *testing.T) {
	clock := &testClock{now: time.Date(2026, 8, 3, 9, 0, 0, 0, time.UTC)}
	ts := serve(t, server.Options{Auth: testAuth(false), Now: clock.Now, Audit: testLedger(t)})
	b := newBrowser(t, ts.URL)
	b.login("vera")
	if resp, _ := b.get("/audit"); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /audit: %d", resp.StatusCode)
	}
	clock.add(12*time.Hour + time.Second)
	if resp, _ := b.get("/audit"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET /audit after 12 h: %d, want the login page", resp.StatusCode)
	}
}

func TestBearerTokens(t *testing.T) {
	ts := serve(t, server.Options{Auth: testAuth(false), Audit: testLedger(t)})
	for _, tc := range []struct {
		name, method, path, token string
		status                    int
	}{
		{"viewer_reads_the_api", "GET", "/api/v1/audit", testTokens["vera"][0], http.StatusOK},
		{"no_token_api", "GET", "/api/v1/audit", "", http.StatusUnauthorized},
		{"bad_token", "GET", "/api/v1/audit", "nope", http.StatusUnauthorized},
		{"bad_token_even_on_public_pages", "GET", "/healthz", "nope", http.StatusUnauthorized},
		{"metrics_need_a_viewer", "GET", "/metrics", "", http.StatusUnauthorized},
		{"metrics_for_a_viewer", "GET", "/metrics", testTokens["vera"][0], http.StatusOK},
		{"probes_are_public", "GET", "/healthz", "", http.StatusOK},
		{"notices_are_public", "GET", "/notices", "", http.StatusNotFound}, // no notice service here: 404, not 401
		{"login_page_is_public", "GET", "/login", "", http.StatusOK},
		{"operator_may_not_swap", "POST", "/api/v1/tables/orders/swap", testTokens["otto"][0], http.StatusForbidden},
		{"approver_may_swap", "POST", "/api/v1/tables/orders/swap", testTokens["ann"][0], http.StatusNotFound}, // no tables here
		{"viewer_may_not_run_rules", "POST", "/api/v1/rules/x/run", testTokens["vera"][0], http.StatusForbidden},
		{"operator_runs_rules", "POST", "/api/v1/rules/x/run", testTokens["otto"][0], http.StatusNotFound}, // no such rule
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := ""
			switch {
			case strings.HasSuffix(tc.path, "/swap"):
				body = `{"to": "v2"}`
			case tc.method == "POST":
				body = `{}` // a rule's run takes no fields
			}
			resp, got := call(t, tc.method, ts.URL+tc.path, tc.token, body)
			if resp.StatusCode != tc.status {
				t.Errorf("%s %s: %d, want %d: %s", tc.method, tc.path, resp.StatusCode, tc.status, got)
			}
			if resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") != `Bearer realm="trueup"` {
				t.Errorf("401 without WWW-Authenticate")
			}
		})
	}
}

func TestSecurityHeaders(t *testing.T) {
	ts := serve(t, server.Options{})
	for _, path := range []string{"/", "/nowhere", "/static/app.css", "/api/v1/tables", "/healthz", "/login"} {
		resp, _ := get(t, ts.URL+path)
		h := resp.Header
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP allows inline code: %q", path, csp)
		}
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY"} {
			if got := h.Get(k); got != want {
				t.Errorf("%s: %s = %q, want %q", path, k, got, want)
			}
		}
	}
}

// TestPagesHaveNoInlineCode checks what the CSP forbids is not in the pages: inline scripts,
// inline event handlers and style attributes (which style-src 'self' blocks).
func TestPagesHaveNoInlineCode(t *testing.T) {
	ts := serve(t, server.Options{Targets: []server.Target{{Name: "warehouse", Engine: warehouse(t)}}})
	for _, path := range []string{"/", "/login", "/nowhere"} {
		_, body := get(t, ts.URL+path)
		doc := parse(t, body)
		doc.Find("script").Each(func(_ int, s *goquery.Selection) {
			if _, ok := s.Attr("src"); !ok || strings.TrimSpace(s.Text()) != "" {
				t.Errorf("%s: inline script %q", path, s.Text())
			}
		})
		doc.Find("*").Each(func(_ int, s *goquery.Selection) {
			for _, a := range s.Nodes[0].Attr {
				if a.Key == "style" || strings.HasPrefix(a.Key, "on") || strings.HasPrefix(a.Key, "hx-on") {
					t.Errorf("%s: <%s %s=%q>", path, goquery.NodeName(s), a.Key, a.Val)
				}
			}
		})
		if doc.Find("style").Length() > 0 {
			t.Errorf("%s: a <style> element", path)
		}
	}
}

func TestBodyLimit(t *testing.T) {
	ts := serve(t, server.Options{Auth: testAuth(false)})
	big := strings.Repeat("x", 2<<20)
	resp, _ := call(t, "POST", ts.URL+"/api/v1/tables/orders/swap", testTokens["ann"][0], `{"to": "`+big+`"}`)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("2 MiB body: %d, want 413", resp.StatusCode)
	}
}

// TestNoTokens is the demo: no login, everyone the local operator, but a browser's writes
// still need the CSRF token, and only loopback names are answered.
func TestNoTokens(t *testing.T) {
	l := testLedger(t)
	ts := serve(t, server.Options{Audit: l})

	t.Run("no_login_needed", func(t *testing.T) {
		b := newBrowser(t, ts.URL)
		resp, doc := b.get("/audit")
		if resp.StatusCode != http.StatusOK || doc.Find(`[data-testid="visitor"]`).Length() != 0 {
			t.Errorf("GET /audit: %d; visitor nav %d", resp.StatusCode, doc.Find(`[data-testid="visitor"]`).Length())
		}
		_, doc = b.get("/login")
		if doc.Find(`[data-testid="login-no-tokens"]`).Length() != 1 {
			t.Error("the login page does not say there are no tokens")
		}
	})

	t.Run("browser_write_needs_csrf", func(t *testing.T) {
		b := newBrowser(t, ts.URL)
		b.get("/audit")
		if resp, _ := b.post("/logout", nil, false); resp.StatusCode != http.StatusForbidden {
			t.Errorf("without the token: %d, want 403", resp.StatusCode)
		}
		if resp, _ := b.post("/logout", nil, true); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("with the token: %d, want 303", resp.StatusCode)
		}
	})

	t.Run("token_of_another_browser_is_refused", func(t *testing.T) {
		a, b := newBrowser(t, ts.URL), newBrowser(t, ts.URL)
		a.get("/audit")
		b.get("/audit")
		b.csrf = a.csrf
		if resp, _ := b.post("/logout", nil, true); resp.StatusCode != http.StatusForbidden {
			t.Errorf("another browser's token: %d, want 403", resp.StatusCode)
		}
	})

	t.Run("htmx_header_counts_as_the_token", func(t *testing.T) {
		b := newBrowser(t, ts.URL)
		b.get("/audit")
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/logout", nil)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("HX-Request", "true")
		req.Header.Set("X-CSRF-Token", b.csrf)
		if resp, _ := b.do(req); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("htmx post with X-CSRF-Token: %d", resp.StatusCode)
		}
	})

	t.Run("cross_site_post_is_refused_even_with_a_token", func(t *testing.T) {
		b := newBrowser(t, ts.URL)
		b.get("/audit")
		form := url.Values{"csrf": {b.csrf}}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/logout", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Origin", "https://evil.example")
		if resp, _ := b.do(req); resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site: %d, want 403", resp.StatusCode)
		}
	})

	t.Run("scripts_on_the_machine_need_no_token", func(t *testing.T) {
		if resp, _ := call(t, "POST", ts.URL+"/logout", "", ""); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("plain client: %d", resp.StatusCode)
		}
	})

	t.Run("a_bearer_token_is_refused", func(t *testing.T) {
		if resp, _ := call(t, "GET", ts.URL+"/api/v1/audit", "anything", ""); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("bearer without tokens: %d", resp.StatusCode)
		}
	})

	t.Run("only_loopback_names_are_answered", func(t *testing.T) {
		for host, want := range map[string]int{"evil.example": http.StatusMisdirectedRequest, "localhost:1": http.StatusOK, "127.0.0.1": http.StatusOK, "[::1]:80": http.StatusOK} {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, ts.URL+"/healthz", nil)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
			}
		}
	})
}

// TestFourEyes: with four_eyes, ann built v2 (her backfill run), so she may not swap it in;
// bob may, and ann may still roll it back.
func TestFourEyes(t *testing.T) {
	e, s := versionedWarehouse(t)
	ts := serve(t, server.Options{Auth: testAuth(true), Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})
	resp, body := call(t, "POST", ts.URL+"/api/v1/tables/orders/swap", testTokens["ann"][0], `{"to": "v2"}`)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "another approver must swap it in") {
		t.Errorf("ann swaps her own: %d %s", resp.StatusCode, body)
	}
	if src := viewSource(t, e, "orders"); src != "orders__v1" {
		t.Fatalf("refused swap changed the view: %s", src)
	}
	b := newBrowser(t, ts.URL)
	b.login("ann")
	b.get("/tables/orders?target=w")
	if resp, _ := b.post("/tables/orders/swap", url.Values{"to": {"v2"}, "confirm": {"yes"}, "target": {"w"}}, true); resp.StatusCode != http.StatusForbidden {
		t.Errorf("ann swaps her own from the page: %d", resp.StatusCode)
	}
	resp, body = call(t, "POST", ts.URL+"/api/v1/tables/orders/swap", testTokens["bob"][0], `{"to": "v2", "reason": "reviewed"}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"actor":"bob"`) {
		t.Errorf("bob swaps: %d %s", resp.StatusCode, body)
	}
	resp, body = call(t, "POST", ts.URL+"/api/v1/tables/orders/rollback", testTokens["ann"][0], `{"reason": "off"}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"actor":"ann"`) {
		t.Errorf("ann rolls back: %d %s", resp.StatusCode, body)
	}
}

// TestActorIsTheToken: a client cannot name someone else as the actor once tokens are on.
func TestActorIsTheToken(t *testing.T) {
	_, s := versionedWarehouse(t)
	ts := serve(t, server.Options{Auth: testAuth(false), Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/api/v1/tables/orders/swap", strings.NewReader(`{"to": "v2"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testTokens["bob"][0])
	req.Header.Set("X-Trueup-Actor", "ann")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"actor":"bob"`) {
		t.Errorf("swap as bob claiming ann: %d %s", resp.StatusCode, body)
	}
}

// TestButtonsFollowTheRole: a page offers only what the visitor may do (the server refuses
// the rest whatever the page shows).
func TestButtonsFollowTheRole(t *testing.T) {
	svc := notices.New(testLedger(t), notices.Options{})
	if _, err := svc.Draft(t.Context(), notices.Evidence{Backfill: "b", RunID: 1, Reason: "bug", Tables: []string{"orders"}}); err != nil {
		t.Fatal(err)
	}
	ts := serve(t, server.Options{Auth: testAuth(false), Notices: svc, NoticeOps: ops.NewNotices(svc)})
	for _, tc := range []struct {
		who  string
		want string // the action forms shown
	}{
		{"vera", ""},
		{"otto", "plan edit"},
		{"ann", "announce plan edit withdraw"},
	} { // nobody logged in does not see the draft at all (TestDraftsNeedAViewer)
		b := newBrowser(t, ts.URL)
		if tc.who != "" {
			b.login(tc.who)
		}
		resp, doc := b.get("/notices/1")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: GET /notices/1: %d", tc.who, resp.StatusCode)
		}
		var got []string
		doc.Find(`[data-testid="notice-actions"] form`).Each(func(_ int, s *goquery.Selection) { got = append(got, s.AttrOr("data-testid", "")) })
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%q sees %q, want %q", tc.who, got, tc.want)
		}
	}
}

// TestDeliveriesAreForTheTeam: a notice's page is public, but who it was sent to and why a
// delivery failed is for the team; and the recorded error never carries the hook's URL, which
// for many receivers is the credential.
func TestDeliveriesAreForTheTeam(t *testing.T) {
	l := testLedger(t)
	const secret = "XXSECRETTOKENXX"
	cfg := notices.Channels{
		Webhooks:      map[string]notices.Webhook{"finance": {URL: "http://127.0.0.1:1/services/T0/" + secret, Secret: "s"}},
		Subscriptions: []notices.Subscription{{Table: "orders", Webhook: "finance"}},
	}
	svc := notices.New(l, notices.Options{Channels: cfg})
	n, err := svc.Draft(t.Context(), notices.Evidence{Backfill: "b", RunID: 1, Reason: "bug", Tables: []string{"orders"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Announce(t.Context(), n.ID, "ann"); err != nil {
		t.Fatal(err)
	}
	if rep, err := svc.Outbox().Deliver(t.Context()); err != nil || rep.Retrying != 1 {
		t.Fatalf("deliver to a closed port: %+v %v", rep, err)
	}
	ts := serve(t, server.Options{Auth: testAuth(false), Notices: svc, NoticeOps: ops.NewNotices(svc)})
	for _, who := range []string{"", "vera"} {
		b := newBrowser(t, ts.URL)
		if who != "" {
			b.login(who)
		}
		resp, doc := b.get(fmt.Sprintf("/notices/%d", n.ID))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%q: %d", who, resp.StatusCode)
		}
		if strings.Contains(doc.Text(), secret) {
			t.Errorf("%q: the page shows the webhook's URL", who)
		}
		rows := doc.Find(`[data-testid="delivery-row"]`)
		switch {
		case who == "" && rows.Length() != 0:
			t.Errorf("a visitor who is not logged in sees %d deliveries", rows.Length())
		case who == "vera" && (rows.Length() != 1 || !strings.Contains(rows.Text(), "webhook finance: dial tcp")):
			t.Errorf("the viewer sees %d deliveries: %q", rows.Length(), rows.Text())
		}
	}
}
