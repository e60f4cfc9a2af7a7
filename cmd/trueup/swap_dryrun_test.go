package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"trueup/views"
)

// TestDryRunExitsAsThePublish: swap --dry-run and rollback --dry-run exit as the swap or
// rollback would — 1 when the gate would refuse it (a failed validation without --override) or
// it was confirmed (--undoes) to take back another swap, 0 when it would go through — locally and
// through a server, with the same output.
func TestDryRunExitsAsThePublish(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	local, served := demoDir(t), demoDir(t)
	for _, dir := range []string{local, served} {
		buildVersions(t, dir, 2, views.StateValidated)
		buildVersions(t, dir, 3, views.StateValidationFailed)
	}
	cfg := filepath.Join(local, "trueup.yaml")
	code, out, errs := cli(t, "--config", cfg, "swap", "orders", "--to", "v3", "--dry-run")
	if code != exitFailed || !strings.Contains(out, "gate orders v3: FAIL (validation failed)") ||
		!strings.Contains(out, "the swap needs an approver's --override REASON") ||
		!strings.Contains(errs, "trueup: swap orders to v3 refused: orders v3: validation failed; daily_revenue v3: validation failed; an approver may override") {
		t.Errorf("dry run of a swap the gate refuses: exit %d, want %d: %s %s", code, exitFailed, out, errs)
	}
	code, out, errs = cli(t, "--config", cfg, "swap", "orders", "--to", "v3", "--dry-run", "--override", "finance signed off")
	if code != exitOK || !strings.Contains(out, "the swap goes past the gate by the override: finance signed off") || strings.Contains(errs, "trueup:") {
		t.Errorf("dry run with --override: exit %d, want 0: %s %s", code, out, errs)
	}
	srv := serveDemo(t, served)
	for _, tc := range []remoteCase{
		{"swap_gate_fails", []string{"swap", "orders", "--to", "v3", "--dry-run"}, exitFailed, "text"},
		{"swap_gate_fails_json", []string{"swap", "orders", "--to", "v3", "--dry-run", "--format", "json"}, exitFailed, "json"},
		{"swap_override", []string{"swap", "orders", "--to", "v3", "--dry-run", "--override", "finance signed off"}, exitOK, "text"},
		{"swap_validated", []string{"swap", "orders", "--to", "v2", "--dry-run"}, exitOK, "text"},
		{"swap", []string{"swap", "orders", "--to", "v2", "--reason", "fix"}, exitOK, "text"},
		{"rollback", []string{"rollback", "orders", "--dry-run"}, exitOK, "text"},
		{"rollback_undoes_another", []string{"rollback", "orders", "--dry-run", "--undoes", "99"}, exitFailed, "text"},
	} {
		t.Run(tc.name, func(t *testing.T) { compareModes(t, local, srv, tc) })
	}
	_, out, _ = cli(t, "--config", cfg, "rollback", "orders", "--dry-run")
	m := regexp.MustCompile(`takes back swap #(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("rollback --dry-run names no swap: %s", out)
	}
	code, _, errs = cli(t, "--config", cfg, "rollback", "orders", "--dry-run", "--undoes", "99")
	if code != exitFailed || !strings.Contains(errs, "rollback of orders was confirmed to take back swap #99, but swap #99 is not in effect on orders; a rollback now would take back swap #"+m[1]) {
		t.Errorf("rollback --dry-run --undoes 99: exit %d, want %d: %s", code, exitFailed, errs)
	}
	if code, out, errs := cli(t, "--config", cfg, "rollback", "orders", "--dry-run", "--undoes", m[1]); code != exitOK {
		t.Errorf("rollback --dry-run --undoes %s: exit %d, want 0: %s %s", m[1], code, out, errs)
	}
}

// TestScopeRefusalNamesTheBackfill: a swap refused because live changed inside the scope since
// the build says which backfill recomputes it (trueup backfill run NAME --catch-up), the dry
// run as the swap, locally and through a server.
func TestScopeRefusalNamesTheBackfill(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	local, served := demoDir(t), demoDir(t)
	for _, dir := range []string{local, served} {
		if code, out, errs := cli(t, "--config", filepath.Join(dir, "trueup.yaml"), "backfill", "run", "fix_dedup_bug"); code != 0 {
			t.Fatalf("backfill run: exit %d: %s %s", code, out, errs)
		}
		pipelineWrite(t, dir, "orders__v1", "2026-07-12", 0, 2) // inside its scope
	}
	want := "orders changed inside the backfill's scope since v2 was built: 2026-07-12 +2 rows; publishing would overwrite those rows: recompute them with trueup backfill run fix_dedup_bug --catch-up"
	for _, args := range [][]string{{"swap", "orders", "--to", "v2", "--dry-run"}, {"swap", "orders", "--to", "v2", "--reason", "fix"}} {
		code, out, errs := cli(t, append([]string{"--config", filepath.Join(local, "trueup.yaml")}, args...)...)
		if code != exitFailed || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, want %d; stderr lacks %q: %s %s", args, code, exitFailed, want, out, errs)
		}
	}
	srv := serveDemo(t, served)
	for _, tc := range []remoteCase{
		{"swap_dry_run", []string{"swap", "orders", "--to", "v2", "--dry-run"}, exitFailed, "text"},
		{"swap", []string{"swap", "orders", "--to", "v2", "--reason", "fix"}, exitFailed, "text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			compareModes(t, local, srv, tc)
			if _, _, errs := cli(t, append([]string{"--server", srv.url}, tc.args...)...); !strings.Contains(errs, want) {
				t.Errorf("through the server, stderr lacks %q: %s", want, errs)
			}
		})
	}
}
