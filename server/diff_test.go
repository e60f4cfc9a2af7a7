package server_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"

	"trueup/ledger"
	"trueup/reconcile"
	"trueup/server"
	"trueup/sql/sqltest"
)

// storedDiff reconciles two versions of a small orders table (one order more on 2026-07-02, one
// amount changed on 2026-07-03, 2026-07-04 new) against "inside 2026-07-02 rows +0..10%" and
// keeps the result in a ledger.
func storedDiff(t *testing.T) (*reconcile.Store, int64) {
	t.Helper()
	ctx := t.Context()
	e := sqltest.DuckDB(t)
	for _, q := range []string{
		"CREATE TABLE orders__v1 AS SELECT range AS id, DATE '2026-07-01' + CAST(range % 3 AS INTEGER) AS d, CAST(range * 1.5 AS DECIMAL(18,2)) AS amount FROM range(30)",
		"CREATE TABLE orders__v2 AS SELECT id, d, CASE WHEN id = 5 THEN 99 ELSE amount END AS amount FROM orders__v1",
		"INSERT INTO orders__v2 VALUES (100, DATE '2026-07-02', 7), (101, DATE '2026-07-04', 8)",
	} {
		if err := e.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exp, err := reconcile.ParseExpectations("inside 2026-07-02 rows +0..10%; outside identical")
	if err != nil {
		t.Fatal(err)
	}
	res, err := reconcile.Diff(ctx, reconcile.Spec{
		Old: reconcile.Side{Engine: e, Relation: "orders__v1", Target: "warehouse"},
		New: reconcile.Side{Engine: e, Relation: "orders__v2", Target: "warehouse"},
		Key: []string{"id"}, Partition: "d", Measures: []string{"amount"}, Expect: exp,
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	store := reconcile.NewStore(l)
	id, err := store.Save(ctx, res, "backfill fix dry-run", "ann")
	if err != nil {
		t.Fatal(err)
	}
	return store, id
}

func TestDiffPages(t *testing.T) {
	store, id := storedDiff(t)
	ts := serve(t, server.Options{Diffs: store})

	t.Run("diff_page", func(t *testing.T) {
		doc := getPage(t, ts.URL+"/diffs/1", http.StatusOK)
		if got := text(doc.Find(`[data-testid="diff-title"]`)); got != "Diff 1" {
			t.Errorf("title %q", got)
		}
		if met, _ := doc.Find(`[data-testid="diff-verdict"]`).Attr("data-met"); met != "false" {
			t.Errorf("verdict data-met %q, want false (07-03 and 07-04 were to stay identical)", met)
		}
		var rows []string
		doc.Find(`[data-testid="diff-row"]`).Each(func(_ int, s *goquery.Selection) {
			p, _ := s.Attr("data-partition")
			v, _ := s.Attr("data-verdict")
			rows = append(rows, p+" "+v+" "+text(s.Find(`[data-testid="diff-pct"]`)))
		})
		want := []string{"2026-07-02 expected +10.0%", "2026-07-03 unexpected 0%", "2026-07-04 unexpected new"}
		if diff := cmp.Diff(want, rows); diff != "" {
			t.Errorf("partition rows (-want +got):\n%s", diff)
		}
		if !strings.Contains(text(doc.Find("body")), "1 unchanged partitions not listed") {
			t.Error("the unchanged partition is neither listed nor counted")
		}
		bars := doc.Find(`[data-testid="diff-chart"] svg rect[data-partition]`)
		if bars.Length() != 4 {
			t.Errorf("chart has %d partition bars, want 4", bars.Length())
		}
		if fill, _ := doc.Find(`[data-testid="diff-chart"] rect[data-partition="2026-07-03"]`).Attr("data-verdict"); fill != "unexpected" {
			t.Errorf("07-03 bar verdict %q", fill)
		}
		if got := text(doc.Find(`[data-testid="diff-rows"]`)); !strings.HasPrefix(got, "2 added, 0 removed, 1 changed, 0 duplicate keys.") {
			t.Errorf("rows summary %q", got)
		}
		if href, _ := doc.Find(`[data-partition="2026-07-03"] a`).Attr("href"); href != "/diffs/1/partitions/2026-07-03" {
			t.Errorf("drill-down link %q", href)
		}
		all := getPage(t, ts.URL+"/diffs/1?all=1", http.StatusOK)
		if n := all.Find(`[data-testid="diff-row"]`).Length(); n != 4 {
			t.Errorf("?all=1 lists %d partitions, want 4", n)
		}
	})

	t.Run("nav_marks_diffs", func(t *testing.T) {
		// The navigation links /diffs (TestDashboard lists it); on the list, a diff and a
		// partition of it, Diffs is the current item, not Backfills.
		for _, p := range []string{"/diffs", "/diffs/1", "/diffs/1/partitions/2026-07-03"} {
			doc := getPage(t, ts.URL+p, http.StatusOK)
			if cur := text(doc.Find(`[data-testid="nav"] a[aria-current="page"]`)); cur != "Diffs" {
				t.Errorf("%s marks %q as the current page, want Diffs", p, cur)
			}
		}
	})

	t.Run("partition_drill_down", func(t *testing.T) {
		doc := getPage(t, ts.URL+"/diffs/1/partitions/2026-07-03", http.StatusOK)
		if v, _ := doc.Find(`[data-testid="partition-verdict"]`).Attr("data-verdict"); v != "unexpected" {
			t.Errorf("verdict %q", v)
		}
		var changes []string
		doc.Find(`[data-testid="changed-row"]`).Each(func(_ int, s *goquery.Selection) {
			changes = append(changes, cells(s))
		})
		if diff := cmp.Diff([]string{"id=5 amount 7.5 99"}, changes); diff != "" {
			t.Errorf("changed rows (-want +got):\n%s", diff)
		}
		if got := text(doc.Find(`[data-testid="diff-reason"]`)); !strings.Contains(got, "expected identical") {
			t.Errorf("reason %q", got)
		}
		added := getPage(t, ts.URL+"/diffs/1/partitions/2026-07-04", http.StatusOK)
		if got := cells(added.Find(`[data-testid="added-rows"] tbody tr`)); got != "101 2026-07-04 8" {
			t.Errorf("added rows of the new partition: %q", got)
		}
	})

	t.Run("api", func(t *testing.T) {
		resp, body := get(t, ts.URL+"/api/v1/diffs/1")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		var doc struct {
			ID              int64            `json:"id"`
			ExpectationsMet bool             `json:"expectations_met"`
			Rows            map[string]int64 `json:"rows"`
			Partitions      []struct {
				Partition string `json:"partition"`
				Verdict   string `json:"verdict"`
			} `json:"partitions"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.ID != id || doc.ExpectationsMet || doc.Rows["added"] != 2 || len(doc.Partitions) != 4 {
			t.Errorf("api diff: %+v", doc)
		}
		resp, body = get(t, ts.URL+"/api/v1/diffs")
		var list []reconcile.Saved
		if err := json.Unmarshal([]byte(body), &list); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("list: %d %v", resp.StatusCode, err)
		}
		if len(list) != 1 || list[0].Label != "backfill fix dry-run" || list[0].Unexpected != 2 {
			t.Errorf("list: %+v", list)
		}
		resp, body = get(t, ts.URL+"/api/v1/diffs/1/partitions/2026-07-02")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"verdict":"expected"`) {
			t.Errorf("partition api: %d %s", resp.StatusCode, body)
		}
		list2 := getPage(t, ts.URL+"/diffs", http.StatusOK)
		if n := list2.Find(`[data-testid="diff-list-row"]`).Length(); n != 1 {
			t.Errorf("diff list page rows: %d", n)
		}
	})

	t.Run("not_found", func(t *testing.T) {
		for _, u := range []string{"/diffs/99", "/diffs/abc", "/diffs/1/partitions/2031-01-01", "/api/v1/diffs/99"} {
			if resp, _ := get(t, ts.URL+u); resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s: status %d, want 404", u, resp.StatusCode)
			}
		}
		bare := serve(t, server.Options{})
		if resp, _ := get(t, bare.URL+"/diffs/1"); resp.StatusCode != http.StatusNotFound {
			t.Errorf("without a diff store: %d", resp.StatusCode)
		}
	})
}
