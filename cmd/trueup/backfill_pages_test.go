package main

import (
	"net/http"
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
