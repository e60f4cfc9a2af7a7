package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// Payloads that would do harm if pasted into SQL text or HTML: each must be bound, quoted or
// escaped wherever it goes.
var (
	sqlPayloads = []string{
		"'; DROP TABLE orders__v1; --",
		"orders; DROP TABLE orders__v1",
		`orders"; DROP TABLE orders__v1; --`,
		"2026-07-10' OR '1'='1",
		"x') UNION SELECT * FROM orders_raw --",
		"1 OR 1=1",
	}
	htmlPayloads = []string{
		`<script>alert(1)</script>`,
		`" onmouseover="alert(1)`,
		`'><img src=x onerror=alert(1)>`,
		`javascript:alert(1)`,
	}
)

func allPayloads() []string { return append(append([]string{}, sqlPayloads...), htmlPayloads...) }

// vector is one place a payload goes in through HTTP.
type vector struct {
	method string
	path   func(p string) string
	form   func(p string) url.Values // POST form; nil for none
	json   func(p string) any        // POST JSON body instead of a form
}

func esc(p string) string { return url.PathEscape(p) }
func q(p string) string   { return url.QueryEscape(p) }

func httpVectors() []vector {
	get := func(f func(string) string) vector { return vector{method: http.MethodGet, path: f} }
	return []vector{
		get(func(p string) string { return "/tables/" + esc(p) }),
		get(func(p string) string { return "/tables/orders?target=" + q(p) }),
		get(func(p string) string { return "/rules/" + esc(p) }),
		get(func(p string) string { return "/rules/matches_raw?run=" + q(p) + "&page=" + q(p) }),
		get(func(p string) string { return "/backfills/" + esc(p) }),
		get(func(p string) string { return "/backfills/" + esc(p) + "/progress" }),
		get(func(p string) string { return "/notices?table=" + q(p) }),
		get(func(p string) string { return "/notices?state=" + q(p) }),
		get(func(p string) string { return "/notices.atom?table=" + q(p) }),
		get(func(p string) string { return "/notices/" + esc(p) }),
		get(func(p string) string { return "/notices/1/ack/" + esc(p) }),
		get(func(p string) string { return "/diffs/" + esc(p) }),
		get(func(p string) string { return "/audit?actor=" + q(p) + "&action=" + q(p) + "&target=" + q(p) }),
		get(func(p string) string { return "/audit?page=" + q(p) }),
		get(func(p string) string { return "/login?next=" + q(p) }),
		get(func(p string) string { return "/api/v1/tables/" + esc(p) }),
		get(func(p string) string { return "/api/v1/rules/" + esc(p) }),
		get(func(p string) string { return "/api/v1/backfills/" + esc(p) + "/status" }),
		get(func(p string) string { return "/api/v1/notices?table=" + q(p) + "&limit=" + q(p) }),
		get(func(p string) string { return "/api/v1/audit?actor=" + q(p) }),
		{method: http.MethodPost, path: func(p string) string { return "/tables/" + esc(p) + "/swap" },
			form: func(p string) url.Values { return url.Values{"to": {p}, "reason": {p}} }},
		{method: http.MethodPost, path: func(string) string { return "/tables/orders/swap" },
			form: func(p string) url.Values { return url.Values{"to": {p}, "reason": {p}, "override": {p}} }},
		{method: http.MethodPost, path: func(string) string { return "/tables/orders/swap" },
			form: func(p string) url.Values { return url.Values{"to": {"v3"}, "reason": {p}, "override": {p}} }},
		{method: http.MethodPost, path: func(string) string { return "/tables/orders/rollback" },
			form: func(p string) url.Values { return url.Values{"reason": {p}, "target": {p}} }},
		{method: http.MethodPost, path: func(string) string { return "/api/v1/tables/orders/swap" },
			json: func(p string) any { return map[string]any{"to": p, "reason": p, "dry_run": true} }},
		{method: http.MethodPost, path: func(p string) string { return "/rules/" + esc(p) + "/run" }},
		{method: http.MethodPost, path: func(p string) string { return "/api/v1/rules/" + esc(p) + "/run" }},
		{method: http.MethodPost, path: func(p string) string { return "/backfills/" + esc(p) + "/dry-run" }},
		{method: http.MethodPost, path: func(p string) string { return "/api/v1/backfills/" + esc(p) + "/" + esc(p) }},
		{method: http.MethodPost, path: func(p string) string { return "/notices/" + esc(p) + "/edit" },
			form: func(p string) url.Values { return url.Values{"title": {p}, "body": {p}} }},
		{method: http.MethodPost, path: func(p string) string { return "/notices/1/ack/" + esc(p) }},
		{method: http.MethodPost, path: func(string) string { return "/login" },
			form: func(p string) url.Values { return url.Values{"token": {p}, "next": {p}} }},
	}
}

