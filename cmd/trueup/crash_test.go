package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"trueup/sql/sqltest"
)

// TestCrashChild is the child process of the crash tests: it runs trueup with the arguments in
// TRUEUP_CRASH_ARGS (one a line), as the binary would, until a crash point (TRUEUP_CRASH_AT)
// kills it.
func TestCrashChild(t *testing.T) {
	args := os.Getenv("TRUEUP_CRASH_ARGS")
	if args == "" {
		t.Skip("child process of the crash tests")
	}
	os.Exit(run(context.Background(), strings.Split(args, "\n"), os.Stdout, os.Stderr))
}

// killedAt runs trueup args in a child process that kills itself with SIGKILL at the crash point
// point (see crashEnv), and fails the test unless it was killed so. It returns what the child
// printed.
func killedAt(t *testing.T, point string, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCrashChild$")
	cmd.Env = append(os.Environ(), "TRUEUP_CRASH_ARGS="+strings.Join(args, "\n"), crashEnv+"="+point)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("trueup %s was not killed at %s (%v):\n%s", strings.Join(args, " "), point, err, out.String())
	}
	return out.String()
}

// demoProject is a demo project folder and the URL of its warehouse.
type demoProject struct{ dir, url string }

// demoProjects are the demo project on DuckDB and, with a test server, on ClickHouse.
func demoProjects(t *testing.T) map[string]demoProject {
	dir := demoDir(t)
	cases := map[string]demoProject{"duckdb": {dir, "duckdb:" + filepath.Join(dir, "warehouse.duckdb")}}
	if url := sqltest.ClickHouseURL(t); url != "" {
		cases["clickhouse"] = demoProject{demoDir(t, "--target", url), url}
	}
	return cases
}

// noticeState reads notice id's state and its status line.
func noticeState(t *testing.T, cfg string, id string) (state, text string) {
	t.Helper()
	code, out, errs := cli(t, "--config", cfg, "notice", "show", id, "--format", "json")
	var doc struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("notice show %s --format json: exit %d, %v: %s", id, code, err, errs)
	}
	code, out, errs = cli(t, "--config", cfg, "notice", "show", id)
	if code != 0 {
		t.Fatalf("notice show %s: exit %d: %s", id, code, errs)
	}
	return doc.State, out
}

// TestNoticeFollowsAPublishCutOffByAKill kills trueup right after a swap's outcome is in the
// ledger and before the notices heard of it, then after a rollback's: a restart completes the
// notice, then rolls it back, as if nothing had happened in between.
func TestNoticeFollowsAPublishCutOffByAKill(t *testing.T) {
	t.Parallel() // long: beside the package's other long tests
	for name, p := range demoProjects(t) {
		t.Run(name, func(t *testing.T) {
			cfg := filepath.Join(p.dir, "trueup.yaml")
			if code, out, errs := cli(t, "--config", cfg, "backfill", "run", "fix_dedup_bug"); code != 0 {
				t.Fatalf("backfill run: exit %d: %s%s", code, out, errs)
			}
			if state, _ := noticeState(t, cfg, "1"); state != "draft" {
				t.Fatalf("the run's notice is %s, want draft", state)
			}

			killedAt(t, "swap.after-outcome", "--config", cfg, "swap", "orders", "--to", "v2", "--reason", "dedup fix")
			// The next command's start-up recovery completes the notice, any command's, as
			// serve's does: it stayed a draft until serve started.
			code, out, errs := cli(t, "--config", cfg, "versions", "orders")
			if code != 0 || !strings.Contains(out, "live v2, rollback to v1") {
				t.Fatalf("versions after the killed swap: exit %d: %s %s", code, out, errs)
			}
			state, text := noticeState(t, cfg, "1")
			if state != "completed" || !strings.Contains(text, "Status: completed. The new data went live") {
				t.Errorf("after the killed swap and a restart the notice is %s, want completed:\n%s", state, text)
			}

			killedAt(t, "rollback.after-outcome", "--config", cfg, "rollback", "orders", "--reason", "numbers look off")
			serveAndGet(t, cfg, "/healthz") // a restart: serve's start-up recovery runs before serving
			code, out, errs = cli(t, "--config", cfg, "versions", "orders")
			if code != 0 || !strings.Contains(out, "live v1") {
				t.Fatalf("versions after the killed rollback: exit %d: %s %s", code, out, errs)
			}
			state, text = noticeState(t, cfg, "1")
			if state != "rolled-back" || !strings.Contains(text, "Status: rolled back") || !strings.Contains(text, "The previous data is live again.") {
				t.Errorf("after the killed rollback and a restart the notice is %s, want rolled-back:\n%s", state, text)
			}
		})
	}
}
