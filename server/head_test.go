package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestHeadOnEveryGetRoute: HEAD answers every GET route, from the registered list, with the
// status GET gives and no body (it was a 405 everywhere, /healthz included, which load
// balancers probe with HEAD).
func TestHeadOnEveryGetRoute(t *testing.T) {
	opt, base, _ := writeServer(t)
	params := strings.NewReplacer(":table", "orders", ":rule", "positive", ":name", "fix_dedup_bug", ":id", "1",
		":partition", "2026-07-02", ":token", "not-a-token", "*", "app.css")
	n := 0
	for _, r := range routesOf(opt) {
		path, ok := strings.CutPrefix(r, "GET ")
		if !ok {
			continue
		}
		n++
		u := base + params.Replace(path)
		name := strings.Trim(strings.ReplaceAll(path, "/", "_"), "_")
		if name == "" {
			name = "dashboard"
		}
		t.Run(name, func(t *testing.T) {
			client := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			do := func(method string) (*http.Response, []byte) {
				req, _ := http.NewRequestWithContext(t.Context(), method, u, nil)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp, body
			}
			getResp, _ := do(http.MethodGet)
			resp, body := do(http.MethodHead)
			want := getResp.StatusCode
			if resp.StatusCode != want || len(body) != 0 {
				t.Errorf("HEAD %s: %d with %d bytes, want %d and no body", u, resp.StatusCode, len(body), want)
			}
		})
	}
	if n < 30 {
		t.Errorf("walked %d GET routes; the list looks wrong", n)
	}
	resp, err := http.Head(base + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD /healthz: %v %v, want 200", resp.Status, err)
	}
}

// TestActionAddressesLeadBack: an action's address opened with GET (Back after a confirmation,
// a reload, a shared link) leads to the page the action is taken from, its query kept, not to a
// 405.
func TestActionAddressesLeadBack(t *testing.T) {
	_, base, _ := writeServer(t)
	client := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for path, want := range map[string]string{
		"/tables/orders/swap?target=warehouse": "/tables/orders?target=warehouse",
		"/tables/orders/rollback":              "/tables/orders",
		"/notices/1/edit":                      "/notices/1",
		"/notices/1/withdraw":                  "/notices/1",
		"/backfills/fix_dedup_bug/run":         "/backfills/fix_dedup_bug",
	} {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("GET %s: %d to %q, want 303 to %s", path, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
}
