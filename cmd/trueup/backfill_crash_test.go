package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/backfill"
	tsql "trueup/sql"
	"trueup/views"
)

// TestBackfillRunKilledIsInterrupted kills `trueup backfill run` with SIGKILL after its third
// partition: the run reads interrupted with resume and cancel offered (CLI, JSON API, page), a
// new run is refused until it is resumed or cancelled, the resumed run ends validated with the
// rows a clean run gives, and after another kill a cancel lets a new run start.
func TestBackfillRunKilledIsInterrupted(t *testing.T) {
	t.Parallel() // long: beside the package's other long tests
	for name, p := range demoProjects(t) {
		t.Run(name, func(t *testing.T) {
			cfg := filepath.Join(p.dir, "trueup.yaml")
			run := func(args ...string) (int, string, string) {
				t.Helper()
				return cli(t, append([]string{"--config", cfg}, args...)...)
			}
			killedAt(t, "backfill.partition-done:3", "--config", cfg, "backfill", "run", "fix_dedup_bug")

			code, out, errs := run("backfill", "status", "fix_dedup_bug")
			// Killed at the third partition's checkpoint: at least three are done, and, as the
			// workers build partitions at once, maybe a few more, but not all 36.
			m := regexp.MustCompile(`run 1 of fix_dedup_bug: interrupted, v2, (\d+)/36 partitions done`).FindStringSubmatch(out)
			done := -1
			if m != nil {
				done, _ = strconv.Atoi(m[1])
			}
			if code != 0 || done < 3 || done >= 36 {
				t.Errorf("status after the kill: exit %d, not interrupted with 3 to 35 of 36 partitions done:\n%s%s", code, out, errs)
			}
			for _, want := range []string{"resume it: trueup backfill resume fix_dedup_bug", "or cancel it: trueup backfill cancel fix_dedup_bug"} {
				if code != 0 || !strings.Contains(out, want) {
					t.Errorf("status after the kill: exit %d, lacks %q:\n%s%s", code, want, out, errs)
				}
			}
			var st backfill.Status
			_, out, _ = run("backfill", "status", "fix_dedup_bug", "--format", "json")
			if err := json.Unmarshal([]byte(out), &st); err != nil || st.State != backfill.RunInterrupted || st.ETASeconds != nil ||
				!cmp.Equal(st.Actions, []string{"resume", "cancel"}) {
				t.Errorf("status --format json after the kill (%v): %s", err, out)
			}
			api := serveAndGet(t, cfg, "/api/v1/backfills/fix_dedup_bug/status")
			if !strings.Contains(api, `"state":"interrupted"`) || !strings.Contains(api, `"actions":["resume","cancel"]`) || strings.Contains(api, "eta_seconds") {
				t.Errorf("the JSON API after the kill: %s", api)
			}
			progress := serveAndGet(t, cfg, "/backfills/fix_dedup_bug/progress")
			for _, want := range []string{`data-testid="run-state">interrupted<`, `data-testid="resume"`, `data-testid="cancel"`} {
				if !strings.Contains(progress, want) {
					t.Errorf("the progress page lacks %s:\n%s", want, progress)
				}
			}
			if strings.Contains(progress, " left") {
				t.Errorf("the progress page of an interrupted run shows time left:\n%s", progress)
			}

			code, _, errs = run("backfill", "run", "fix_dedup_bug")
			if code != exitFailed || !strings.Contains(errs, "interrupted") || !strings.Contains(errs, "Resume it (trueup backfill resume fix_dedup_bug) or cancel it") {
				t.Errorf("a new run while one is interrupted: exit %d, want %d: %s", code, exitFailed, errs)
			}
			code, out, errs = run("backfill", "resume", "fix_dedup_bug")
			if code != 0 || !strings.Contains(out, "run 1 of fix_dedup_bug: validated") {
				t.Fatalf("resume: exit %d: %s%s", code, out, errs)
			}

			// v2 is validated and not published: another run is refused unless a new version is
			// asked for.
			code, _, errs = run("backfill", "run", "fix_dedup_bug")
			if code != exitFailed || !strings.Contains(errs, "orders v2 is validated and not published yet: another run of fix_dedup_bug would build v3") ||
				!strings.Contains(errs, "--new-version") {
				t.Errorf("a new run beside the validated v2: exit %d, want %d: %s", code, exitFailed, errs)
			}

			// Killed again; cancelled; a new run starts and ends as the resumed one did.
			killedAt(t, "backfill.partition-done:2", "--config", cfg, "backfill", "run", "fix_dedup_bug", "--new-version")
			if code, out, errs = run("backfill", "cancel", "fix_dedup_bug"); code != 0 || !strings.Contains(out, "run 2 of fix_dedup_bug: cancelled") {
				t.Fatalf("cancel the interrupted run: exit %d: %s%s", code, out, errs)
			}
			code, out, errs = run("backfill", "run", "fix_dedup_bug", "--new-version")
			if code != 0 || !strings.Contains(out, "run 3 of fix_dedup_bug: validated, v4") {
				t.Fatalf("a new run after the cancel: exit %d: %s%s", code, out, errs)
			}
			sameRows(t, p.url, 2, 4, "orders", "daily_revenue", "customer_ltv", "region_summary")
		})
	}
}

// sameRows fails unless version a and version b of each table hold the same rows.
func sameRows(t *testing.T, url string, a, b int, tables ...string) {
	t.Helper()
	ctx := context.Background()
	e, err := tsql.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, table := range tables {
		var got []string
		for _, n := range []int{a, b} {
			rows, sum, err := views.Fingerprint(ctx, e, views.Physical(table, n))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%d rows, checksum %v", rows, sum))
		}
		if got[0] != got[1] {
			t.Errorf("%s: v%d has %s, v%d %s", table, a, got[0], b, got[1])
		}
	}
}
