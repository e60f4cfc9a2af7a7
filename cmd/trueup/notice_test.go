package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trueup/ledger"
	"trueup/notices"
)

// draftDemoNotice drafts a notice in the demo project's ledger, as the backfill runner does when
// a run is created.
func draftDemoNotice(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(dir, "trueup-state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ev := notices.Evidence{Backfill: "fix_dedup_bug", RunID: 1, Reason: "bug", Tables: []string{"orders", "daily_revenue"},
		Partitions: []string{"2026-07-10", "2026-07-11"}, Objective: "The dedup step dropped orders."}
	if _, err := notices.New(l, notices.Options{}).Draft(ctx, ev); err != nil {
		t.Fatal(err)
	}
}

func TestNoticeCommand(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	draftDemoNotice(t, dir)

	code, out, errs := cli(t, "--config", cfg, "notice", "list", "--format", "json")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errs)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 {
		t.Fatalf("list JSON %v: %s", err, out)
	}
	for _, k := range []string{"id", "state", "tables", "partitions", "title", "body"} {
		if _, ok := list[0][k]; !ok {
			t.Errorf("list JSON lacks %s", k)
		}
	}
	if list[0]["state"] != "draft" {
		t.Errorf("state %v", list[0]["state"])
	}

	code, out, _ = cli(t, "--config", cfg, "notice", "show", "1")
	if code != 0 || !strings.HasPrefix(out, "Correction to orders and daily_revenue") || !strings.Contains(out, "# What happened") {
		t.Errorf("show: exit %d:\n%s", code, out)
	}
	if code, _, _ = cli(t, "--config", cfg, "notice", "announce", "1"); code != 0 {
		t.Fatalf("announce: exit %d", code)
	}
	code, _, errs = cli(t, "--config", cfg, "notice", "announce", "1")
	if code != exitUsage || !strings.Contains(errs, "already announced") {
		t.Errorf("announce twice: exit %d: %s", code, errs)
	}
	code, out, _ = cli(t, "--config", cfg, "notice", "complete", "1", "--format", "json")
	var done map[string]any
	if err := json.Unmarshal([]byte(out), &done); code != 0 || err != nil || done["state"] != "completed" {
		t.Errorf("complete: exit %d, %v: %s", code, err, out)
	}
	code, out, _ = cli(t, "--config", cfg, "notice", "list", "--state", "completed")
	if code != 0 || !strings.Contains(out, "completed") {
		t.Errorf("list --state completed: exit %d:\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"notice", "show", "99"}, "notice 99: notice not found"},
		{[]string{"notice", "show", "x"}, `"x" is not a notice id`},
		{[]string{"notice", "list", "--state", "sent"}, `--state "sent"`},
		{[]string{"notice", "frob"}, `unknown verb "frob"`},
	} {
		code, _, errs := cli(t, append([]string{"--config", cfg}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d: %s (want %q)", tc.args, code, errs, tc.want)
		}
	}
}

func TestNoticeCommandRejectsBadExposure(t *testing.T) {
	dir := demoDir(t)
	bad := filepath.Join(dir, "exposures", "bad.sql")
	if err := os.WriteFile(bad, []byte("-- title: Bad\nDELETE FROM daily_revenue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := cli(t, "--config", filepath.Join(dir, "trueup.yaml"), "notice", "list")
	if code != exitUsage || !strings.Contains(errs, "bad.sql:2: exposure SQL: SQL starts with DELETE") {
		t.Errorf("exit %d: %s", code, errs)
	}
}
