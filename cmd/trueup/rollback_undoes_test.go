package main

import (
	"path/filepath"
	"strings"
	"testing"

	"trueup/views"
)

// TestRollbackUndoesRefusesARetry: `rollback --undoes N` takes back swap N only; run again (a
// retry after a lost answer) it exits 1 naming the rollback that took N back, and the tables stay
// where one rollback left them — locally and through a server.
func TestRollbackUndoesRefusesARetry(t *testing.T) {
	for _, remote := range []bool{false, true} {
		name := "local"
		if remote {
			name = "server"
		}
		t.Run(name, func(t *testing.T) {
			dir := demoDir(t)
			buildVersions(t, dir, 2, views.StateValidated)
			buildVersions(t, dir, 3, views.StateValidated)
			args := []string{"--config", filepath.Join(dir, "trueup.yaml")}
			if remote {
				args = []string{"--server", serveDemo(t, dir).url}
			}
			run := func(a ...string) (int, string, string) {
				t.Helper()
				return cli(t, append(append([]string{}, args...), a...)...)
			}
			for _, to := range []string{"v2", "v3"} {
				if code, _, errs := run("swap", "orders", "--to", to); code != 0 {
					t.Fatalf("swap to %s: exit %d: %s", to, code, errs)
				}
			}
			code, out, errs := run("rollback", "orders", "--dry-run")
			if code != 0 || !strings.Contains(out, "takes back swap #2") {
				t.Fatalf("dry run: exit %d: %s %s", code, out, errs)
			}
			code, out, errs = run("rollback", "orders", "--undoes", "2", "--reason", "off")
			if code != 0 || !strings.Contains(out, "rolled back orders v3 → v2, daily_revenue v3 → v2") {
				t.Fatalf("rollback: exit %d: %s %s", code, out, errs)
			}
			code, out, errs = run("rollback", "orders", "--undoes", "2", "--reason", "off")
			if code != exitFailed || !strings.Contains(errs, "swap #2 was already taken back by rollback #3") || out != "" {
				t.Errorf("retried rollback: exit %d, want %d: %s %s", code, exitFailed, out, errs)
			}
			// A swap of other tables is named as such, not as taken back.
			code, out, errs = run("rollback", "customer_ltv", "--undoes", "2")
			if code != exitFailed || !strings.Contains(errs, "#2 is not a swap of customer_ltv (it is a swap of orders)") {
				t.Errorf("rollback of another table naming swap #2: exit %d: %s %s", code, out, errs)
			}
			code, out, errs = run("versions", "orders")
			if code != 0 || !strings.Contains(out, "live v2, rollback to v1") {
				t.Errorf("versions after one rollback: exit %d: %s %s", code, out, errs)
			}
		})
	}
}
