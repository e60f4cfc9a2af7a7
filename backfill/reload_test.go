package backfill_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trueup/backfill"
	"trueup/fault"
	"trueup/sql/sqltest"
)

// TestReloadWaitsUntilNoRunBuilds: a serving process reloads its backfill files and rules
// (SIGHUP). While a run builds, the reload is refused (the run reads its file as it goes); once
// it has stopped, the new file is listed and planned, and its run validates with the rule added
// beside it. DuckDB only: what is tested is the service's, the same on both engines.
func TestReloadWaitsUntilNoRunBuilds(t *testing.T) {
	e := sqltest.DuckDB(t)
	ctx := context.Background()
	d := newDemo(t, e)
	g := &gateEngine{Engine: e, prefix: "orders__", entered: make(chan struct{}, 64), release: make(chan struct{})}
	svc := &backfill.Service{Runner: d.newRunner(t, g)}
	defer svc.Close()

	fix, err := os.ReadFile(filepath.Join(d.dir, "backfills", "fix_dedup_bug.sql"))
	if err != nil {
		t.Fatal(err)
	}
	again := strings.Replace(string(fix), "-- validate: matches_raw, unique_order_id, every_day", "-- validate: no_huge_amount", 1)
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(d.dir, path), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("backfills/fix_again.sql", again)
	write("rules/orders/no_huge_amount.sql", "-- kind: custom\n-- description: no amount of a billion or more\nSELECT order_id FROM orders WHERE amount >= 1000000000\n")
	set, rs, _ := d.files(t, e)
	listed := func() map[string]bool {
		list, err := svc.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, s := range list {
			out[s.Name] = true
		}
		return out
	}

	if _, err := svc.Start(ctx, "fix_dedup_bug", "ann", 0, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no partition started")
	}
	if err := svc.Reload(set, rs); fault.Of(err) != fault.Conflict || !strings.Contains(err.Error(), "Run 1 is being built now") {
		t.Errorf("a reload while run 1 builds: %v, want refused as a conflict", err)
	}
	if listed()["fix_again"] {
		t.Error("a refused reload changed the files served")
	}
	close(g.release)
	if st := awaitStopped(t, svc, "fix_dedup_bug", ""); st.State != backfill.RunValidated {
		t.Fatalf("run 1: %s (%v)", st.State, st.ValidationFailures)
	}

	if err := svc.Reload(set, rs); err != nil {
		t.Fatalf("a reload with no run building: %v", err)
	}
	if !listed()["fix_again"] {
		t.Error("after the reload fix_again is not listed")
	}
	if _, err := svc.Plan(ctx, "fix_again", "ann", nil); err != nil {
		t.Errorf("plan of fix_again after the reload: %v", err)
	}
	if _, err := svc.StartRun(ctx, "fix_again", backfill.RunOptions{Actor: "ann"}); err != nil {
		t.Fatal(err)
	}
	st := awaitStopped(t, svc, "fix_again", "")
	run, err := svc.Runner.Store.GetRun(ctx, st.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var v backfill.Validation
	if err := json.Unmarshal(run.Validation, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Rules) != 1 || v.Rules[0].Rule != "no_huge_amount" || v.Rules[0].Status != "pass" {
		t.Errorf("fix_again validated with rules %+v, want no_huge_amount (added with the reload), passing", v.Rules)
	}
}
