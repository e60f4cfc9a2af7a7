package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"trueup/ledger"
	"trueup/views"
)

// TestCatchUpCLI: a writer that kept writing v2 after a rollback, into a day the
// backfill rebuilt. catch-up does not carry it (by design) and says so — the partition, why and
// what to do — and exits 1, locally and through a server; never "nothing to catch up". A table
// that does not exist is not found (exit 2), not "nothing to catch up".
func TestCatchUpCLI(t *testing.T) {
	t.Parallel() // long: beside the package's other long tests
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	local, served := demoDir(t), demoDir(t)
	for _, dir := range []string{local, served} {
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
		pipelineWrite(t, dir, "orders__v2", "2026-07-12", 0, 2) // inside fix_dedup_bug's scope
	}
	cfg := filepath.Join(local, "trueup.yaml")
	for _, args := range [][]string{{"catch-up", "orders", "--dry-run"}, {"catch-up", "orders"}} {
		code, out, errs := cli(t, append([]string{"--config", cfg}, args...)...)
		for _, want := range []string{
			"orders__v2 changed after it stopped being live: 2026-07-12 +2 rows not visible to readers, inside the scope of backfill fix_dedup_bug: trueup catch-up does not carry them",
			"not carried: backfill fix_dedup_bug rebuilt 2026-07-12 in orders__v2",
			"publish orders__v2 again (trueup swap orders --to v2), or write the rows into orders__v1, the live version writers must write to",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: stdout lacks %q:\n%s", args, want, out)
			}
		}
		if code != exitFailed || strings.Contains(out, "no old version was written") {
			t.Errorf("%v: exit %d, want %d: %s %s", args, code, exitFailed, out, errs)
		}
	}
	if _, out, errs := cli(t, "--config", cfg, "catch-up", "orders"); !strings.HasPrefix(out, "orders is not caught up: ") ||
		errs != "trueup: catch-up: orders is not caught up: 1 partition inside a backfill's scope not carried\n" {
		t.Errorf("catch-up again: %s %s", out, errs)
	}
	// The dry run answers in the catch-up's own shape, naming the live version.
	for _, dry := range []bool{true, false} {
		args := []string{"--config", cfg, "catch-up", "orders", "--format", "json"}
		if dry {
			args = append(args, "--dry-run")
		}
		_, out, errs := cli(t, args...)
		var r views.CatchUpResult
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Live != 1 || r.DryRun != dry || len(r.Carried) != 0 ||
			len(r.NotCarried) != 1 || r.NotCarried[0].Version != 2 || len(r.NotCarried[0].InScope) != 1 {
			t.Errorf("%v: %v %+v: %s %s", args, err, r, out, errs)
		}
	}
	// A table that is not there is not found, as versions, adopt and swap say (exit 2).
	for _, args := range [][]string{{"catch-up", "nope"}, {"catch-up", "nope", "--dry-run"}} {
		code, out, errs := cli(t, append([]string{"--config", cfg}, args...)...)
		if code != exitUsage || out != "" || errs != "trueup: nope is not a logical table of target warehouse (no view over nope__v<N>)\n" {
			t.Errorf("%v: exit %d, want %d: %q %q", args, code, exitUsage, out, errs)
		}
	}
	srv := serveDemo(t, served)
	for _, tc := range []remoteCase{
		{"catch_up_dry_run", []string{"catch-up", "orders", "--dry-run"}, exitFailed, "text"},
		{"catch_up", []string{"catch-up", "orders"}, exitFailed, "text"},
		{"catch_up_json", []string{"catch-up", "orders", "--format", "json"}, exitFailed, "json"},
		{"catch_up_dry_run_json", []string{"catch-up", "orders", "--dry-run", "--format", "json"}, exitFailed, "json"},
		{"catch_up_unknown", []string{"catch-up", "nope"}, exitUsage, "text"},
		{"catch_up_unknown_dry_run", []string{"catch-up", "nope", "--dry-run"}, exitUsage, "text"},
		{"catch_up_plain_table", []string{"catch-up", "orders_raw"}, exitUsage, "text"},
	} {
		t.Run(tc.name, func(t *testing.T) { compareModes(t, local, srv, tc) })
	}

	// The operator writes the rows into the live version as advised, then says so: the day is
	// no longer reported (it was, for ever, and check failed every run), until written again.
	pipelineWrite(t, local, "orders__v1", "2026-07-12", 0, 2)
	code, out, errs := cli(t, "--config", cfg, "catch-up", "orders", "--acknowledge", "--reason", "written into v1")
	if code != 0 || out != "orders: acknowledged 2026-07-12 +2 rows of orders__v2, not carried: no longer reported\n" {
		t.Errorf("catch-up --acknowledge: exit %d: %q %s", code, out, errs)
	}
	if code, out, errs := cli(t, "--config", cfg, "catch-up", "orders", "--dry-run"); code != 0 || !strings.Contains(out, "no old version was written") {
		t.Errorf("catch-up --dry-run after the acknowledgement: exit %d: %s %s", code, out, errs)
	}
	l, err := ledger.Open(t.Context(), filepath.Join(local, "trueup-state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := l.AuditLog(t.Context(), ledger.AuditFilter{Action: "view.catch-up"})
	l.Close()
	if err != nil || len(entries) == 0 || entries[0].Detail != "acknowledged 2026-07-12 +2 rows of orders__v2, not carried (inside the scope of backfill fix_dedup_bug): written into v1" {
		t.Errorf("the audit log's newest catch-up: %v %+v", err, entries)
	}
	pipelineWrite(t, local, "orders__v2", "2026-07-12", 10, 1)
	if code, out, _ := cli(t, "--config", cfg, "catch-up", "orders", "--dry-run"); code != exitFailed || !strings.Contains(out, "2026-07-12 +1 rows not visible to readers") {
		t.Errorf("a write after the acknowledgement: exit %d: %s", code, out)
	}
	if code, _, errs := cli(t, "--config", cfg, "catch-up", "orders", "--acknowledge", "--dry-run"); code != exitUsage || !strings.Contains(errs, "a dry run acknowledges nothing") {
		t.Errorf("--acknowledge --dry-run: exit %d: %s", code, errs)
	}
}
