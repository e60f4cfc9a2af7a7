package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trueup/backfill"
	"trueup/fixtures"
	"trueup/ledger"
	"trueup/ops"
	"trueup/rules"
	"trueup/server"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// backfillService is the demo's backfills over a DuckDB warehouse, as serve wires them.
func backfillService(t *testing.T) *backfill.Service { return editedBackfillService(t, nil) }

// editedBackfillService is backfillService with the project's files changed by edit (when not
// nil) before they are loaded.
func editedBackfillService(t *testing.T, edit func(dir string)) *backfill.Service {
	t.Helper()
	ctx := t.Context()
	e := sqltest.DuckDB(t)
	if err := fixtures.Warehouse(ctx, e, fixtures.Options{Rows: 100000}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := fixtures.WriteProject(dir, e.Info().Target); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(dir)
	}
	l, err := ledger.Open(ctx, filepath.Join(dir, "state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := backfill.Load(os.DirFS(filepath.Join(dir, "backfills")), "backfills")
	if err != nil {
		t.Fatal(err)
	}
	targets := rules.TargetMap{Default: "warehouse", Engines: map[string]tsql.Engine{"warehouse": e}}
	rs, err := rules.Load(ctx, os.DirFS(filepath.Join(dir, "rules")), "rules", targets)
	if err != nil {
		t.Fatal(err)
	}
	v := backfill.Validator{Rules: rs, Runner: rules.NewRunner(targets)}
	svc := &backfill.Service{Runner: &backfill.Runner{
		Planner: backfill.Planner{Set: set, Engine: e, Target: "warehouse", Rules: v},
		Store:   backfill.Store{L: l}, Versions: views.Store{L: l}, Validator: v,
	}}
	t.Cleanup(func() { svc.Close(); l.Close() })
	return svc
}

func TestBackfillPages(t *testing.T) {
	svc := backfillService(t)
	ts := serve(t, server.Options{Backfills: ops.NewBackfills(svc)})

	doc := getPage(t, ts.URL+"/backfills", http.StatusOK)
	row := doc.Find(`[data-testid=backfill-row][data-backfill=fix_dedup_bug]`)
	if row.Length() != 1 || row.AttrOr("data-state", "") != "never run" {
		t.Fatalf("list row: %q", text(row))
	}

	doc = getPage(t, ts.URL+"/backfills/fix_dedup_bug", http.StatusOK)
	if got := text(doc.Find("[data-testid=plan-partition-count]")); got != "9" {
		t.Errorf("plan partitions %q, want 9", got)
	}
	if got := text(doc.Find("[data-testid=plan-downstream]")); !strings.HasPrefix(got, "27 refreshes") {
		t.Errorf("downstream %q", got)
	}
	if got := text(doc.Find("[data-testid=plan-score]")); !strings.HasPrefix(got, "4/4") {
		t.Errorf("score %q", got)
	}

	resp, body := post(t, ts.URL+"/backfills/fix_dedup_bug/dry-run")
	if resp.StatusCode == http.StatusSeeOther {
		// The dry run is kept: its page shows it again on every load, and the plan links it.
		if loc := resp.Header.Get("Location"); loc != "/backfills/fix_dedup_bug/dry-run" {
			t.Fatalf("dry run sends the browser to %q", loc)
		}
		resp, body = get(t, ts.URL+"/backfills/fix_dedup_bug/dry-run")
		if href, _ := getPage(t, ts.URL+"/backfills/fix_dedup_bug", http.StatusOK).Find("[data-testid=dry-run-link]").Attr("href"); href != "/backfills/fix_dedup_bug/dry-run" {
			t.Errorf("the plan links the dry run at %q", href)
		}
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "meets its expectations") || !strings.Contains(body, `data-partition="2026-07-10"`) {
		t.Fatalf("dry run: %d\n%s", resp.StatusCode, body)
	}

	resp, _ = post(t, ts.URL+"/backfills/fix_dedup_bug/run")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/backfills/fix_dedup_bug" {
		t.Fatalf("run: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A second run of the same table while the first builds is refused.
	if resp, _ := post(t, ts.URL+"/backfills/fix_dedup_bug/run"); resp.StatusCode != http.StatusConflict && resp.StatusCode != http.StatusSeeOther {
		t.Errorf("second run: %d", resp.StatusCode)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		frag := getPage(t, ts.URL+"/backfills/fix_dedup_bug/progress", http.StatusOK)
		state := frag.Find("[data-testid=progress]").AttrOr("data-state", "")
		polling := frag.Find("[data-testid=progress]").AttrOr("hx-get", "") != ""
		if state == "validated" {
			if polling {
				t.Error("a finished run still polls")
			}
			if got := text(frag.Find("[data-testid=progress-percent]")); got != "100%" {
				t.Errorf("progress %q at the end", got)
			}
			if got := frag.Find(`[data-testid=grid] [data-state=done]`).Length(); got != 36 {
				t.Errorf("%d done cells, want 36", got)
			}
			if got := text(frag.Find("[data-testid=validation-verdict]")); got != "passed" {
				t.Errorf("validation %q", got)
			}
			break
		}
		if !polling && state != "validated" {
			t.Fatalf("run ended %s: %s", state, text(frag.Find("[data-testid=run-error]")))
		}
		if time.Now().After(deadline) {
			t.Fatalf("run still %s after 60s", state)
		}
		time.Sleep(100 * time.Millisecond)
	}
	doc = getPage(t, ts.URL+"/backfills", http.StatusOK)
	if got := doc.Find(`[data-testid=reason-row][data-reason=bug]`).Length(); got != 1 {
		t.Errorf("runs by reason: %q", text(doc.Find("[data-testid=reasons]")))
	}
	// The dashboard lists the validated run as waiting for a person.
	doc = getPage(t, ts.URL+"/", http.StatusOK)
	if got := doc.Find(`[data-testid=work-backfills] [data-name=fix_dedup_bug]`); got.Length() != 1 || !strings.Contains(text(got), "validated") {
		t.Errorf("dashboard work: %q", text(doc.Find("[data-testid=work]")))
	}
	if resp, _ := get(t, ts.URL+"/backfills/nope"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown backfill: %d", resp.StatusCode)
	}
	resp, body = get(t, ts.URL+"/api/v1/backfills/fix_dedup_bug/status")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"state":"validated"`) {
		t.Errorf("status API: %d %s", resp.StatusCode, body)
	}
}
