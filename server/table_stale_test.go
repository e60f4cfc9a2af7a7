package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"trueup/ops"
	"trueup/server"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

func july(day int) time.Time { return time.Date(2026, 7, day, 0, 0, 0, 0, time.UTC) }

// staleWarehouse is orders partitioned by day (July 1–20, 10 rows a day) with v1 live, v2 built
// by backfill fix_dedup_bug with scope July 3 and 4, swapped in and rolled back; then a stale
// writer still on v2 wrote 3 rows on July 22 (outside the scope: catch-up carries them) and 2 on
// July 3 (inside it: catch-up does not carry them, they need an acknowledgement).
func staleWarehouse(t *testing.T) (tsql.Engine, *views.Service) {
	t.Helper()
	ctx := t.Context()
	e := sqltest.DuckDB(t)
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate}, {Name: "region", Kind: tsql.TypeString}, {Name: "amount", Kind: tsql.TypeInt}}
	if err := e.CreateTable(ctx, "orders__v1", cols, "d", []string{"id"}); err != nil {
		t.Fatal(err)
	}
	rows := make([][]any, 200)
	for i := range rows {
		rows[i] = []any{int64(i + 1), july(1 + i%20), "EMEA", int64(i % 97)}
	}
	insert(t, e, "orders__v1", rows)
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v1"}}); err != nil {
		t.Fatal(err)
	}
	s := views.New("w", e, testLedger(t))
	if _, err := s.Versions(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	// v2 as a backfill run builds it: July 3 and 4 rebuilt, the other days carried from v1.
	scope := []time.Time{july(3), july(4)}
	if err := e.CreateTableLike(ctx, "orders__v2", "orders__v1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Store().RecordBasis(ctx, e, "w", "orders", 2, "orders__v1", "", "d", tsql.TypeDate, "day", scope); err != nil {
		t.Fatal(err)
	}
	var ws []tsql.Window
	for _, d := range scope {
		ws = append(ws, tsql.Window{Column: "d", Type: tsql.TypeDate, Start: d, End: d.AddDate(0, 0, 1)})
	}
	if err := e.CopyPartitions(ctx, "orders__v2", "orders__v1", "d", ws); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if _, err := e.ReplacePartition(ctx, "orders__v2", w, "SELECT id, d, region, amount + 1000 AS amount FROM orders__v1"); err != nil {
			t.Fatal(err)
		}
	}
	n, sum, err := views.Fingerprint(ctx, e, "orders__v2")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store().Put(ctx, views.Version{Target: "w", Table: "orders", N: 2, State: views.StateValidated, BuiltBy: "ann",
		Backfill: "fix_dedup_bug", RunID: 7, Rows: n, Checksum: sum}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"}); err != nil {
		t.Fatal(err)
	}
	staleWrite(t, e, july(22), 4000, 3)
	staleWrite(t, e, july(3), 3000, 2)
	return e, s
}

// staleWrite is a writer still on orders__v2 writing n rows of day, ids from first on.
func staleWrite(t *testing.T, e tsql.Engine, day time.Time, first, n int) {
	t.Helper()
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(first + i), day, "NA", int64(5)}
	}
	insert(t, e, "orders__v2", rows)
}

func insert(t *testing.T, e tsql.Engine, table string, rows [][]any) {
	t.Helper()
	if err := e.Insert(context.Background(), table, []string{"id", "d", "region", "amount"}, rows); err != nil {
		t.Fatal(err)
	}
}

// readersSee counts the rows of orders (the view) with ids from first to last.
func readersSee(t *testing.T, e tsql.Engine, first, last int) int64 {
	t.Helper()
	res, err := e.Query(context.Background(), "SELECT count(*) FROM orders WHERE id BETWEEN ? AND ?", first, last)
	if err != nil {
		t.Fatal(err)
	}
	return tsql.AsInt64(res.Rows[0][0])
}

// staleAPI is what GET /api/v1/tables/orders/stale reports: each version and its partitions
// outside and inside the backfill's scope.
func staleAPI(t *testing.T, base string, header ...string) string {
	t.Helper()
	resp, body := get(t, base+"/api/v1/tables/orders/stale?target=w", header...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stale API: %d %s", resp.StatusCode, body)
	}
	var out []views.StaleVersion
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, sv := range out {
		lines = append(lines, views.VersionName(sv.Version)+" outside: "+views.CarriedList(sv.Partitions)+"; inside: "+views.CarriedList(sv.InScope))
	}
	return strings.Join(lines, " | ")
}

