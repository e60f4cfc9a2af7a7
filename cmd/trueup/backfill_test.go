package main

import (
	"encoding/json"
	"path/filepath"
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
		{[]string{"plan", "nope"}, "backfill not found: nope"},
		{[]string{"frobnicate", "fix_dedup_bug"}, `unknown action "frobnicate"`},
		{[]string{"verify", "fix_dedup_bug"}, "give --from and --to"},
		{[]string{"run", "fix_dedup_bug", "--from", "2026-07-10"}, "give both --from and --to"},
		{[]string{"resume", "fix_dedup_bug"}, "nothing left to build"},
	} {
		code, _, errs := bf(tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, errs, tc.want)
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
