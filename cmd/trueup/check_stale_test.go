package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// staleDemo is a demo project whose orders went to v2 and back to v1, with a writer that kept
// writing orders__v2 after the rollback (3 rows on 2026-08-20, outside fix_dedup_bug's scope),
// and, as its only rules, the files of rules on orders_raw. It returns the project's folder and config.
func staleDemo(t *testing.T, rules map[string]string) (string, string) {
	t.Helper()
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	for _, args := range [][]string{
		{"backfill", "run", "fix_dedup_bug"},
		{"swap", "orders", "--to", "v2", "--reason", "fix"},
		{"rollback", "orders", "--reason", "back"},
	} {
		if code, out, errs := cli(t, append([]string{"--config", cfg}, args...)...); code != 0 {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, errs)
		}
	}
	pipelineWrite(t, dir, "orders__v2", "2026-08-20", 0, 3)
	rulesDir := filepath.Join(dir, "rules")
	if err := os.RemoveAll(rulesDir); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(rulesDir, "orders_raw"), 0o755)
	for name, body := range rules {
		if err := os.WriteFile(filepath.Join(rulesDir, "orders_raw", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, cfg
}

// TestCheckStaleWithoutRules: trueup check reports a version written after it stopped being
// live for every table trueup watches, not only those a rule reads. Here no rule reads orders,
// which a writer kept writing as v2 after the rollback; the run of the whole rule set fails on
// it, and a run narrowed by --rule keeps to the tables of the rules it runs.
func TestCheckStaleWithoutRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a demo backfill")
	}
	_, cfg := staleDemo(t, map[string]string{
		"has_rows.sql":   "-- kind: row_count\n-- table: orders_raw\n-- min: 1\n",
		"has_amount.sql": "-- kind: completeness\n-- table: orders_raw\n-- not_null: amount\n",
	})
	parseCheck := func(out string) checkDoc {
		t.Helper()
		var doc checkDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, out)
		}
		return doc
	}

	code, out, errs := cli(t, "--config", cfg, "check", "--format", "json")
	if code != exitFailed {
		t.Fatalf("check: exit %d, want 1\n%s%s", code, out, errs)
	}
	doc := parseCheck(out)
	got := map[string]kindOutcome{}
	messages := map[string]string{}
	for _, r := range doc.Results {
		got[r.Rule] = kindOutcome{r.Status, r.Violations, r.FailingPartitions}
		messages[r.Rule] = r.Message
	}
	if g := got["orders.written_after_live"]; g.Status != "fail" || g.Violations != 3 || !cmp.Equal(g.Failing, []string{"2026-08-20"}) {
		t.Errorf("orders.written_after_live = %+v, want a failure of 3 rows on 2026-08-20; results %v", g, got)
	}
	if m := messages["orders.written_after_live"]; !strings.Contains(m, "orders__v2 changed after it stopped being live: 2026-08-20 +3 rows not visible to readers") {
		t.Errorf("message %q", m)
	}
	if g := got["has_rows"]; g.Status != "pass" {
		t.Errorf("has_rows = %+v", g)
	}
	// the tables rolled back with orders are watched too, and were not written
	if g := got["daily_revenue.written_after_live"]; g.Status != "pass" {
		t.Errorf("daily_revenue.written_after_live = %+v; results %v", g, got)
	}

	code, out, errs = cli(t, "--config", cfg, "check", "--rule", "has_rows", "--format", "json")
	if code != exitOK {
		t.Fatalf("check --rule: exit %d, want 0\n%s%s", code, out, errs)
	}
	if doc := parseCheck(out); len(doc.Results) != 1 || doc.Results[0].Rule != "has_rows" {
		t.Errorf("check --rule has_rows ran %+v", doc.Results)
	}
}

// TestCheckStaleFollowsTarget: the whole-set check of versions written after they stopped being
// live looks at the target the run is on. Here warehouse, the default target, has orders__v2
// written after the rollback, and spare, a second configured DuckDB target copied from it, has
// no publish of its own: check --target spare runs the rules there and reports nothing of
// warehouse's old versions (exit 0), while check on the default target fails on them.
func TestCheckStaleFollowsTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a demo backfill")
	}
	dir, cfg := staleDemo(t, map[string]string{"has_rows.sql": "-- kind: row_count\n-- table: orders_raw\n-- min: 1\n"})
	copyFile(t, filepath.Join(dir, "warehouse.duckdb"), filepath.Join(dir, "spare.duckdb"))
	conf, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	two := strings.Replace(string(conf), "targets:\n", "targets:\n  spare:\n    url: \"duckdb:spare.duckdb\"\n", 1)
	if err := os.WriteFile(cfg, []byte(two), 0o644); err != nil {
		t.Fatal(err)
	}
	results := func(args ...string) (int, map[string]string) {
		t.Helper()
		code, out, errs := cli(t, append([]string{"--config", cfg, "check", "--format", "json"}, args...)...)
		var doc checkDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("check %v: exit %d, stdout is not JSON: %v\n%s%s", args, code, err, out, errs)
		}
		got := map[string]string{}
		for _, r := range doc.Results {
			got[r.Rule] = r.Status
		}
		return code, got
	}

	if code, got := results("--target", "spare"); code != exitOK || !cmp.Equal(got, map[string]string{"has_rows": "pass"}) {
		t.Errorf("check --target spare: exit %d, results %v; want 0 and has_rows passing alone: warehouse's old versions are not spare's", code, got)
	}
	if code, got := results(); code != exitFailed || got["orders.written_after_live"] != "fail" || got["has_rows"] != "pass" {
		t.Errorf("check on warehouse: exit %d, results %v; want 1, orders.written_after_live failing", code, got)
	}
}
