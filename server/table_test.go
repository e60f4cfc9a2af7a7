package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"trueup/ledger"
	"trueup/ops"
	"trueup/server"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// versionedWarehouse is orders and daily_revenue with v1 live and a v2 built by one validated
// backfill run, plus orders v3 whose validation failed.
func versionedWarehouse(t *testing.T, opts ...views.Option) (tsql.Engine, *views.Service) {
	t.Helper()
	ctx := t.Context()
	e := sqltest.DuckDB(t)
	for _, table := range []string{"orders", "daily_revenue"} {
		for n, rows := range map[int]int{1: 100, 2: 105, 3: 90} {
			if table == "daily_revenue" && n == 3 {
				continue
			}
			q := "CREATE TABLE " + views.Physical(table, n) + " AS SELECT range AS id, range * " + strconv.Itoa(n) + " AS amount FROM range(" + strconv.Itoa(rows) + ")"
			if err := e.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: table, Table: table + "__v1"}}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := views.New("w", e, l, opts...)
	if _, err := views.Recover(ctx, s); err != nil {
		t.Fatal(err)
	}
	put := func(table string, n int, state string, run int64) {
		rows, sum, err := views.Fingerprint(ctx, e, views.Physical(table, n))
		if err != nil {
			t.Fatal(err)
		}
		v := views.Version{Target: "w", Table: table, N: n, State: state, BuiltBy: "ann", Backfill: "fix", RunID: run, Rows: rows, Checksum: sum,
			Validation: json.RawMessage(`{"passed": false, "errors": ["orders__v3 lost 10 rows"]}`)}
		if table == "orders" && n == 2 {
			v.DiffID = 42 // the reconcile diff of v2 against v1
		}
		if err := s.Store().Put(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	put("orders", 2, views.StateValidated, 7)
	put("daily_revenue", 2, views.StateValidated, 7)
	put("orders", 3, views.StateValidationFailed, 8)
	return e, s
}

// send posts a form (or, with a JSON body, JSON) without following redirects.
func send(t *testing.T, target, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if strings.HasPrefix(body, "{") || strings.HasPrefix(body, "[") {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
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

func parse(t *testing.T, body string) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// cells is the text of the cells of rows, one space between cells.
func cells(rows *goquery.Selection) string {
	var out []string
	rows.Find("th, td").Each(func(_ int, c *goquery.Selection) { out = append(out, text(c)) })
	return strings.Join(out, " ")
}

func viewSource(t *testing.T, e tsql.Engine, view string) string {
	t.Helper()
	src, err := e.ViewSource(context.Background(), view)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestTablePages(t *testing.T) {
	e, s := versionedWarehouse(t)
	ts := serve(t, server.Options{Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})

	doc := getPage(t, ts.URL+"/tables/orders", http.StatusOK)
	if got := text(doc.Find(`[data-testid="live"] mark`)); got != "v1" {
		t.Errorf("live = %q", got)
	}
	rows := doc.Find(`[data-testid="version-row"]`)
	if rows.Length() != 3 {
		t.Fatalf("%d version rows", rows.Length())
	}
	if doc.Find(`[data-version="v1"] [data-testid="swap-button"]`).Length() != 0 ||
		doc.Find(`[data-version="v2"] [data-testid="swap-button"]`).Length() != 1 {
		t.Error("swap buttons: want one on v2 and none on the live v1")
	}
	if href, _ := doc.Find(`[data-version="v2"] [data-testid="version-diff"]`).Attr("href"); href != "/diffs/42" {
		t.Errorf("diff link of v2 = %q", href)
	}
	if doc.Find(`[data-testid="rollback-button"]`).Length() != 0 {
		t.Error("a rollback button with nothing to roll back")
	}

	t.Run("swap_asks_for_confirmation_stating_every_change", func(t *testing.T) {
		resp, body := send(t, ts.URL+"/tables/orders/swap", "target=w&to=v2")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		d := parse(t, body)
		var changes []string
		d.Find(`[data-testid="change-row"]`).Each(func(_ int, r *goquery.Selection) {
			changes = append(changes, cells(r))
		})
		if strings.Join(changes, "; ") != "orders v1 v2; daily_revenue v1 v2" {
			t.Errorf("changes = %q", changes)
		}
		if src := viewSource(t, e, "orders"); src != "orders__v1" {
			t.Errorf("the confirmation step changed the view: %s", src)
		}
	})

	t.Run("confirmed_swap_publishes_and_redirects", func(t *testing.T) {
		resp, body := send(t, ts.URL+"/tables/orders/swap", "target=w&to=v2&confirm=yes&reason=fix", "X-Trueup-Actor", "ann")
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		loc := resp.Header.Get("Location")
		if !strings.HasPrefix(loc, "/tables/orders?target=w&done=") {
			t.Errorf("Location = %q", loc)
		}
		for _, table := range []string{"orders", "daily_revenue"} {
			if src := viewSource(t, e, table); src != table+"__v2" {
				t.Errorf("%s reads %s", table, src)
			}
		}
		d := getPage(t, ts.URL+loc, http.StatusOK)
		if got := text(d.Find(`[data-testid="flash"]`)); !strings.Contains(got, "orders v1 → v2, daily_revenue v1 → v2") {
			t.Errorf("flash = %q", got)
		}
		if got := text(d.Find(`[data-testid="rollback-button"]`)); got != "Roll back to v1…" {
			t.Errorf("rollback button = %q", got)
		}
		if got := text(d.Find(`[data-testid="publish-row"]`).First()); !strings.Contains(got, "ann") || !strings.Contains(got, "fix") {
			t.Errorf("history row = %q", got)
		}
	})

	t.Run("rollback_confirms_then_restores_both", func(t *testing.T) {
		_, body := send(t, ts.URL+"/tables/daily_revenue/rollback", "target=w")
		if got := cells(parse(t, body).Find(`[data-testid="changes"] tbody tr`)); got != "daily_revenue v2 v1 orders v2 v1" {
			t.Errorf("rollback changes = %q", got)
		}
		resp, body := send(t, ts.URL+"/tables/daily_revenue/rollback", "target=w&confirm=yes&reason=off")
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		if src := viewSource(t, e, "orders"); src != "orders__v1" {
			t.Errorf("orders reads %s", src)
		}
	})

	t.Run("failed_validation_needs_a_written_override", func(t *testing.T) {
		resp, body := send(t, ts.URL+"/tables/orders/swap", "target=w&to=v3&confirm=yes")
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		d := parse(t, body)
		if got := text(d.Find(`[data-testid="confirm-error"]`)); !strings.Contains(got, "orders__v3 lost 10 rows") {
			t.Errorf("error = %q", got)
		}
		if d.Find(`[data-testid="confirm-override"]`).Length() != 1 {
			t.Error("no override field")
		}
		if src := viewSource(t, e, "orders"); src != "orders__v1" {
			t.Errorf("refused swap changed the view: %s", src)
		}
		resp, _ = send(t, ts.URL+"/tables/orders/swap", "target=w&to=v3&confirm=yes&override=finance+accepts+the+loss", "X-Trueup-Actor", "carol")
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("override: status %d", resp.StatusCode)
		}
		d = getPage(t, ts.URL+"/tables/orders?target=w", http.StatusOK)
		got := d.Find(`[data-version="v3"] [data-testid="version-override"]`)
		if !strings.Contains(text(got), "overridden by carol: finance accepts the loss") || !got.HasClass("bad") {
			t.Errorf("override not shown in red: %q", text(got))
		}
	})

	t.Run("bad_input", func(t *testing.T) {
		for _, tc := range []struct {
			path, body string
			status     int
		}{
			{"/tables/orders/swap", "to=v9&confirm=yes", http.StatusNotFound},
			{"/tables/orders/swap", "to=daily_revenue__v2", http.StatusUnprocessableEntity},
			{"/tables/nope/swap", "to=v2", http.StatusNotFound},
			{"/tables/orders/swap", "", http.StatusBadRequest},
			{"/tables/orders/swap", "target=other&to=v2", http.StatusNotFound},
		} {
			if resp, body := send(t, ts.URL+tc.path, tc.body); resp.StatusCode != tc.status {
				t.Errorf("POST %s %s: status %d, want %d: %s", tc.path, tc.body, resp.StatusCode, tc.status, body)
			}
		}
	})
}

func TestTableAPIConflict(t *testing.T) {
	inside, release := make(chan struct{}), make(chan struct{})
	first := true
	e, s := versionedWarehouse(t, views.WithHooks(views.Hooks{AfterIntent: func(views.Publish) {
		if first {
			first = false
			close(inside)
			<-release
		}
	}}))
	ts := serve(t, server.Options{Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})

	done := make(chan string, 1)
	go func() {
		resp, body := send(t, ts.URL+"/api/v1/tables/orders/swap", `{"to": "v2", "reason": "fix"}`, "X-Trueup-Actor", "ann")
		done <- resp.Status + " " + body
	}()
	<-inside
	resp, body := send(t, ts.URL+"/api/v1/tables/daily_revenue/swap", `{"to": "v2"}`, "X-Trueup-Actor", "bob")
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "held by ann") {
		t.Errorf("second swap: %d %s", resp.StatusCode, body)
	}
	var listing struct {
		Busy string `json:"busy"`
	}
	_, lbody := get(t, ts.URL+"/api/v1/tables/orders")
	json.Unmarshal([]byte(lbody), &listing)
	if !strings.Contains(listing.Busy, "held by ann") {
		t.Errorf("listing while busy: %s", lbody)
	}
	close(release)
	if got := <-done; !strings.HasPrefix(got, "200") {
		t.Fatalf("first swap: %s", got)
	}
	if src := viewSource(t, e, "orders"); src != "orders__v2" {
		t.Errorf("orders reads %s", src)
	}

	// The API mirrors the pages: listing, dry run, rollback, errors as JSON.
	_, lbody = get(t, ts.URL+"/api/v1/tables/orders?target=w")
	var full struct {
		Live     string `json:"live"`
		Versions []map[string]any
	}
	if err := json.Unmarshal([]byte(lbody), &full); err != nil || full.Live != "v2" || len(full.Versions) != 3 {
		t.Errorf("listing: %v %s", err, lbody)
	}
	resp, body = send(t, ts.URL+"/api/v1/tables/orders/rollback", url.Values{"dry_run": {"true"}}.Encode())
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"undoes":1`) {
		t.Errorf("dry run: %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, ts.URL+"/api/v1/tables/orders/rollback", `{"reason": "off"}`)
	var p views.Publish
	if err := json.Unmarshal([]byte(body), &p); err != nil || resp.StatusCode != http.StatusOK || p.Actor != "local-operator" || p.Summary() != "orders v2 → v1, daily_revenue v2 → v1" {
		t.Errorf("rollback: %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, ts.URL+"/api/v1/tables/orders/swap", `{"to": "v3"}`)
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, `"error"`) || !strings.Contains(body, "an approver may override") {
		t.Errorf("gate: %d %s", resp.StatusCode, body)
	}
}

// TestUnfinishedVersionsShowTheirState: a version still building or cancelled holds part of a
// table, not an emptied one: its row says so where the rows would be, with no checksum and no
// count against the live version.
func TestUnfinishedVersionsShowTheirState(t *testing.T) {
	_, s := versionedWarehouse(t)
	for n, state := range map[int]string{4: views.StateBuilding, 5: views.StateCancelled} {
		v := views.Version{Target: "w", Table: "orders", N: n, State: state, BuiltBy: "ann", Backfill: "fix", RunID: int64(n)}
		if err := s.Store().Put(t.Context(), v); err != nil {
			t.Fatal(err)
		}
	}
	ts := serve(t, server.Options{Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})
	doc := getPage(t, ts.URL+"/tables/orders", http.StatusOK)
	for _, tc := range []struct{ version, rows string }{
		{"v4", "still building"},
		{"v5", "cancelled, partly built"},
	} {
		row := doc.Find(`[data-testid="version-row"][data-version="` + tc.version + `"]`)
		if got := text(row.Find(`[data-testid="version-rows"]`)); got != tc.rows {
			t.Errorf("%s rows %q, want %q", tc.version, got, tc.rows)
		}
		if n := row.Find(`[data-testid="version-checksum"]`).Length(); n != 0 {
			t.Errorf("%s shows a checksum chip with nothing in it", tc.version)
		}
		if got := text(row.Find(`[data-testid="version-vs-live"]`)); got != "" {
			t.Errorf("%s vs live %q, want nothing", tc.version, got)
		}
	}
	if got := text(doc.Find(`[data-version="v2"] [data-testid="version-rows"]`)); got != "105" {
		t.Errorf("a built version's rows %q, want 105", got)
	}
}

// TestVersionCountsSayWhenCounted: the versions table's rows are counted now, and its note says
// when a checksum was recorded and when it is compared.
func TestVersionCountsSayWhenCounted(t *testing.T) {
	_, s := versionedWarehouse(t)
	ts := serve(t, server.Options{Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})
	doc := getPage(t, ts.URL+"/tables/orders", http.StatusOK)
	for testid, want := range map[string]string{
		"versions-rows-heading":    "Rows",
		"versions-vs-live-heading": "Vs live",
	} {
		if got := text(doc.Find(`[data-testid="` + testid + `"]`)); got != want {
			t.Errorf("%s %q, want %q", testid, got, want)
		}
	}
	if got := text(doc.Find(`[data-testid="versions-counted"]`)); !strings.Contains(got, "Rows are counted now") || !strings.Contains(got, "shown only while that version was not written since") {
		t.Errorf("the note under the versions %q", got)
	}
}

// TestCalendarOfNoTableIsNotFound: the calendar of a table, or a target, that does not exist is
// a 404, as the table's page is, not an empty calendar.
func TestCalendarOfNoTableIsNotFound(t *testing.T) {
	_, s := versionedWarehouse(t)
	ts := serve(t, server.Options{Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})
	for path, want := range map[string]int{
		"/tables/orders/calendar": http.StatusOK, "/tables/nope/calendar": http.StatusNotFound,
		"/tables/orders/calendar?target=nope": http.StatusNotFound,
	} {
		if resp, body := get(t, ts.URL+path); resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d: %.200s", path, resp.StatusCode, want, body)
		}
	}
}
