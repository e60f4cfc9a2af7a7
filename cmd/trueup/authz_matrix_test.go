package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"trueup/config"
	"trueup/notices"
	"trueup/server"
)

// The tokens of the served test project: one per role.
var matrixTokens = map[string]struct{ name, token string }{
	config.RoleViewer:   {"vera", "vera-secret-token-000000"},
	config.RoleOperator: {"otto", "otto-secret-token-000000"},
	config.RoleApprover: {"ann", "ann-secret-token-0000000"},
}

// wantRole is the table of who may write what, written down here independently of the
// server's own table: the matrix checks the server against it.
var wantRole = map[string]string{
	"POST /login":                          "public",
	"POST /logout":                         "public",
	"POST /notices/:id/ack/:token":         "public",
	"POST /rules/:rule/run":                config.RoleOperator,
	"POST /api/v1/rules/:rule/run":         config.RoleOperator,
	"POST /api/v1/check":                   config.RoleOperator,
	"POST /api/v1/diffs":                   config.RoleOperator,
	"POST /backfills/:name/dry-run":        config.RoleOperator,
	"POST /backfills/:name/run":            config.RoleOperator,
	"POST /backfills/:name/resume":         config.RoleOperator,
	"POST /backfills/:name/cancel":         config.RoleOperator,
	"POST /api/v1/backfills/:name/:action": config.RoleOperator,
	"POST /notices/:id/edit":               config.RoleOperator,
	"POST /api/v1/notices/:id/edit":        config.RoleOperator,
	"POST /notices/:id/announce":           config.RoleApprover,
	"POST /api/v1/notices/:id/announce":    config.RoleApprover,
	"POST /notices/:id/withdraw":           config.RoleApprover,
	"POST /api/v1/notices/:id/withdraw":    config.RoleApprover,
	"POST /api/v1/notices/:id/complete":    config.RoleApprover,
	"POST /api/v1/notices/deliver":         config.RoleOperator,
	"POST /tables/:table/swap":             config.RoleApprover,
	"POST /api/v1/tables/:table/swap":      config.RoleApprover,
	"POST /tables/:table/rollback":         config.RoleApprover,
	"POST /api/v1/tables/:table/rollback":  config.RoleApprover,
	"POST /tables/:table/retire":           config.RoleApprover,
	"POST /api/v1/tables/:table/retire":    config.RoleApprover,
	// orders is a logical table already: refused by the service, not by authorization
	"POST /tables/:table/adopt":        config.RoleApprover,
	"POST /api/v1/tables/:table/adopt": config.RoleApprover,
	// a catch-up writes into the live version: as weighty as a swap (nothing to carry here)
	"POST /tables/:table/catch-up":        config.RoleApprover,
	"POST /api/v1/tables/:table/catch-up": config.RoleApprover,
	// a query reads, at whatever versions: POST only for its JSON body
	"POST /api/v1/query": config.RoleViewer,
	// Subscribing oneself and the links mailed to a subscriber: anyone; removing one: an approver.
	"POST /subscriptions":                    "public",
	"POST /api/v1/subscriptions":             "public",
	"POST /subscriptions/unsubscribe/:token": "public",
	"POST /subscriptions/manage/:token":      "public",
	"POST /subscriptions/manage/:token/end":  "public",
	"POST /subscriptions/:id/remove":         config.RoleApprover,
	"POST /api/v1/subscriptions/:id/remove":  config.RoleApprover,
}

var roleRank = map[string]int{"public": 0, config.RoleViewer: 1, config.RoleOperator: 2, config.RoleApprover: 3}

// The ways a request may present itself.
const (
	credNone          = "no token"
	credBad           = "bad token"
	credGood          = "good token"
	credSessionNoCSRF = "session, no CSRF"
	credSessionCSRF   = "session + CSRF" // the control: a browser doing it right
)

