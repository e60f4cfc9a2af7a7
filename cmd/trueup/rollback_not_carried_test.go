package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"trueup/views"
)

// TestRollbackSaysWhatItLeavesBehind: after swap orders --to v2 the pipeline writes v2 inside
// fix_dedup_bug's scope (2026-07-12) and outside it (2026-09-03). The rollback to v1 carries the
// new day back and cannot carry the rows of the rebuilt day: rollback --dry-run (text and JSON),
// the confirmation page, the rollback's own output and its audit entry (trueup versions and the
// versions page) name them; they stay in orders__v2, and catch-up reports them (exit 1) with what
// to do. On DuckDB and ClickHouse.
func TestRollbackSaysWhatItLeavesBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	for name, p := range demoProjects(t) {
		t.Run(name, func(t *testing.T) {
			cfg := filepath.Join(p.dir, "trueup.yaml")
			run := func(args ...string) (int, string, string) {
				t.Helper()
				return cli(t, append([]string{"--config", cfg}, args...)...)
			}
			for _, args := range [][]string{{"backfill", "run", "fix_dedup_bug"}, {"swap", "orders", "--to", "v2", "--reason", "fix"}} {
				if code, out, errs := run(args...); code != 0 {
					t.Fatalf("%v: exit %d: %s %s", args, code, out, errs)
				}
			}
			lateRows(t, p.url, "orders__v2", "2026-07-12", 0, 2)   // inside the scope
			lateRows(t, p.url, "orders__v2", "2026-09-03", 100, 3) // outside it

			want := "v2 was written inside the backfill's scope since the swap: 2026-07-12 +2 rows; these rows are not carried into v1 (the versions differ there by design) and stay in orders__v2, not visible to readers: trueup catch-up orders lists them"
			code, out, errs := run("rollback", "orders", "--dry-run")
			if code != 0 || !strings.Contains(out, "  orders v2 → v1\n    live changed since the swap: 1 partition, +3 rows — will be carried into v1\n    "+want) {
				t.Errorf("rollback --dry-run: exit %d, lacks %q: %s %s", code, want, out, errs)
			}
			_, out, _ = run("rollback", "orders", "--dry-run", "--format", "json")
			var plan views.Plan
			if err := json.Unmarshal([]byte(out), &plan); err != nil {
				t.Fatalf("rollback --dry-run --format json: %v\n%s", err, out)
			}
			if c := plan.Changes[0]; c.Table != "orders" || len(c.NotCarried) != 1 || c.NotCarried[0].Partition != "2026-07-12" || c.NotCarried[0].Delta != 2 {
				t.Errorf("rollback --dry-run --format json: orders' not_carried = %+v, want 2026-07-12 +2", c.NotCarried)
			}
			if !strings.Contains(out, `"not_carried": [`) {
				t.Errorf("the JSON plan has no not_carried: %s", out)
			}

			t.Run("confirmation_page", func(t *testing.T) {
				srv := serveDemo(t, p.dir)
				resp, err := http.PostForm(srv.url+"/tables/orders/rollback", url.Values{})
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if page := strings.Join(strings.Fields(string(body)), " "); resp.StatusCode != http.StatusOK ||
					!strings.Contains(page, `data-testid="not-carried" data-table="orders"><strong>orders:</strong> `+strings.ReplaceAll(want, "'", "&#39;")+".") {
					t.Errorf("the confirmation page: status %d, lacks %q:\n%s", resp.StatusCode, want, page)
				}
			})

			code, out, errs = run("rollback", "orders", "--reason", "check")
			done := strings.Replace(want, "are not carried", "were not carried", 1)
			if code != 0 || !strings.Contains(out, "  orders: "+done) {
				t.Errorf("rollback: exit %d, lacks %q: %s %s", code, done, out, errs)
			}
			late := func(relation, day string) int64 {
				return querySQL(t, p.url, "SELECT count(*) FROM "+relation+" WHERE order_id >= 1000000000 AND order_date = CAST('"+day+"' AS DATE)")
			}
			if n := late("orders", "2026-09-03"); n != 3 {
				t.Errorf("after the rollback readers see %d of the 3 rows written outside the scope", n)
			}
			if n, kept := late("orders", "2026-07-12"), late("orders__v2", "2026-07-12"); n != 0 || kept != 2 {
				t.Errorf("the rows written inside the scope: %d seen by readers, %d kept in orders__v2; want 0 and 2", n, kept)
			}
			if code, out, _ := run("versions", "orders"); code != 0 || !strings.Contains(out, "(check); not carried, inside the backfill's scope: orders 2026-07-12 +2 rows left in orders__v2") {
				t.Errorf("versions: the history says nothing of what the rollback left: %s", out)
			}
			// the run's notice, completed by the swap, is rolled back saying what its readers no longer see
			if code, out, _ := run("notice", "show", "1"); code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "),
				"Rows written since the change went live are no longer visible to readers: orders 2026-07-12 +2 rows (kept in orders__v2). A new swap (trueup swap orders --to v2) would publish them; trueup catch-up orders lists them. Reason: check") {
				t.Errorf("notice show 1 after the rollback does not say what it left behind: %s", out)
			}
			t.Run("versions_page", func(t *testing.T) {
				srv := serveDemo(t, p.dir)
				resp, err := http.Get(srv.url + "/tables/orders")
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				left := `data-testid="publish-not-carried">not carried, inside the backfill's scope: orders 2026-07-12 +2 rows left in orders__v2</small>`
				if page := strings.Join(strings.Fields(string(body)), " "); resp.StatusCode != http.StatusOK || !strings.Contains(page, left) {
					t.Errorf("the versions page: status %d, its history lacks %q:\n%s", resp.StatusCode, left, page)
				}
			})

			code, out, errs = run("catch-up", "orders", "--dry-run")
			if code != exitFailed || !strings.Contains(out, "orders__v2 changed after it stopped being live: 2026-07-12 +2 rows not visible to readers, inside the scope of backfill fix_dedup_bug") ||
				!strings.Contains(out, "publish orders__v2 again (trueup swap orders --to v2)") {
				t.Errorf("catch-up --dry-run after the rollback: exit %d: %s %s", code, out, errs)
			}
			if code, out, errs := run("catch-up", "orders"); code != exitFailed || !strings.Contains(out, "orders is not caught up") {
				t.Errorf("catch-up after the rollback: exit %d: %s %s", code, out, errs)
			}
		})
	}
}
