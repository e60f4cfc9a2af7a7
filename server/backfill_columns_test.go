package server_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trueup/ops"
	"trueup/server"
)

// A transform whose columns are not the table's (SELECT * reads orders_raw's event_id and
// ingest_delay_days) is a blocking finding on the plan page and in the API, and the dry run and
// the run are refused naming it: no 500 with the engine's error.
func TestBackfillPlanNamesColumnMismatch(t *testing.T) {
	svc := editedBackfillService(t, func(dir string) {
		file := filepath.Join(dir, "backfills", "fix_dedup_bug.sql")
		orig, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		header := string(orig[:strings.Index(string(orig), "SELECT\n")])
		os.WriteFile(file, []byte(header+"SELECT * FROM orders_raw WHERE order_date >= $start AND order_date < $end\n"), 0o644)
	})
	ts := serve(t, server.Options{Backfills: ops.NewBackfills(svc)})
	const finding = "its rows have columns orders does not: event_id, ingest_delay_days"

	doc := getPage(t, ts.URL+"/backfills/fix_dedup_bug", http.StatusOK)
	if got := text(doc.Find("[data-testid=plan-findings]")); !strings.Contains(got, finding) {
		t.Errorf("plan page findings %q, want %q", got, finding)
	}
	resp, err := http.Get(ts.URL + "/api/v1/backfills/fix_dedup_bug")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"severity":"blocking"`) || !strings.Contains(string(body), finding) {
		t.Errorf("API plan: %d\n%s", resp.StatusCode, body)
	}
	resp, page := post(t, ts.URL+"/backfills/fix_dedup_bug/dry-run")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, finding) {
		t.Errorf("dry run: %d, want 200 naming %q:\n%s", resp.StatusCode, finding, page)
	}
	resp, page = post(t, ts.URL+"/backfills/fix_dedup_bug/run")
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, finding) {
		t.Errorf("run: %d, want 422 naming %q:\n%s", resp.StatusCode, finding, page)
	}
	if _, err := svc.Runner.Store.LatestRun(t.Context(), "fix_dedup_bug"); err == nil {
		t.Error("the refused run was recorded")
	}
}
