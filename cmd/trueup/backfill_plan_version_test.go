package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackfillPlanNamesTheVersion: the plan says the exact table a run would build, as the run
// numbers it — after a rollback to v1 that is v3 (v2 exists), not "v2 or the next free one" —
// and that the number is taken when the run starts.
func TestBackfillPlanNamesTheVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a demo backfill")
	}
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	write := func() string {
		t.Helper()
		code, out, errs := cli(t, "--config", cfg, "backfill", "plan", "fix_dedup_bug", "--format", "json")
		if code != exitOK {
			t.Fatalf("plan: exit %d\n%s%s", code, out, errs)
		}
		var p struct {
			Write string `json:"write"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("plan: %v\n%s", err, out)
		}
		return p.Write
	}
	const taken = " (its number is taken when the run starts: a later one if another version of orders is made first) beside the live orders__v1"
	if w := write(); !strings.HasPrefix(w, "build orders__v2"+taken) || strings.Contains(w, "next free") {
		t.Errorf("first plan: %s", w)
	}
	for _, args := range [][]string{
		{"backfill", "run", "fix_dedup_bug"},
		{"swap", "orders", "--to", "v2", "--reason", "fix"},
		{"rollback", "orders", "--reason", "back"},
	} {
		if code, out, errs := cli(t, append([]string{"--config", cfg}, args...)...); code != 0 {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, errs)
		}
	}
	if w := write(); !strings.HasPrefix(w, "build orders__v3"+taken) {
		t.Errorf("plan after the rollback: %s", w)
	}
	// and the run builds what the plan named
	code, out, errs := cli(t, "--config", cfg, "backfill", "run", "fix_dedup_bug")
	if code != exitOK || !strings.Contains(out+errs, "orders__v3") {
		t.Errorf("second run: exit %d\n%s%s", code, out, errs)
	}
}
