package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestLoggedInPagesAreNotStored: what is served to a logged-in browser or to an API token is
// Cache-Control: no-store on every GET route (a shared cache or the browser's history must not
// keep a page with drafts, a CSRF token or the audit log); the static assets (and the icon at /favicon.ico) stay cacheable,
// and so do the public notice pages served to nobody in particular.
func TestLoggedInPagesAreNotStored(t *testing.T) {
	opt, base, _ := writeServer(t, testAuth(false))
	b := newBrowser(t, base)
	b.login("vera")
	params := strings.NewReplacer(":table", "orders", ":rule", "positive", ":name", "fix_dedup_bug", ":id", "1",
		":partition", "2026-07-02", ":token", "not-a-token", "*", "app.css")
	for _, r := range routesOf(opt) {
		path, ok := strings.CutPrefix(r, "GET ")
		if !ok {
			continue
		}
		u := base + params.Replace(path)
		for via, do := range map[string]func() *http.Response{
			"session": func() *http.Response {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
				resp, _ := b.do(req)
				return resp
			},
			"token": func() *http.Response {
				resp, _ := call(t, http.MethodGet, u, testTokens["vera"][0], "")
				return resp
			},
		} {
			resp := do()
			got := resp.Header.Get("Cache-Control")
			if strings.HasPrefix(path, "/static/") || path == "/favicon.ico" {
				if resp.StatusCode == http.StatusOK && got == "no-store" {
					t.Errorf("GET %s with a %s: an asset is no-store", path, via)
				}
				continue
			}
			if got != "no-store" {
				t.Errorf("GET %s with a %s: %d, Cache-Control %q, want no-store", path, via, resp.StatusCode, got)
			}
		}
	}
	for _, p := range []string{"/notices", "/notices.atom"} {
		resp, _ := get(t, base+p)
		if got := resp.Header.Get("Cache-Control"); resp.StatusCode != http.StatusOK || got == "no-store" {
			t.Errorf("GET %s for nobody in particular: %d, Cache-Control %q: want it cacheable as before", p, resp.StatusCode, got)
		}
	}
}
