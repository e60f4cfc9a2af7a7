package backfill_test

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/backfill"
	"trueup/sql/sqltest"
)

// coarseKillFile is the sales backfill over three month partitions, built in three units.
var coarseKillFile = strings.Replace(salesFile, "2026-07-10..2026-07-18", "2026-07-25..2026-08-31", 1)

// TestKillCoarseChild is the child process of TestKillAndResumeMonthPartitions: it builds the
// run it is given until it is killed or done.
func TestKillCoarseChild(t *testing.T) {
	dir := os.Getenv("TRUEUP_KILL_COARSE_DIR")
	if dir == "" {
		t.Skip("child process of TestKillAndResumeMonthPartitions")
	}
	run, _ := strconv.ParseInt(os.Getenv("TRUEUP_KILL_RUN"), 10, 64)
	r := salesRunnerAt(t, sqltest.Open(t, os.Getenv("TRUEUP_KILL_URL")), coarseKillFile, filepath.Join(dir, "state.duckdb"))
	os.WriteFile(filepath.Join(dir, "child.started"), nil, 0o644)
	if _, err := r.Execute(context.Background(), run, backfill.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestKillAndResumeMonthPartitions (ClickHouse) kills a process rebuilding month partitions
// with SIGKILL at random moments — inside a unit's staging and replaces as well as between
// units — resumes it each time, and checks that the version it ends with equals a clean run's.
func TestKillAndResumeMonthPartitions(t *testing.T) {
	if os.Getenv("TRUEUP_KILL_COARSE_DIR") != "" {
		t.Skip("in the child")
	}
	url := sqltest.ClickHouseURL(t)
	if url == "" {
		t.Skip("partition keys are ClickHouse's")
	}
	ctx := context.Background()
	dir := t.TempDir()
	state := filepath.Join(dir, "state.duckdb")
	e := sqltest.Open(t, url)
	loadSalesTables(t, e, "PARTITION BY toYYYYMM(d)")
	r := salesRunnerAt(t, e, coarseKillFile, state)
	started := time.Now()
	clean, err := r.Start(ctx, "fix_sales", backfill.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if done, err := r.Execute(ctx, clean.ID, backfill.ExecOptions{}); err != nil || done.State != backfill.RunValidated {
		t.Fatalf("the clean run: %v", err)
	}
	took := time.Since(started)
	run, err := r.Start(ctx, "fix_sales", backfill.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Store.L.Close()

	rng := rand.New(rand.NewPCG(11, 3))
	kills := 0
	for trial := 0; trial < 5; trial++ {
		os.Remove(filepath.Join(dir, "child.started"))
		cmd := exec.Command(os.Args[0], "-test.run", "^TestKillCoarseChild$")
		cmd.Env = append(os.Environ(), "TRUEUP_KILL_COARSE_DIR="+dir, "TRUEUP_KILL_URL="+url, "TRUEUP_KILL_RUN="+strconv.FormatInt(run.ID, 10))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 500; i++ { // the child opens its ledger and engine first
			if _, err := os.Stat(filepath.Join(dir, "child.started")); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(took))))
		if cmd.Process.Signal(os.Kill) == nil {
			kills++
		}
		cmd.Wait()
	}
	r = salesRunnerAt(t, e, coarseKillFile, state)
	done, err := r.Execute(ctx, run.ID, backfill.ExecOptions{})
	if err != nil || done.State != backfill.RunValidated {
		t.Fatalf("after %d kills, the resumed run: %v", kills, err)
	}
	want, got := salesDays(t, e, "sales__v2", ""), salesDays(t, e, "sales__v3", "")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after %d kills and a resume, v3 differs from the clean v2 (-clean +resumed):\n%s", kills, diff)
	}
	checkRebuiltScope(t, e, "sales__v3", "2026-07-25", "2026-08-31")
	t.Logf("%d kills at random points, clean run %s", kills, took)
}
