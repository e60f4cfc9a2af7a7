package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestBackfillCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	if code, _, errs := cli(t, "demo", "--dir", dir, "--rows", "100000", "--write-only"); code != 0 {
		t.Fatalf("demo: %s", errs)
	}
	cfg := filepath.Join(dir, "trueup.yaml")
	bf := func(args ...string) (int, string, string) {
		return cli(t, append([]string{"--config", cfg, "backfill"}, args...)...)
	}

	code, out, errs := bf("plan", "fix_dedup_bug", "--format", "json")
	if code != 0 {
		t.Fatalf("plan: exit %d: %s", code, errs)
	}
	var plan struct {
		Partitions []string `json:"partitions"`
		Downstream []struct {
			Table, Partition string
		} `json:"downstream_refreshes"`
		InputsOK bool  `json:"inputs_ok"`
		Score    int   `json:"score"`
		Findings []any `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Partitions) != 9 || plan.Partitions[0] != "2026-07-10" || len(plan.Downstream) != 27 || !plan.InputsOK || plan.Score != 4 {
		t.Errorf("plan: %+v", plan)
	}

	code, out, errs = bf("dry-run", "fix_dedup_bug")
	if code != 0 {
		t.Fatalf("dry-run: exit %d: %s%s", code, out, errs)
	}
	for _, want := range []string{"partition", "old_count", "new_count", "pct_change", "2026-07-10", "2026-07-18", "meets its expectations"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, out)
		}
	}
	// the totals the expectations judge are in the table: daily_revenue's rows do not move, its
	// revenue does
	if !regexp.MustCompile(`(?m)^  partition .* sum\(amount\)  verdict$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^  2026-07-10 +1 +1 +\+0 +\+0\.0% +\+5\.\d% +expected$`).MatchString(out) {
		t.Errorf("dry-run output lacks the measured totals' change:\n%s", out)
	}

	code, out, errs = bf("run", "fix_dedup_bug", "--format", "json")
	if code != 0 {
		t.Fatalf("run: exit %d: %s%s", code, out, errs)
	}
	var st struct {
		RunID   int64  `json:"run_id"`
		State   string `json:"state"`
		Version string `json:"version"`
		Total   int    `json:"partitions_total"`
		Done    int    `json:"partitions_done"`
		Failed  int    `json:"partitions_failed"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.State != "validated" || st.Version != "v2" || st.Total != 36 || st.Done != 36 || st.Failed != 0 {
		t.Errorf("run: %+v", st)
	}
	code, out, _ = bf("status", "fix_dedup_bug", "--format", "json")
	if code != 0 || !strings.Contains(out, `"state": "validated"`) {
		t.Errorf("status: exit %d: %s", code, out)
	}
	code, out, _ = bf("history", "--format", "json")
	if code != 0 || !strings.Contains(out, `"reason": "bug"`) || !strings.Contains(out, `"runs": 1`) {
		t.Errorf("history: exit %d: %s", code, out)
	}
	// The run drafted a notice from its plan and validation.
	code, out, errs = cli(t, "--config", cfg, "notice", "list", "--format", "json")
	if code != 0 || !strings.Contains(out, `"state": "draft"`) || !strings.Contains(out, "daily_revenue") {
		t.Errorf("notice list: exit %d: %s%s", code, out, errs)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "nope"}, "There is no backfill nope."},
		{[]string{"frobnicate", "fix_dedup_bug"}, `unknown action "frobnicate"`},
		{[]string{"verify", "fix_dedup_bug"}, "give --from and --to"},
		{[]string{"run", "fix_dedup_bug", "--from", "2026-07-10"}, "give both from and to"},
	} {
		code, _, errs := bf(tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
	// A run that has ended is not in the state a resume or a cancel needs: a conflict, exit 1
	// as every "already in that state" (it exited 2, as for bad input).
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"resume", "fix_dedup_bug"}, "nothing left to build"},
		{[]string{"cancel", "fix_dedup_bug"}, "nothing to cancel"},
	} {
		code, _, errs := bf(tc.args...)
		if code != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 1 and %q", tc.args, code, errs, tc.want)
		}
	}
	// The live table is reproducible from its inputs outside the bug window, and not inside it.
	if code, out, _ := bf("verify", "fix_dedup_bug", "--from", "2026-06-01", "--to", "2026-06-05"); code != 0 {
		t.Errorf("verify outside the bug: exit %d:\n%s", code, out)
	}
	if code, out, _ := bf("verify", "fix_dedup_bug", "--from", "2026-07-09", "--to", "2026-07-11"); code != 1 || !strings.Contains(out, "2026-07-10") || strings.Contains(out, "2026-07-09 ") {
		t.Errorf("verify across the bug: exit %d:\n%s", code, out)
	}
}