// matrixProject is the demo project served in-process through the real wiring, with tokens
// (or none), a drafted notice, an announced one with a recipient, and orders at v2 with a v3
// ready to swap in: every write route has something real to change.
type matrixProject struct {
	t      *testing.T
	a      *app
	srv    *server.Server
	ts     *httptest.Server
	tokens bool
	draft  int64  // a draft notice
	ack    string // /notices/{id}/ack/{token} of a recipient of an announced notice
}

func openMatrixProject(t *testing.T, tokens bool) *matrixProject {
	t.Helper()
	ctx := context.Background()
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	extra := "notify:\n  public_url: http://127.0.0.1:8080\n  webhooks:\n    finance: {url: 'http://127.0.0.1:1/hook', secret: s}\n  subscriptions:\n    - {table: orders, webhook: finance}\n"
	if tokens {
		extra += "auth:\n  tokens:\n"
		for _, role := range config.Roles() {
			tk := matrixTokens[role]
			extra += fmt.Sprintf("    - {name: %s, role: %s, sha256: %s}\n", tk.name, role, config.HashToken(tk.token))
		}
	}
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n" + extra)
	f.Close()

	a, err := openApp(ctx, globals{config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	w := a.Targets[a.Config.DefaultTarget]
	for _, n := range []string{"2", "3"} {
		if err := w.Exec(ctx, "CREATE TABLE orders__v"+n+" AS SELECT * FROM orders__v1"); err != nil {
			t.Fatal(err)
		}
	}
	var logw io.Writer = io.Discard
	if os.Getenv("TRUEUP_TEST_LOG") != "" {
		logw = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(logw, nil))
	p, err := openServed(ctx, &env{stdout: io.Discard, stderr: io.Discard, globals: globals{config: cfg}}, a, "127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	ts := httptest.NewServer(p.srv.Handler())
	t.Cleanup(ts.Close)
	m := &matrixProject{t: t, a: a, srv: p.srv, ts: ts, tokens: tokens}

	ev := notices.Evidence{Backfill: "fix_dedup_bug", RunID: 99, Reason: "bug", Tables: []string{"orders"}}
	n, err := p.ntc.Draft(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	m.draft = n.ID
	ev.RunID = 100
	n2, err := p.ntc.Draft(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if n2, err = p.ntc.Announce(ctx, n2.ID, "setup"); err != nil || len(n2.Recipients) == 0 {
		t.Fatalf("announce: %v (%d recipients)", err, len(n2.Recipients))
	}
	m.ack = fmt.Sprintf("/notices/%d/ack/%s", n2.ID, n2.Recipients[0].Token)

	// orders → v2, so that a rollback has somewhere to go back to.
	cred := credGood
	if !tokens {
		cred = credNone
	}
	resp, body := m.send(http.MethodPost, "/api/v1/tables/orders/swap", cred, config.RoleApprover, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("setup swap: %d %s", resp.StatusCode, body)
	}
	return m
}

// request is one concrete request for a route.
func (m *matrixProject) requests(route string) []string {
	switch route {
	case "POST /login":
		return []string{"/login"}
	case "POST /logout":
		return []string{"/logout"}
	case "POST /notices/:id/ack/:token":
		return []string{m.ack}
	case "POST /api/v1/backfills/:name/:action":
		var out []string
		for _, a := range []string{"dry-run", "run", "resume", "cancel"} {
			out = append(out, "/api/v1/backfills/fix_dedup_bug/"+a)
		}
		return out
	}
	_, path, _ := strings.Cut(route, " ")
	r := strings.NewReplacer(":rule", "matches_raw", ":name", "fix_dedup_bug", ":id", fmt.Sprint(m.draft), ":table", "orders")
	return []string{r.Replace(path)}
}

// body is what a form or JSON request to path carries.
func (m *matrixProject) body(path, role string) url.Values {
	v := url.Values{}
	switch {
	case strings.HasSuffix(path, "/swap"):
		v.Set("to", "v3")
		v.Set("confirm", "yes")
		v.Set("reason", "matrix")
		// v3 was made by the test, not by a backfill: nothing validated it
		v.Set("override", "matrix: a version the test made")
	case strings.HasSuffix(path, "/rollback"):
		v.Set("confirm", "yes")
		v.Set("reason", "matrix")
	case strings.HasSuffix(path, "/edit"):
		v.Set("title", "Edited")
		v.Set("body", "Edited text.")
	case strings.HasSuffix(path, "/withdraw"), strings.HasSuffix(path, "/complete"):
		v.Set("reason", "matrix")
	case strings.HasSuffix(path, "/retire"):
		v.Set("version", "v1") // the rollback target: refused by the service, not by authorization
		v.Set("confirm", "yes")
		v.Set("reason", "matrix")
	case path == "/api/v1/check":
		v.Set("rules", "matches_raw")
	case path == "/api/v1/query":
		v.Set("sql", "SELECT count(*) AS n FROM orders")
	case path == "/api/v1/diffs":
		v.Set("old", "orders__v1")
		v.Set("new", "orders__v2")
		v.Set("key", "order_id")
	case path == "/login":
		if role == "" || role == "public" {
			role = config.RoleViewer
		}
		v.Set("token", matrixTokens[role].token)
	}
	return v
}

// browser is one logged-in (or, without tokens, visiting) browser: a cookie jar and the CSRF
// token of the last page.
type matrixBrowser struct {
	client *http.Client
	csrf   string
}

func (m *matrixProject) browser(role string) *matrixBrowser {
	m.t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &matrixBrowser{client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	page := "/"
	if m.tokens {
		page = "/login"
	}
	b.load(m, page)
	if m.tokens {
		form := url.Values{"token": {matrixTokens[role].token}, "csrf": {b.csrf}}
		resp := b.post(m, "/login", form, "")
		if resp.StatusCode != http.StatusSeeOther {
			m.t.Fatalf("log in as %s: %d", role, resp.StatusCode)
		}
		b.load(m, "/audit")
	}
	return b
}

func (b *matrixBrowser) load(m *matrixProject, path string) {
	m.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, m.ts.URL+path, nil)
	req.Header.Set("Sec-Fetch-Site", "none")
	resp, err := b.client.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		m.t.Fatal(err)
	}
	var hs map[string]string
	json.Unmarshal([]byte(doc.Find("body").AttrOr("hx-headers", "{}")), &hs)
	if b.csrf = hs["X-CSRF-Token"]; b.csrf == "" {
		m.t.Fatalf("GET %s: %d, no CSRF token on the page", path, resp.StatusCode)
	}
}

func (b *matrixBrowser) post(m *matrixProject, path string, form url.Values, header string) *http.Response {
	m.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, m.ts.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", m.ts.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if header != "" {
		req.Header.Set("X-CSRF-Token", header)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// send makes one request as cred (with role's token or session) and returns the answer.
func (m *matrixProject) send(method, path, cred, role string, b *matrixBrowser) (*http.Response, string) {
	m.t.Helper()
	form := m.body(path, role)
	switch cred {
	case credSessionNoCSRF, credSessionCSRF:
		if cred == credSessionCSRF {
			form.Set("csrf", b.csrf)
		}
		return b.post(m, path, form, ""), ""
	}
	var body io.Reader = strings.NewReader(form.Encode())
	ctype := "application/x-www-form-urlencoded"
	if strings.HasPrefix(path, "/api/") {
		js := map[string]any{}
		for k := range form {
			if k == "confirm" {
				continue // the pages' confirmation step: the API has none, and refuses the field
			}
			js[k] = form.Get(k)
			if k == "rules" || k == "key" {
				js[k] = form[k] // lists in the JSON API
			}
		}
		raw, _ := json.Marshal(js)
		body, ctype = strings.NewReader(string(raw)), "application/json"
	}
	req, _ := http.NewRequest(method, m.ts.URL+path, body)
	req.Header.Set("Content-Type", ctype)
	switch cred {
	case credBad:
		req.Header.Set("Authorization", "Bearer not-a-token")
	case credGood:
		req.Header.Set("Authorization", "Bearer "+matrixTokens[role].token)
	}
	client := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

// snapshot is everything a write could change: the row count of every ledger table (runs,
// results, versions, publishes, notices, outbox, audit log, …) and every warehouse relation,
// and what each view reads.
func (m *matrixProject) snapshot() string {
	m.t.Helper()
	// What an earlier request started in the background (the rules a swap reruns) is its
	// write, not this one's: it ends before the snapshot.
	m.a.Wait()
	return ledgerSnapshot(m.t, m.a) + "\n" + warehouseSnapshot(m.t, m.a)
}

// ledgerSnapshot is the row count of every table in the ledger.
func ledgerSnapshot(t *testing.T, a *app) string {
	t.Helper()
	ctx := context.Background()
	var parts []string
	rows, err := a.Ledger.DB().QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' ORDER BY table_name")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	for _, n := range tables {
		var c int64
		if err := a.Ledger.DB().QueryRowContext(ctx, `SELECT count(*) FROM "`+n+`"`).Scan(&c); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, fmt.Sprintf("ledger.%s=%d", n, c))
	}
	return strings.Join(parts, "\n")
}

// warehouseSnapshot is every relation of the default target: each table's row count and what
// each view reads.
func warehouseSnapshot(t *testing.T, a *app) string {
	t.Helper()
	ctx := context.Background()
	var parts []string
	w := a.Targets[a.Config.DefaultTarget]
	rels, err := w.Relations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rels {
		if r.View {
			src, _ := w.ViewSource(ctx, r.Name)
			parts = append(parts, "view "+r.Name+"→"+src)
			continue
		}
		res, err := w.Query(ctx, "SELECT count(*) FROM "+w.Dialect().QuoteRelation(r.Name))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, fmt.Sprintf("table %s=%v", r.Name, res.Rows[0][0]))
	}
	sort.Strings(parts)
	return strings.Join(parts, "\n")
}

// cell is one point of the matrix: a concrete request, who sends it and how, and the answer
// expected: a status (401, 403), or 0 for "let through to the handler".
type cell struct {
	route, path, role, cred string
	want                    int
}

// cellList names cells, one a line.
func cellList(cs []cell) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return strings.Join(out, "\n")
}

func (c cell) String() string {
	return fmt.Sprintf("%s [%s] as %s with %s", c.path, c.route, c.role, c.cred)
}

// TestAuthorizationMatrix sends every write route, as every role, with no token, a bad token,
// a good token, a browser session without the CSRF token (and, as the control, with it), and
// checks the status; every refused request must leave the ledger and the warehouse exactly as
// they were. The same is done without tokens (the demo), where everyone is the local operator.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel() // long: beside the package's other long tests
	if testing.Short() {
		t.Skip("serves two demo projects")
	}
	total := 0
	for _, tokens := range []bool{true, false} {
		name := "tokens"
		if !tokens {
			name = "no_tokens"
		}
		t.Run(name, func(t *testing.T) {
			m := openMatrixProject(t, tokens)
			routes := m.routes(t)
			cells := m.cells(routes)
			total += len(cells)
			browsers := map[string]*matrixBrowser{}
			for _, role := range config.Roles() {
				browsers[role] = m.browser(role)
			}
			// Refusals first, while nothing else runs, each route's checked to have written
			// nothing (a snapshot around each route's refusals, not each cell's: the snapshot
			// reads every table, and a write shows whichever refusal made it); then the requests
			// that get through (which start runs, swap, announce …).
			refused, through := 0, 0
			got := map[cell]int{}
			var sent []cell
			before := m.snapshot()
			for i, c := range cells {
				if c.want != 0 {
					refused++
					resp, body := m.send(http.MethodPost, c.path, c.cred, c.role, browsers[c.role])
					got[c] = resp.StatusCode
					sent = append(sent, c)
					if resp.StatusCode != c.want {
						t.Errorf("%s: status %d, want %d %s", c, resp.StatusCode, c.want, body)
					}
				}
				if len(sent) > 0 && (i == len(cells)-1 || cells[i+1].route != c.route) {
					after := m.snapshot()
					if after != before {
						t.Errorf("%s: refused, yet something was written:\n%s", cellList(sent), changed(before, after))
					}
					before, sent = after, nil
				}
			}
			for _, c := range cells {
				if c.want != 0 {
					continue
				}
				through++
				b := browsers[c.role]
				if c.cred == credSessionCSRF && (c.path == "/login" || c.path == "/logout") {
					b = m.browser(c.role) // logging in or out ends the session: use a fresh one
				}
				resp, body := m.send(http.MethodPost, c.path, c.cred, c.role, b)
				got[c] = resp.StatusCode
				switch {
				case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
					t.Errorf("%s: status %d, want it let through %s", c, resp.StatusCode, body)
				case resp.StatusCode >= 500:
					// Through authorization, then failed: not this test's business, but say so.
					t.Logf("%s: let through, then status %d %s", c, resp.StatusCode, body)
				}
			}
			if testing.Verbose() {
				t.Log("\n" + matrixTable(cells, got))
			}
			t.Logf("%s: %d routes, %d cells: %d refused with nothing written, %d let through", name, len(routes), len(cells), refused, through)
		})
	}
	t.Logf("authorization matrix: %d cells in all", total)
}

// routes is every write route the server registers; it must be exactly the table, with
// the same roles.
func (m *matrixProject) routes(t *testing.T) []string {
	t.Helper()
	p := m.srv.WriteRoutes()
	var out []string
	for route, role := range p {
		want, ok := wantRole[route]
		switch {
		case !ok:
			t.Errorf("%s is not in the matrix: add it to wantRole with the role it needs", route)
		case want != role:
			t.Errorf("%s needs %s, want %s", route, role, want)
		}
		out = append(out, route)
	}
	for route := range wantRole {
		if _, ok := p[route]; !ok {
			t.Errorf("%s is in the matrix but not served", route)
		}
	}
	sort.Strings(out)
	return out
}

func (m *matrixProject) cells(routes []string) []cell {
	var out []cell
	for _, route := range routes {
		need := wantRole[route]
		for _, path := range m.requests(route) {
			for _, role := range config.Roles() {
				for _, cred := range []string{credNone, credBad, credGood, credSessionNoCSRF, credSessionCSRF} {
					c := cell{route: route, path: path, role: role, cred: cred}
					switch {
					case cred == credBad:
						c.want = http.StatusUnauthorized
					case cred == credSessionNoCSRF:
						c.want = http.StatusForbidden
					case !m.tokens:
						if cred == credGood {
							continue // without tokens there is no good token to send
						}
					case need == "public":
					case cred == credNone:
						c.want = http.StatusUnauthorized
					case roleRank[role] < roleRank[need]:
						c.want = http.StatusForbidden
					}
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// matrixTable lays the statuses out one line per request and role.
func matrixTable(cells []cell, got map[cell]int) string {
	var b strings.Builder
	last := ""
	for _, c := range cells {
		key := c.path + " as " + c.role
		if key != last {
			if last != "" {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "%-52s %-8s %-8s", c.path, wantRole[c.route], c.role)
			last = key
		}
		fmt.Fprintf(&b, "  %s %d", c.cred, got[c])
	}
	return b.String()
}

func changed(before, after string) string {
	b := map[string]bool{}
	for _, l := range strings.Split(before, "\n") {
		b[l] = true
	}
	var out []string
	for _, l := range strings.Split(after, "\n") {
		if !b[l] {
			out = append(out, "  now "+l)
		}
	}
	return strings.Join(out, "\n")
}
