package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// pageDoc fetches a page of a served demo, which must answer 200.
func pageDoc(t *testing.T, url string) *goquery.Document {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func pageText(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

// TestBackfillPageFollowsPublish: after the versions a run built are swapped live the backfill's
// page says since when and by which swap, and after a rollback by which rollback they were taken
// back, instead of offering to publish them as if nothing happened.
func TestBackfillPageFollowsPublish(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	srv := serveDemo(t, demoDir(t))
	run := func(args ...string) {
		t.Helper()
		if code, out, errs := cli(t, append([]string{"--server", srv.url}, args...)...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	show := func() *goquery.Document { return pageDoc(t, srv.url+"/backfills/fix_dedup_bug") }
	publishLinks := func(doc *goquery.Document) int {
		return doc.Find("[data-testid=verdict-publish], [data-testid=review-publish]").Length()
	}

	run("backfill", "run", "fix_dedup_bug")
	doc := show()
	if publishLinks(doc) == 0 || doc.Find("[data-testid=run-published]").Length() != 0 {
		t.Fatalf("validated, not swapped: want the publish links and no published line:\n%s", pageText(doc.Find("#run-verdict")))
	}

	run("swap", "orders", "--to", "v2", "--reason", "dedup fix")
	doc = show()
	got := pageText(doc.Find("[data-testid=run-published]"))
	if publishLinks(doc) != 0 || !strings.HasPrefix(got, "live since 20") || !strings.Contains(got, "(swap #1)") {
		t.Errorf("after the swap: published line %q, %d publish links; want live since … (swap #1) and none", got, publishLinks(doc))
	}

	run("rollback", "orders", "--reason", "check")
	doc = show()
	got = pageText(doc.Find("[data-testid=run-published]"))
	if publishLinks(doc) != 0 || !strings.HasPrefix(got, "rolled back by rollback #2 at 20") || !strings.Contains(got, "took back swap #1") {
		t.Errorf("after the rollback: published line %q, %d publish links; want rolled back by rollback #2 at … and none", got, publishLinks(doc))
	}
}

// TestBackfillListShowsRuns: the backfills list shows, for every backfill, the tables it writes
// and its latest run — state, when, and the partitions built of each table — including the
// downstream backfills, whose table an upstream run refreshed (they said "never run"); the past
// runs by reason count every table a run wrote.
func TestBackfillListShowsRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	srv := serveDemo(t, demoDir(t))
	if code, out, errs := cli(t, "--server", srv.url, "backfill", "run", "fix_dedup_bug"); code != 0 {
		t.Fatalf("backfill run: exit %d\n%s%s", code, out, errs)
	}
	doc := pageDoc(t, srv.url+"/backfills")
	row := func(name string) *goquery.Selection {
		return doc.Find(`[data-testid=backfill-row][data-backfill=` + name + `]`)
	}
	counts := func(r *goquery.Selection) string {
		var out []string
		r.Find("[data-testid=backfill-table-count]").Each(func(_ int, s *goquery.Selection) {
			out = append(out, s.AttrOr("data-table", "")+" "+pageText(s))
		})
		return strings.Join(out, ", ")
	}
	up := row("fix_dedup_bug")
	if got, want := counts(up), "orders 9/9, daily_revenue 9/9, customer_ltv 9/9, region_summary 9/9"; got != want {
		t.Errorf("fix_dedup_bug writes %q, want %q", got, want)
	}
	if got := pageText(up.Find("[data-testid=backfill-latest]")); !strings.HasPrefix(got, "run 1: validated 20") {
		t.Errorf("fix_dedup_bug latest run %q, want run 1: validated and when", got)
	}
	for _, name := range []string{"daily_revenue", "customer_ltv", "region_summary"} {
		r := row(name)
		if got := r.AttrOr("data-state", ""); got != "validated" {
			t.Errorf("%s: state %q, want validated (refreshed by run 1 of fix_dedup_bug)", name, got)
		}
		if got := pageText(r.Find("[data-testid=backfill-latest-via]")); got != "with fix_dedup_bug" {
			t.Errorf("%s: via %q", name, got)
		}
		if got, want := counts(r), name+" 9/9"; got != want {
			t.Errorf("%s: counts %q, want %q", name, got, want)
		}
		if r.Find("[data-testid=backfill-latest-when]").Length() != 1 {
			t.Errorf("%s: no time of the latest run", name)
		}
	}
	var reason []string
	doc.Find(`[data-testid=reason-row][data-reason=bug] td`).Each(func(_ int, s *goquery.Selection) { reason = append(reason, pageText(s)) })
	if got := strings.Join(reason, " "); got != "bug 1 4" {
		t.Errorf("past runs by reason: %q, want bug 1 run 4 tables", got)
	}
}

// TestCalendarColoursWhatReadersSee: a table's calendar colours its days by the versions
// readers see now. A run swapped in, rolled back and swapped in again is live (an older swap's
// rollback coloured it undone); a rule whose latest verdict was given before a rollback (the
// rollback ran where no rules rerun after it, as the CLI does) gives no colour, as that verdict
// was on the version rolled back, and says so.
func TestCalendarColoursWhatReadersSee(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	cells := func(doc *goquery.Document) map[string]int {
		m := map[string]int{}
		doc.Find("[data-testid=calendar-row]").Each(func(_ int, r *goquery.Selection) {
			r.Find("[data-day]").Each(func(_ int, c *goquery.Selection) {
				m[r.AttrOr("data-name", "")+" "+c.AttrOr("data-state", "")]++
			})
		})
		return m
	}
	local := func(dir string, steps ...[]string) {
		t.Helper()
		for _, args := range steps {
			if code, out, errs := cli(t, append([]string{"--config", dir + "/trueup.yaml"}, args...)...); code > 1 {
				t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
			}
		}
	}
	calendar := "/tables/daily_revenue/calendar?target=warehouse"

	t.Run("swapped_in_again", func(t *testing.T) {
		dir := demoDir(t)
		local(dir, []string{"backfill", "run", "fix_dedup_bug"}, []string{"swap", "orders", "--to", "v2", "--reason", "fix"},
			[]string{"rollback", "orders", "--reason", "check"}, []string{"swap", "orders", "--to", "v2", "--reason", "fix again"},
			[]string{"check", "--rule", "matches_raw"})
		got := cells(pageDoc(t, serveDemo(t, dir).url+calendar))
		if got["fix_dedup_bug run 1 live"] != 9 || got["fix_dedup_bug run 1 undone"] != 0 || got["matches_raw pass"] != 92 {
			t.Errorf("daily_revenue's calendar with v2 live again: %v", got)
		}
	})
	// A day the pipeline wrote after the newest diff and the rules' run is on the calendar too
	// (its days were only those of the newest diff and of failing partitions).
	t.Run("a_day_written_since", func(t *testing.T) {
		dir := demoDir(t)
		local(dir, []string{"backfill", "run", "fix_dedup_bug"}, []string{"swap", "orders", "--to", "v2", "--reason", "fix"},
			[]string{"check", "--rule", "matches_raw"})
		execSQL(t, "duckdb:"+filepath.Join(dir, "warehouse.duckdb"), `INSERT INTO daily_revenue__v2 SELECT CAST('2026-09-02' AS DATE), order_count, customer_count, revenue
			FROM daily_revenue__v2 WHERE order_date = CAST('2026-08-31' AS DATE)`)
		doc := pageDoc(t, serveDemo(t, dir).url+calendar)
		if n := doc.Find(`[data-testid=calendar-row][data-name=matches_raw] [data-day="2026-09-02"]`).Length(); n != 1 {
			t.Errorf("matches_raw's row has %d cells for 2026-09-02, written after the diff and the check; want 1", n)
		}
		if got := cells(doc); got["matches_raw pass"]+got["matches_raw "] != 93 {
			t.Errorf("daily_revenue's calendar with a day written since: %v, want 93 days", got)
		}
	})
	t.Run("rolled_back_after_the_rules_ran", func(t *testing.T) {
		dir := demoDir(t)
		local(dir, []string{"backfill", "run", "fix_dedup_bug"}, []string{"swap", "orders", "--to", "v2", "--reason", "fix"},
			[]string{"check", "--rule", "matches_raw"}, []string{"rollback", "orders", "--reason", "check"})
		srv := serveDemo(t, dir)
		doc := pageDoc(t, srv.url+calendar)
		got := cells(doc)

		if got["fix_dedup_bug run 1 undone"] != 9 || got["matches_raw pass"] != 0 || got["matches_raw "] != 92 {
			t.Errorf("daily_revenue's calendar after the rollback: %v", got)
		}
		note := pageText(doc.Find(`[data-testid=calendar-row][data-name=matches_raw] small`))
		if note != "ran before rollback #2: run it again for what readers see now" {
			t.Errorf("matches_raw's note %q", note)
		}
	})
}

// TestDownstreamBackfillPage: a backfill that only refreshes a downstream table shows what its
// transform computes (its description: header) and which backfill runs it, with the newest run
// that refreshed its table, instead of a plan of four blocking findings about a scope it does
// not have; its dry run is refused with one sentence that says what to run instead.
func TestDownstreamBackfillPage(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	dir := demoDir(t)
	want := "daily_revenue is refreshed as a downstream table of fix_dedup_bug and has no scope of its own: plan, dry-run or run fix_dedup_bug"
	code, out, errs := cli(t, "--config", dir+"/trueup.yaml", "backfill", "dry-run", "daily_revenue")
	if code != 2 || !strings.Contains(out, want) || strings.Contains(out, "no objective") || !strings.Contains(errs, "blocked by 1 finding,") {
		t.Errorf("dry-run daily_revenue: exit %d, want 2 and one finding %q:\n%s%s", code, want, out, errs)
	}
	srv := serveDemo(t, dir)
	show := func() *goquery.Document { return pageDoc(t, srv.url+"/backfills/daily_revenue") }
	doc := show()
	if got := pageText(doc.Find("[data-testid=plan-description]")); got != "Refreshes daily_revenue from orders for the partitions an upstream backfill rebuilt." {
		t.Errorf("description %q", got)
	}
	if got := pageText(doc.Find("[data-testid=refreshed-by-link]")); got != "fix_dedup_bug" {
		t.Errorf("refreshed by %q", got)
	}
	if n := doc.Find("[data-testid=plan], [data-testid=dry-run], [data-testid=run]").Length(); n != 0 {
		t.Errorf("%d plan sections or run buttons on a downstream backfill's page", n)
	}
	if got := pageText(doc.Find("[data-testid=latest-refresh]")); !strings.HasPrefix(got, "Not refreshed yet") {
		t.Errorf("latest refresh before any run: %q", got)
	}
	resp, err := http.PostForm(srv.url+"/backfills/daily_revenue/dry-run", nil)
	if err != nil {
		t.Fatal(err)
	}
	dry, err := goquery.NewDocumentFromReader(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := pageText(dry.Find("[data-testid=dry-run-verdict]")); got != "Not run: the plan is blocked. Nothing was computed or written." {
		t.Errorf("dry run verdict %q", got)
	}
	if got := pageText(dry.Find("[data-testid=dry-run-note]")); !strings.Contains(got, want) {
		t.Errorf("dry run notes %q, want %q", got, want)
	}

	if code, out, errs := cli(t, "--server", srv.url, "backfill", "run", "fix_dedup_bug"); code != 0 {
		t.Fatalf("backfill run: exit %d\n%s%s", code, out, errs)
	}
	if got := pageText(show().Find("[data-testid=latest-refresh]")); !strings.HasPrefix(got, "fix_dedup_bug run 1: validated, built daily_revenue v2: 9 of 9 partitions, 20") {
		t.Errorf("latest refresh after the upstream run: %q", got)
	}
}
