package backfill_test

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"trueup/backfill"
	"trueup/fixtures"
	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestKillChild is the child process of TestKillAndResume: it opens the demo and builds the
// run it is given until it is killed or done.
func TestKillChild(t *testing.T) {
	dir := os.Getenv("TRUEUP_KILL_DIR")
	if dir == "" {
		t.Skip("child process of TestKillAndResume")
	}
	run, _ := strconv.ParseInt(os.Getenv("TRUEUP_KILL_RUN"), 10, 64)
	d := openDemo(t, dir, os.Getenv("TRUEUP_KILL_URL"))
	os.WriteFile(filepath.Join(dir, "child.started"), nil, 0o644)
	if _, err := d.runner.Execute(context.Background(), run, backfill.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
}

// openDemo opens an existing demo project folder and warehouse.
func openDemo(t *testing.T, dir, url string) *demo {
	t.Helper()
	e := sqltest.Open(t, url)
	l := ledgertest.OpenAt(t, filepath.Join(dir, "state.duckdb"))
	d := &demo{dir: dir, engine: e, ledger: l}
	d.runner = d.newRunner(t, e)
	return d
}

// TestKillAndResume kills a process building a run with SIGKILL at random moments, resumes
// it each time, and checks that the versions it ends with equal those of a clean run.
func TestKillAndResume(t *testing.T) {
	if os.Getenv("TRUEUP_KILL_DIR") != "" {
		t.Skip("in the child")
	}
	t.Parallel() // long: beside the package's other long tests
	urls := []string{sqltest.DuckDBURL(t)}
	if u := sqltest.ClickHouseURL(t); u != "" {
		urls = append(urls, u)
	}
	for _, url := range urls {
		name := url[:6]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			e, err := tsql.Create(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			if err := fixtures.Warehouse(ctx, e, fixtures.Options{Rows: 20000, Seed: 5}); err != nil {
				t.Fatal(err)
			}
			if err := fixtures.WriteProject(dir, url); err != nil {
				t.Fatal(err)
			}
			e.Close()

			// A clean run, timed, gives the expected versions.
			d := openDemo(t, dir, url)
			started := time.Now()
			clean, err := d.runner.Start(ctx, "fix_dedup_bug", backfill.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cleanDone, err := d.runner.Execute(ctx, clean.ID, backfill.ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(started)
			run, err := d.runner.Start(ctx, "fix_dedup_bug", backfill.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			d.engine.Close()
			d.ledger.Close()

			rng := rand.New(rand.NewPCG(7, uint64(len(url))))
			kills := 0
			for trial := 0; trial < trials(url); trial++ {
				kills += killChild(t, dir, "^TestKillChild$", rng, took,
					"TRUEUP_KILL_DIR="+dir, "TRUEUP_KILL_URL="+url, "TRUEUP_KILL_RUN="+strconv.FormatInt(run.ID, 10))
			}
			d = openDemo(t, dir, url)
			done, err := d.runner.Execute(ctx, run.ID, backfill.ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if done.State != cleanDone.State {
				t.Errorf("after %d kills and a resume: %s, the clean run: %s", kills, done.State, cleanDone.State)
			}
			for i, tbl := range clean.Tables {
				want, wantRows := checksum(t, d.engine, tbl.Table+"__v"+strconv.Itoa(tbl.Version))
				got, gotRows := checksum(t, d.engine, tbl.Table+"__v"+strconv.Itoa(done.Tables[i].Version))
				if want != got || wantRows != gotRows {
					t.Errorf("%s: killed-and-resumed v%d (%d rows) differs from the clean v%d (%d rows)",
						tbl.Table, done.Tables[i].Version, gotRows, tbl.Version, wantRows)
				}
			}
			t.Logf("%d kills at random points, clean run %s", kills, took)
		})
	}
}

// trials is how many kills a run takes: fewer on the ClickHouse server, where a run is slower.
func trials(url string) int {
	if url[:6] == "duckdb" {
		return 6
	}
	return 4
}

// killChild starts the test named run in a child process with env, waits until it says it has
// started (dir/child.started), lets it work for a random part of took and kills it with SIGKILL;
// 1 when the kill was sent.
func killChild(t *testing.T, dir, run string, rng *rand.Rand, took time.Duration, env ...string) int {
	t.Helper()
	os.Remove(filepath.Join(dir, "child.started"))
	cmd := exec.Command(os.Args[0], "-test.run", run)
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		if _, err := os.Stat(filepath.Join(dir, "child.started")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(time.Duration(rng.Int64N(int64(took))))
	kills := 0
	if cmd.Process.Signal(os.Kill) == nil {
		kills = 1
	}
	cmd.Wait()
	return kills
}
