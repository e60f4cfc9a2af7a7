package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/ledger"
	"trueup/notices"
)

// draftDemoNotice drafts a notice in the demo project's ledger, as the backfill runner does when
// a run is created.
func draftDemoNotice(t *testing.T, dir string) { draftDemoNoticeOf(t, dir, 1) }

// draftDemoNoticeOf drafts the notice of the demo's backfill run number run.
func draftDemoNoticeOf(t *testing.T, dir string, run int64) {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(dir, "trueup-state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ev := notices.Evidence{Backfill: "fix_dedup_bug", RunID: run, Reason: "bug", Tables: []string{"orders", "daily_revenue"},
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
	code, out, errs = cli(t, "--config", cfg, "notice", "edit", "1", "--planned-swap", "tomorrow")
	if code != exitUsage || !strings.Contains(errs, `--planned-swap: planned swap "tomorrow": want a time such as`) {
		t.Errorf("edit --planned-swap tomorrow: exit %d: %s", code, errs)
	}
	if code, _, errs = cli(t, "--config", cfg, "notice", "edit", "1"); code != exitUsage || !strings.Contains(errs, "--planned-swap TIME") {
		t.Errorf("edit without a change: exit %d: %s", code, errs)
	}
	code, out, errs = cli(t, "--config", cfg, "notice", "announce", "1", "--planned-swap", "2099-08-04 09:00")
	if code != 0 {
		t.Fatalf("announce: exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"Status: announced on ", "The change has not gone live yet; it is planned for Tuesday 4 August 2099 at 09:00 UTC.",
		"The new data is planned to go live on Tuesday 4 August 2099 at 09:00 UTC.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("announce --planned-swap: output lacks %q:\n%s", want, out)
		}
	}
	code, _, errs = cli(t, "--config", cfg, "notice", "announce", "1")
	if code != exitFailed || !strings.Contains(errs, "already announced") { // a conflict: exit 1
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
		{[]string{"notice", "show", "99"}, "There is no such notice."},
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

// TestNoticeFromDemoBackfill runs the demo's fix_dedup_bug backfill and reads the notice it
// drafted (evidenceOf on a real run): every table is said on its own line with what was
// compared, identical partitions are counted, and a revenue-only change shows its totals.
func TestNoticeFromDemoBackfill(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	if code, out, errs := cli(t, "--config", cfg, "backfill", "run", "fix_dedup_bug"); code != 0 {
		t.Fatalf("backfill run: exit %d: %s%s", code, out, errs)
	}
	code, out, errs := cli(t, "--config", cfg, "notice", "show", "1")
	if code != 0 {
		t.Fatalf("notice show: exit %d: %s", code, errs)
	}
	// The demo's tables hold 92 days each; the dedup bug touched 9 of them.
	for _, want := range []string{
		"- orders: of 92 days compared, 9 changed as expected (rows +",
		"- daily_revenue: of 92 days compared, 9 changed as expected (rows unchanged, sum(revenue) +",
		"- customer_ltv: of 92 days compared, 9 changed as expected (",
		"- region_summary: of 92 days compared, 9 changed as expected (rows unchanged, sum(revenue) +",
		"83 are identical and none changed unexpectedly.",
		"Rows and totals per order_date, old and new (332 identical partitions left out)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("notice lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "compared for every order_date: 36") || strings.Contains(out, "(0 partitions identical") {
		t.Errorf("the notice pools the tables or counts no identical partition:\n%s", out)
	}
	// daily_revenue has one row a day before and after: its change is in the revenue column.
	var revenueRows int
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 10 || f[0] != "daily_revenue" {
			continue
		}
		revenueRows++
		if f[2] != "1" || f[3] != "1" || f[4] != "0%" || f[5] != "sum(revenue)" || f[6] == f[7] || !strings.HasPrefix(f[8], "+") {
			t.Errorf("daily_revenue row %q: want 1 → 1 rows and the revenue totals rising", line)
		}
	}
	if revenueRows != 9 {
		t.Errorf("%d daily_revenue rows in the numbers, want 9:\n%s", revenueRows, out)
	}
	code, out, _ = cli(t, "--config", cfg, "notice", "show", "1", "--format", "json")
	var doc struct {
		Evidence notices.Evidence `json:"evidence"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("show --format json: exit %d, %v", code, err)
	}
	want := []notices.TableComparison{
		{Table: "orders", Partitions: 92, Identical: 83}, {Table: "daily_revenue", Partitions: 92, Identical: 83},
		{Table: "customer_ltv", Partitions: 92, Identical: 83}, {Table: "region_summary", Partitions: 92, Identical: 83},
	}
	if diff := cmp.Diff(want, doc.Evidence.Compared); diff != "" {
		t.Errorf("evidence.compared (-want +got):\n%s", diff)
	}
}

// Every notice verb goes through a server as it runs locally, the same output and exit code:
// list, show, edit and announce with the planned time, complete, withdraw, deliver, and their
// refusals.
func TestNoticePlanThroughServer(t *testing.T) {
	local, served := demoDir(t), demoDir(t)
	for _, dir := range []string{local, served} {
		draftDemoNoticeOf(t, dir, 1)
		draftDemoNoticeOf(t, dir, 2)
	}
	srv := serveDemo(t, served)
	for _, tc := range []remoteCase{
		{"notice_list_text", []string{"notice", "list"}, exitOK, "text"},
		{"notice_list_table", []string{"notice", "list", "--table", "orders", "--state", "draft", "--format", "json"}, exitOK, "json"},
		{"notice_show_json", []string{"notice", "show", "2", "--format", "json"}, exitOK, "json"},
		{"notice_show_missing", []string{"notice", "show", "99"}, exitUsage, "text"},
		{"notice_edit_plan", []string{"notice", "edit", "1", "--planned-swap", "2099-08-04 09:00", "--format", "json"}, exitOK, "json"},
		{"notice_edit_past", []string{"notice", "edit", "1", "--planned-swap", "2001-08-04 09:00"}, exitUsage, "text"},
		{"notice_announce_plan", []string{"notice", "announce", "1", "--planned-swap", "2099-08-05T10:00:00Z"}, exitOK, "text"},
		{"notice_edit_announced", []string{"notice", "edit", "1", "--planned-swap", "2099-08-06 10:00"}, exitFailed, "text"},
		{"notice_complete", []string{"notice", "complete", "1", "--reason", "published by hand", "--format", "json"}, exitOK, "json"},
		{"notice_complete_again", []string{"notice", "complete", "1"}, exitFailed, "text"},
		{"notice_withdraw", []string{"notice", "withdraw", "2", "--reason", "not needed"}, exitOK, "text"},
		{"notice_withdraw_again", []string{"notice", "withdraw", "2", "--format", "json"}, exitFailed, "text"},
		{"notice_withdraw_missing", []string{"notice", "withdraw", "99"}, exitUsage, "text"},
		{"notice_complete_missing", []string{"notice", "complete", "99"}, exitUsage, "text"},
		{"notice_deliver", []string{"notice", "deliver"}, exitOK, "text"},
		{"notice_list_after", []string{"notice", "list", "--format", "json"}, exitOK, "json"},
	} {
		t.Run(tc.name, func(t *testing.T) { compareModes(t, local, srv, tc) })
		if tc.name == "notice_announce_plan" {
			_, out, _ := cli(t, "--server", srv.url, "notice", "show", "1")
			if !strings.Contains(out, "it is planned for Wednesday 5 August 2099 at 10:00 UTC.") {
				t.Errorf("through the server:\n%s", out)
			}
		}
	}
}

// TestNoticeEditMissing: `trueup notice edit 999` is not found (exit 2, saying so) locally and
// through a server, as `notice show 999` is, and writes nothing.
func TestNoticeEditMissing(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	local := demoDir(t)
	srv := serveDemo(t, demoDir(t))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"local", []string{"--config", filepath.Join(local, "trueup.yaml")}, "There is no such notice."},
		{"server", []string{"--server", srv.url}, "There is no such notice."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := ledgerSnapshot(t, srv.a)
			code, out, errs := cli(t, append(tc.args, "notice", "edit", "999", "--planned-swap", "2026-08-04T09:00:00Z")...)
			if code != exitUsage || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.want) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q: want exit %d and the one line %q", code, out, errs, exitUsage, tc.want)
			}
			if after := ledgerSnapshot(t, srv.a); after != before {
				t.Errorf("the server's ledger changed:\n%s", changed(before, after))
			}
		})
	}
}