// TestStalePartitionsStayOnTheTablePage: the versions page names every partition the stale check
// reports. The catch-up button says what it carries and shows it before it does; once it carried
// July 22, the page goes on naming July 3 (inside the scope, not carried), as the stale API does,
// and offers to acknowledge it, with a reason; acknowledged, nothing is reported any more.
func TestStalePartitionsStayOnTheTablePage(t *testing.T) {
	e, s := staleWarehouse(t)
	ts := serve(t, server.Options{Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})

	doc := getPage(t, ts.URL+"/tables/orders?target=w", http.StatusOK)
	if got := text(doc.Find(`[data-testid="stale-version"][data-version="v2"]`)); !strings.Contains(got, "2026-07-03 +2 rows") || !strings.Contains(got, "2026-07-22 +3 rows") {
		t.Errorf("stale line = %q, want July 3 and July 22", got)
	}
	if got := text(doc.Find(`[data-testid="catch-up-button"]`)); got != "Carry 2026-07-22 +3 rows into orders__v1…" {
		t.Errorf("catch-up button = %q", got)
	}
	if got := text(doc.Find(`[data-testid="acknowledge-button"]`)); got != "Acknowledge 2026-07-03 +2 rows…" {
		t.Errorf("acknowledge button = %q", got)
	}

	// A version holding rows readers never saw is not retired, from the page as from the API.
	resp, body := send(t, ts.URL+"/tables/orders/retire", "target=w&version=v2&confirm=yes&reason=space")
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("retire v2 holding stale rows: %d, want 409: %s", resp.StatusCode, body)
	}
	if got := text(parse(t, body).Find(`[data-testid="retire-error"]`)); !strings.Contains(got, "orders v2 holds rows readers never saw (2026-07-22 +3 rows, 2026-07-03 +2 rows): retiring it would drop them for good") {
		t.Errorf("retire refusal = %q", got)
	}
	if v, _ := parse(t, body).Find(`[data-testid="confirm-reason"]`).Attr("value"); v != "space" {
		t.Errorf("the reason typed is %q on the refusal, want it kept", v)
	}

	// The catch-up button shows what it will carry, and carries nothing yet.
	resp, body = send(t, ts.URL+"/tables/orders/catch-up", "target=w")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("catch-up button: %d %s", resp.StatusCode, body)
	}
	d := parse(t, body)
	if got := cells(d.Find(`[data-testid="catch-up-carry-row"]`)); got != "orders__v2 2026-07-22 +3 rows" {
		t.Errorf("the confirmation carries %q", got)
	}
	if got := text(d.Find(`[data-testid="catch-up-left"]`)); !strings.Contains(got, "2026-07-03 +2 rows") || !strings.Contains(got, "not carried: backfill fix_dedup_bug rebuilt 2026-07-03") {
		t.Errorf("the confirmation leaves %q, want July 3 named with why", got)
	}
	if n := readersSee(t, e, 3000, 4999); n != 0 {
		t.Fatalf("readers see %d stale rows before the catch-up was confirmed", n)
	}

	// Confirmed after the writer wrote July 22 again: shown again as it stands, nothing carried.
	form := confirmForm(t, body)
	staleWrite(t, e, july(22), 4100, 1)
	resp, body = send(t, ts.URL+"/tables/orders/catch-up", form)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("a confirmation of what changed since: %d, want 409: %s", resp.StatusCode, body)
	}
	d = parse(t, body)
	if got := text(d.Find(`[data-testid="catch-up-error"]`)); !strings.Contains(got, "changed since you looked") {
		t.Errorf("error = %q", got)
	}
	if got := cells(d.Find(`[data-testid="catch-up-carry-row"]`)); got != "orders__v2 2026-07-22 +4 rows" {
		t.Errorf("the confirmation shown again carries %q, want +4 rows", got)
	}
	if n := readersSee(t, e, 3000, 4999); n != 0 {
		t.Fatalf("readers see %d stale rows after a refused confirmation", n)
	}

	resp, body = send(t, ts.URL+"/tables/orders/catch-up", confirmForm(t, body))
	if resp.StatusCode != http.StatusSeeOther || !strings.HasSuffix(resp.Header.Get("Location"), "&caught=1") {
		t.Fatalf("catch-up confirmed: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	caught := resp.Header.Get("Location")
	if n := readersSee(t, e, 4000, 4999); n != 4 {
		t.Errorf("readers see %d of the 4 rows written on July 22", n)
	}
	if n := readersSee(t, e, 3000, 3999); n != 0 {
		t.Errorf("readers see %d rows of July 3 inside the scope: catch-up must not carry them", n)
	}

	// After the catch-up: the page still names July 3, as the stale API does.
	if got := staleAPI(t, ts.URL); got != "v2 outside: ; inside: 2026-07-03 +2 rows" {
		t.Fatalf("stale API after the catch-up: %q", got)
	}
	doc = getPage(t, ts.URL+caught, http.StatusOK)
	if got := text(doc.Find(`[data-testid="flash"]`)); got != "Caught up: 1 partition carried into the live version." {
		t.Errorf("flash = %q", got)
	}
	if got := text(doc.Find(`[data-testid="stale-version"]`)); !strings.Contains(got, "orders__v2 changed after it stopped being live: 2026-07-03 +2 rows not visible to readers") {
		t.Errorf("after the catch-up the page says %q, want July 3 still named", got)
	}
	if got := text(doc.Find(`[data-testid="stale-todo"]`)); !strings.Contains(got, "trueup catch-up orders --acknowledge") {
		t.Errorf("what to do = %q", got)
	}
	if doc.Find(`[data-testid="catch-up-button"]`).Length() != 0 {
		t.Error("a catch-up button with nothing left to carry")
	}
	if got := text(doc.Find(`[data-testid="acknowledge-button"]`)); got != "Acknowledge 2026-07-03 +2 rows…" {
		t.Fatalf("acknowledge button = %q", got)
	}

	// Acknowledge: a confirmation with a required reason.
	_, body = send(t, ts.URL+"/tables/orders/catch-up", "target=w&acknowledge=yes")
	d = parse(t, body)
	if got := text(d.Find(`[data-testid="catch-up-left"]`)); !strings.Contains(got, "2026-07-03 +2 rows") {
		t.Errorf("the acknowledgement is about %q", got)
	}
	if d.Find(`[data-testid="confirm-reason"]`).Length() != 1 {
		t.Fatal("no reason field on the acknowledgement")
	}
	form = confirmForm(t, body)
	resp, body = send(t, ts.URL+"/tables/orders/catch-up", form)
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(text(parse(t, body).Find(`[data-testid="catch-up-error"]`)), "Say how the rows were dealt with") {
		t.Errorf("acknowledge without a reason: %d %s", resp.StatusCode, body)
	}
	if got := staleAPI(t, ts.URL); got != "v2 outside: ; inside: 2026-07-03 +2 rows" {
		t.Fatalf("stale API after an acknowledgement without a reason: %q", got)
	}
	v, _ := url.ParseQuery(form)
	v.Set("reason", "recomputed into v1 by hand")
	resp, body = send(t, ts.URL+"/tables/orders/catch-up", v.Encode())
	if resp.StatusCode != http.StatusSeeOther || !strings.HasSuffix(resp.Header.Get("Location"), "&acknowledged=1") {
		t.Fatalf("acknowledge: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	acknowledged := resp.Header.Get("Location")
	if got := staleAPI(t, ts.URL); got != "" {
		t.Errorf("stale API after the acknowledgement: %q, want nothing", got)
	}
	doc = getPage(t, ts.URL+acknowledged, http.StatusOK)
	if got := text(doc.Find(`[data-testid="flash"]`)); got != "Acknowledged: 1 partition inside a backfill's scope no longer reported." {
		t.Errorf("flash = %q", got)
	}
	if doc.Find(`[data-testid="stale"]`).Length() != 0 {
		t.Errorf("stale banner after the acknowledgement: %q", text(doc.Find(`[data-testid="stale"]`)))
	}
	// The same confirmation pressed again: what it showed is gone, so it is shown again (409),
	// saying there is nothing to acknowledge, with no button.
	resp, body = send(t, ts.URL+"/tables/orders/catch-up", v.Encode())
	d = parse(t, body)
	if resp.StatusCode != http.StatusConflict || d.Find(`[data-testid="catch-up-nothing"]`).Length() != 1 || d.Find(`[data-testid="confirm-button"]`).Length() != 0 {
		t.Errorf("the acknowledgement pressed twice: %d %s", resp.StatusCode, body)
	}
	doc = getPage(t, ts.URL+"/tables/orders?target=w&acknowledged=0", http.StatusOK)
	if got := text(doc.Find(`[data-testid="flash"]`)); got != "Nothing to acknowledge: nothing was recorded." {
		t.Errorf("flash of an acknowledgement of nothing = %q", got)
	}
	// Nothing holds rows readers never saw now: v2 retires.
	if resp, body := send(t, ts.URL+"/tables/orders/retire", "target=w&version=v2&confirm=yes&reason=space"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("retire v2 once caught up and acknowledged: %d %s", resp.StatusCode, body)
	}
}

// versionState is the state GET /api/v1/tables/orders gives version name, "" when not listed.
func versionState(t *testing.T, base, name string) string {
	t.Helper()
	resp, body := get(t, base+"/api/v1/tables/orders?target=w")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("versions API: %d %s", resp.StatusCode, body)
	}
	var j views.ListingJSON
	if err := json.Unmarshal([]byte(body), &j); err != nil {
		t.Fatal(err)
	}
	for _, v := range j.Versions {
		if v.Name() == name {
			return v.State
		}
	}
	return ""
}

// TestRetireFromTheTablePage: each old version has a Retire button that asks first, with a
// required reason; confirmed, the version is retired and its table dropped. The live version
// is refused with the API's words.
func TestRetireFromTheTablePage(t *testing.T) {
	e, s := versionedWarehouse(t)
	ts := serve(t, server.Options{Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})

	doc := getPage(t, ts.URL+"/tables/orders?target=w", http.StatusOK)
	var offered []string
	doc.Find(`[data-testid="retire-form"]`).Each(func(_ int, f *goquery.Selection) { offered = append(offered, f.AttrOr("data-version", "")) })
	if strings.Join(offered, " ") != "v2 v3" {
		t.Errorf("retire buttons on %q, want v2 v3 (not the live v1)", offered)
	}

	resp, body := send(t, ts.URL+"/tables/orders/retire", "target=w&version=v3")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("retire button: %d %s", resp.StatusCode, body)
	}
	d := parse(t, body)
	if got := text(d.Find(`[data-testid="retire-heading"]`)); got != "Retire orders v3?" {
		t.Errorf("heading = %q", got)
	}
	if got := text(d.Find(`[data-testid="retire-what"]`)); !strings.Contains(got, "Retiring drops orders__v3 (validation-failed, 90 rows, built by backfill fix") {
		t.Errorf("the confirmation says %q", got)
	}
	if st := versionState(t, ts.URL, "v3"); st != views.StateValidationFailed {
		t.Fatalf("v3 is %q after the button alone, want it untouched", st)
	}

	form := confirmForm(t, body)
	resp, body = send(t, ts.URL+"/tables/orders/retire", form)
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(text(parse(t, body).Find(`[data-testid="retire-error"]`)), "Say why the version is retired") {
		t.Errorf("retire without a reason: %d %s", resp.StatusCode, body)
	}
	if st := versionState(t, ts.URL, "v3"); st != views.StateValidationFailed {
		t.Fatalf("v3 is %q after a confirmation without a reason", st)
	}
	v, _ := url.ParseQuery(form)
	v.Set("reason", "failed validation, not needed")
	resp, body = send(t, ts.URL+"/tables/orders/retire", v.Encode())
	if resp.StatusCode != http.StatusSeeOther || !strings.HasSuffix(resp.Header.Get("Location"), "&retired=v3") {
		t.Fatalf("retire confirmed: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	if st := versionState(t, ts.URL, "v3"); st != views.StateRetired {
		t.Errorf("v3 is %q, want retired", st)
	}
	if _, err := e.Query(t.Context(), "SELECT count(*) FROM orders__v3"); err == nil {
		t.Error("orders__v3 still exists after the retire")
	}
	doc = getPage(t, ts.URL+"/tables/orders?target=w&retired=v3", http.StatusOK)
	if got := text(doc.Find(`[data-testid="flash"]`)); got != "Retired v3: orders__v3 was dropped." {
		t.Errorf("flash = %q", got)
	}
	if doc.Find(`[data-testid="retire-form"][data-version="v3"]`).Length() != 0 {
		t.Error("a retire button on the retired v3")
	}

	// The live version, posted by hand: refused as the API refuses it.
	resp, body = send(t, ts.URL+"/tables/orders/retire", "target=w&version=v1&confirm=yes&reason=oops")
	if resp.StatusCode != http.StatusConflict || !strings.Contains(text(parse(t, body).Find(`[data-testid="retire-error"]`)), "orders v1 is live: it cannot be retired") {
		t.Errorf("retire the live v1: %d %s", resp.StatusCode, body)
	}
	_, api := send(t, ts.URL+"/api/v1/tables/orders/retire", `{"version": "v1"}`)
	if !strings.Contains(api, "orders v1 is live: it cannot be retired") {
		t.Errorf("the API says %s", api)
	}
	if src := viewSource(t, e, "orders"); src != "orders__v1" {
		t.Errorf("orders reads %s", src)
	}
}

// TestStaleAndRetireButtonsFollowTheRole: everyone who may read the page is told of the rows
// readers do not see; only an approver, who may catch up and retire, is offered the buttons, and
// the server refuses the others whatever they post. An approver acknowledges from the page.
func TestStaleAndRetireButtonsFollowTheRole(t *testing.T) {
	_, s := staleWarehouse(t)
	ts := serve(t, server.Options{Auth: testAuth(false), Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})
	for _, tc := range []struct {
		who  string
		want string // the forms offered
	}{
		{"vera", ""},
		{"otto", ""},
		{"ann", "catch-up-form acknowledge-form retire-form"},
	} {
		b := newBrowser(t, ts.URL)
		b.login(tc.who)
		resp, doc := b.get("/tables/orders?target=w")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", tc.who, resp.StatusCode)
		}
		if got := text(doc.Find(`[data-testid="stale-version"]`)); !strings.Contains(got, "2026-07-03 +2 rows") {
			t.Errorf("%s is told %q, want the stale rows named", tc.who, got)
		}
		var got []string
		doc.Find(`[data-testid="catch-up-form"], [data-testid="acknowledge-form"], [data-testid="retire-form"]`).Each(func(_ int, f *goquery.Selection) {
			if id := f.AttrOr("data-testid", ""); len(got) == 0 || got[len(got)-1] != id {
				got = append(got, id)
			}
		})
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s is offered %q, want %q", tc.who, got, tc.want)
		}
		if tc.who == "ann" {
			continue
		}
		for _, post := range []url.Values{
			{"target": {"w"}, "acknowledge": {"yes"}, "confirm": {"yes"}, "reason": {"x"}},
			{"target": {"w"}, "confirm": {"yes"}},
		} {
			if resp, _ := b.post("/tables/orders/catch-up", post, true); resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s posts a catch-up %v: %d, want 403", tc.who, post, resp.StatusCode)
			}
		}
		if resp, _ := b.post("/tables/orders/retire", url.Values{"target": {"w"}, "version": {"v2"}, "confirm": {"yes"}, "reason": {"x"}}, true); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s posts a retire: %d, want 403", tc.who, resp.StatusCode)
		}
	}
	vera := []string{"Authorization", "Bearer " + testTokens["vera"][0]}
	if got := staleAPI(t, ts.URL, vera...); got != "v2 outside: 2026-07-22 +3 rows; inside: 2026-07-03 +2 rows" {
		t.Fatalf("after the refused posts the stale check reports %q, want it unchanged", got)
	}

	ann := newBrowser(t, ts.URL)
	ann.login("ann")
	ann.get("/tables/orders?target=w")
	resp, body := ann.post("/tables/orders/catch-up", url.Values{"target": {"w"}, "acknowledge": {"yes"}}, true)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ann's acknowledge button: %d %s", resp.StatusCode, body)
	}
	form, _ := url.ParseQuery(confirmForm(t, body))
	form.Set("reason", "not wanted")
	if resp, body := ann.post("/tables/orders/catch-up", form, true); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("ann acknowledges: %d %s", resp.StatusCode, body)
	}
	if got := staleAPI(t, ts.URL, vera...); got != "v2 outside: 2026-07-22 +3 rows; inside: " {
		t.Errorf("after ann's acknowledgement the stale check reports %q, want July 22 only", got)
	}
}