// checkHTML fails the test for each of htmlProblems.
func checkHTML(t *testing.T, what, ctype, body string) {
	t.Helper()
	for _, p := range htmlProblems(ctype, body) {
		t.Errorf("%s: %s", what, p)
	}
}

// htmlProblems lists what in a response could run a script: a <script> that is not one of
// our assets, an inline event handler, a javascript: link, or a payload's markup unescaped.
func htmlProblems(ctype, body string) []string {
	var out []string
	for _, p := range htmlPayloads {
		if strings.ContainsAny(p, "<>") && strings.Contains(body, p) {
			out = append(out, "the payload "+strconv.Quote(p)+" is in the response unescaped")
		}
	}
	if !strings.HasPrefix(ctype, "text/html") {
		return out
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		return append(out, err.Error())
	}
	doc.Find("script").Each(func(_ int, s *goquery.Selection) {
		if src := s.AttrOr("src", ""); !strings.HasPrefix(src, "/static/") || strings.TrimSpace(s.Text()) != "" {
			out = append(out, fmt.Sprintf("a script that is not ours: src %q, text %q", src, s.Text()))
		}
	})
	doc.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, a := range s.Nodes[0].Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") {
				out = append(out, fmt.Sprintf("<%s %s=%q>", goquery.NodeName(s), a.Key, a.Val))
			}
			switch a.Key {
			case "href", "src", "action", "hx-get", "hx-post":
				if strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.Val)), "javascript:") {
					out = append(out, fmt.Sprintf("<%s %s=%q>", goquery.NodeName(s), a.Key, a.Val))
				}
			}
		}
	})
	return out
}

// TestInjectionOverHTTP sends every payload through every place a user's text reaches the
// server: path segments, query parameters, form fields and JSON fields. Nothing may change in
// the warehouse (no SQL ran), no answer may be a 500, and no page may carry a script.
func TestInjectionOverHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("serves the demo project")
	}
	m := openMatrixProject(t, false)
	before := warehouseSnapshot(t, m.a)
	client := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	fetch := func(method, path string, body io.Reader, ctype string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, m.ts.URL+path, body)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	sent := 0
	for _, v := range httpVectors() {
		for _, p := range allPayloads() {
			path := v.path(p)
			var body io.Reader
			ctype := ""
			switch {
			case v.form != nil:
				body, ctype = strings.NewReader(v.form(p).Encode()), "application/x-www-form-urlencoded"
			case v.json != nil:
				raw, _ := json.Marshal(v.json(p))
				body, ctype = strings.NewReader(string(raw)), "application/json"
			}
			resp, got := fetch(v.method, path, body, ctype)
			sent++
			what := v.method + " " + path
			if resp.StatusCode >= 500 {
				t.Errorf("%s: status %d: %s", what, resp.StatusCode, got)
			}
			checkHTML(t, what, resp.Header.Get("Content-Type"), got)
		}
	}
	if after := warehouseSnapshot(t, m.a); after != before {
		t.Fatalf("the warehouse changed:\n%s", changed(before, after))
	}

	// Text a person typed is stored as it is and shown as text, on the page, in the feed and in
	// the API: the notice's title and body, and a withdrawal's reason.
	for _, p := range allPayloads() {
		form := url.Values{"title": {"Notice " + p}, "body": {"# " + p + "\n\n- " + p + "\n\n" + p}}
		resp, body := fetch(http.MethodPost, "/notices/1/edit", strings.NewReader(form.Encode()), "application/x-www-form-urlencoded")
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("edit with %q: %d %s", p, resp.StatusCode, body)
		}
		resp, body = fetch(http.MethodGet, "/notices/1", nil, "")
		checkHTML(t, "notice page with "+p, resp.Header.Get("Content-Type"), body)
		doc, _ := goquery.NewDocumentFromReader(strings.NewReader(body))
		if got := strings.TrimSpace(doc.Find(`[data-testid="notice-title"]`).Text()); got != "Notice "+p {
			t.Errorf("title shown as %q, want the text %q", got, "Notice "+p)
		}
		if got := doc.Find(`[data-testid="notice-body"]`).Text(); strings.Count(got, p) < 3 {
			t.Errorf("body does not show %q as text three times: %q", p, got)
		}
		if got := doc.Find(`textarea[name="body"]`).Text(); !strings.Contains(got, p) {
			t.Errorf("the edit box does not hold %q: %q", p, got)
		}
		resp, body = fetch(http.MethodGet, "/api/v1/notices/1", nil, "")
		var n struct {
			Title string `json:"title"`
		}
		if err := json.Unmarshal([]byte(body), &n); err != nil || n.Title != "Notice "+p {
			t.Errorf("API title = %q (%v)", n.Title, err)
		}
		checkHTML(t, "notice JSON", resp.Header.Get("Content-Type"), body)
	}
	// The announced notice in the feed, after its title was edited while a draft is not
	// possible; withdraw it with a payload as the reason and read the feed and the page.
	for i, p := range htmlPayloads {
		form := url.Values{"reason": {p}, "confirm": {"yes"}} // the confirmation page's form
		if i > 0 {
			break // a notice is withdrawn once
		}
		if resp, body := fetch(http.MethodPost, "/notices/2/withdraw", strings.NewReader(form.Encode()), "application/x-www-form-urlencoded"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("withdraw: %d %s", resp.StatusCode, body)
		}
		resp, body := fetch(http.MethodGet, "/notices/2", nil, "")
		checkHTML(t, "withdrawn notice", resp.Header.Get("Content-Type"), body)
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Error("the withdrawal reason is not shown, escaped, on the page")
		}
		resp, body = fetch(http.MethodGet, "/notices.atom", nil, "")
		checkHTML(t, "feed", resp.Header.Get("Content-Type"), body)
		resp, body = fetch(http.MethodGet, "/audit", nil, "")
		checkHTML(t, "audit page", resp.Header.Get("Content-Type"), body)
	}
	if after := warehouseSnapshot(t, m.a); after != before {
		t.Fatalf("the warehouse changed:\n%s", changed(before, after))
	}
	t.Logf("%d requests carrying %d payloads through %d vectors; warehouse unchanged", sent, len(allPayloads()), len(httpVectors()))
}