// A blocked plan is bad input (backfill/README.md): plan, dry-run and run all exit 2 and
// nothing is run.
func TestBackfillBlockedPlanExits2(t *testing.T) {
	cfg := filepath.Join(demoDir(t), "trueup.yaml")
	missing := []string{"--from", "2026-08-30", "--to", "2026-09-02"} // orders_raw ends 2026-08-31
	for _, verb := range []string{"plan", "dry-run", "run"} {
		code, out, errs := cli(t, append([]string{"--config", cfg, "backfill", verb, "fix_dedup_bug"}, missing...)...)
		if code != 2 || !strings.Contains(out+errs, "input orders_raw has no rows for 2 partitions of the scope") {
			t.Errorf("backfill %s of a blocked plan: exit %d, want 2 naming the missing inputs:\n%s%s", verb, code, out, errs)
		}
	}
	if code, _, errs := cli(t, "--config", cfg, "backfill", "status", "fix_dedup_bug"); code != 2 || !strings.Contains(errs, "has never run") {
		t.Errorf("status after a blocked run: exit %d: %s", code, errs)
	}
}

// The text of a plan ends its last line (the Findings), so the cause on stderr that follows it
// starts a line of its own, locally and through a server.
func TestBackfillPlanTextEndsItsLastLine(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	local := filepath.Join(demoDir(t), "trueup.yaml")
	srv := serveDemo(t, demoDir(t))
	missing := []string{"--from", "2026-08-30", "--to", "2026-09-02"} // blocked: orders_raw ends 2026-08-31
	for _, mode := range [][]string{{"--config", local}, {"--server", srv.url}} {
		for _, args := range [][]string{{"plan", "fix_dedup_bug"}, append([]string{"plan", "fix_dedup_bug"}, missing...), append([]string{"dry-run", "fix_dedup_bug"}, missing...)} {
			code, out, errs := cli(t, append(append(append([]string{}, mode...), "backfill"), args...)...)
			if out == "" || !strings.HasSuffix(out, "\n") || (code != 0 && !strings.Contains(out, "\nFindings\n")) {
				t.Errorf("%v %v: exit %d, stdout does not end its last line:\n%q\n%s", mode[0], args, code, out, errs)
			}
		}
	}
}

// Header values a run would only trip over at its end are reported when the files load, as
// path:line: message, exit 2, and nothing runs.
func TestBackfillHeaderProblemsExit2(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	file := filepath.Join(dir, "backfills", "fix_dedup_bug.sql")
	orig, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lineOf := func(prefix string) int {
		for i, l := range strings.Split(string(orig), "\n") {
			if strings.HasPrefix(l, prefix) {
				return i + 1
			}
		}
		t.Fatalf("fix_dedup_bug.sql has no %q line", prefix)
		return 0
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"unknown_validate_rule", "-- validate: matches_raw,", "-- validate: no_such_rule, matches_raw,",
			fmt.Sprintf("fix_dedup_bug.sql:%d: validate: no_such_rule is neither a rule nor a tag", lineOf("-- validate:"))},
		{"nonsense_expect", "-- expect: inside scope", "-- expect: inside scope rows lots;",
			fmt.Sprintf("fix_dedup_bug.sql:%d: expect: clause 1", lineOf("-- expect:"))},
		{"empty_window", "-- concurrency: 2", "-- concurrency: 2\n-- window: 10:00-10:00",
			fmt.Sprintf("fix_dedup_bug.sql:%d: window \"10:00-10:00\": it starts and ends at the same time", lineOf("-- concurrency:")+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(orig), tc.old) {
				t.Fatalf("no %q in the file", tc.old)
			}
			os.WriteFile(file, []byte(strings.Replace(string(orig), tc.old, tc.new, 1)), 0o644)
			defer os.WriteFile(file, orig, 0o644)
			code, out, errs := cli(t, "--config", cfg, "backfill", "run", "fix_dedup_bug")
			if code != 2 || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "nothing was run") {
				t.Errorf("exit %d, stderr:\n%s\nwant 2 and %q", code, errs+out, tc.want)
			}
		})
	}
	if code, _, errs := cli(t, "--config", cfg, "backfill", "status", "fix_dedup_bug"); code != 2 || !strings.Contains(errs, "has never run") {
		t.Errorf("status after the refused runs: exit %d: %s", code, errs)
	}
}

// TestExposureAndBackfillProblemsAtOnce: a backfill command names the problems of the exposure
// files and of the backfill files in one pass (those of the backfills showed only once the
// exposures were fixed).
func TestExposureAndBackfillProblemsAtOnce(t *testing.T) {
	dir := demoDir(t)
	os.WriteFile(filepath.Join(dir, "exposures", "broken.sql"), []byte("-- titel: Oops\nSELECT 1 AS x FROM orders\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "backfills", "broken.sql"), []byte("-- table: orders\nSELECT 1\n"), 0o644)
	code, out, errs := cli(t, "--config", filepath.Join(dir, "trueup.yaml"), "backfill", "plan", "fix_dedup_bug")
	if code != exitUsage || !strings.Contains(errs, "exposures/broken.sql:1:") || !strings.Contains(errs, "backfills/broken.sql:") {
		t.Errorf("exit %d, want %d naming both files' problems: %s %s", code, exitUsage, out, errs)
	}
}