// TestInjectionThroughTheCLI sends the payloads through the command line's flags and
// arguments: partition bounds, relation and column names, rule, table and version names.
func TestInjectionThroughTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("writes the demo project")
	}
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	snap := func() string {
		a, err := openApp(context.Background(), globals{config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		return warehouseSnapshot(t, a)
	}
	before := snap()
	runs := 0
	for _, p := range allPayloads() {
		for _, args := range [][]string{
			{"backfill", "plan", "fix_dedup_bug", "--from", p, "--to", "2026-07-12"},
			{"backfill", "dry-run", "fix_dedup_bug", "--from", "2026-07-10", "--to", p},
			{"backfill", "plan", p},
			{"backfill", "status", p},
			{"diff", "--old", p, "--new", "orders__v1", "--key", "order_id"},
			{"diff", "--old", "orders", "--new", "orders__v1", "--key", p},
			{"diff", "--old", "orders", "--new", "orders__v1", "--key", "order_id", "--partition", p},
			{"diff", "--old", "orders", "--new", "orders__v1", "--key", "order_id", "--partition", "order_date", "--only", p},
			{"diff", "--old", "orders", "--new", "orders__v1", "--key", "order_id", "--measure", p},
			{"diff", "--old", "orders", "--new", "orders__v1", "--key", "order_id", "--ignore", p},
			{"versions", p},
			{"swap", "orders", "--to", p, "--reason", p},
			{"swap", p, "--to", "v1"},
			{"rollback", p, "--reason", p},
			{"check", "--rule", p},
			{"check", "--tag", p},
			{"notice", "show", p},
			{"notice", "list", "--table", p, "--state", p},
		} {
			code, _, errs := cli(t, append([]string{"--config", cfg}, args...)...)
			runs++
			if strings.Contains(errs, "panic") || code > 2 {
				t.Errorf("trueup %q: exit %d: %s", args, code, errs)
			}
		}
	}
	if after := snap(); after != before {
		t.Fatalf("the warehouse changed:\n%s", changed(before, after))
	}
	t.Logf("%d commands carrying %d payloads; warehouse unchanged", runs, len(allPayloads()))
}

// TestCheckHTMLCatches makes sure the checker above would see what it looks for.
func TestCheckHTMLCatches(t *testing.T) {
	for name, body := range map[string]string{
		"script":     `<p><script>alert(1)</script></p>`,
		"handler":    `<p title="" onmouseover="alert(1)">x</p>`,
		"img":        `<p>'><img src=x onerror=alert(1)></p>`,
		"javascript": `<a href="javascript:alert(1)">x</a>`,
	} {
		if len(htmlProblems("text/html; charset=UTF-8", body)) == 0 {
			t.Errorf("%s: nothing found in %q", name, body)
		}
	}
	escaped := `<p>&lt;script&gt;alert(1)&lt;/script&gt; &#34; onmouseover=&#34;alert(1)</p><script src="/static/htmx.min.js?v=1" defer></script>`
	if p := htmlProblems("text/html", escaped); len(p) > 0 {
		t.Errorf("escaped text: %q", p)
	}
}
