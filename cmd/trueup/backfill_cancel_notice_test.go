package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"trueup/notices"
)

// TestCancelWithdrawsTheRunsDraft: cancelling a backfill run withdraws its draft notice, saying
// which run was cancelled and by whom (notice list and show; the public feed, which never showed
// the draft, does not show it withdrawn either); resuming the run makes it a draft again, which
// the validation refreshes; a new run after a cancel drafts a notice of its own.
func TestCancelWithdrawsTheRunsDraft(t *testing.T) {
	t.Parallel() // long: beside the package's other long tests
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--config", cfg}, args...)...)
	}
	show := func(id string) notices.JSON {
		t.Helper()
		code, out, errs := run("notice", "show", id, "--format", "json")
		var n notices.JSON
		if err := json.Unmarshal([]byte(out), &n); code != 0 || err != nil {
			t.Fatalf("notice show %s: exit %d (%v): %s %s", id, code, err, out, errs)
		}
		return n
	}
	last := func(n notices.JSON) notices.TransitionJSON { return n.Transitions[len(n.Transitions)-1] }

	if code, out, errs := run("backfill", "run", "fix_dedup_bug", "--sample", "1"); code != 0 {
		t.Fatalf("backfill run --sample 1: exit %d: %s %s", code, out, errs)
	}
	if n := show("1"); n.State != notices.StateDraft {
		t.Fatalf("the run's notice is %s, want a draft", n.State)
	}
	if code, out, errs := run("backfill", "cancel", "fix_dedup_bug"); code != 0 {
		t.Fatalf("backfill cancel: exit %d: %s %s", code, out, errs)
	}
	n := show("1")
	want := "Run 1 of backfill fix_dedup_bug was cancelled by " + cliActor() + "."
	if tr := last(n); n.State != notices.StateWithdrawn || tr.From != notices.StateDraft || tr.Reason != want || tr.Actor != cliActor() {
		t.Errorf("after the cancel the notice is %s, last transition %+v; want withdrawn from draft by %s: %q", n.State, tr, cliActor(), want)
	}
	if code, out, _ := run("notice", "list", "--state", "withdrawn"); code != 0 || !strings.Contains(out, "1   withdrawn") {
		t.Errorf("notice list --state withdrawn: exit %d, lacks notice 1: %s", code, out)
	}
	if code, out, _ := run("notice", "show", "1"); code != 0 || !strings.Contains(out, want) {
		t.Errorf("notice show 1 does not say why it was withdrawn (%q): %s", want, out)
	}
	if feed := serveAndGet(t, cfg, "/notices.atom"); strings.Contains(feed, "<entry>") {
		t.Errorf("the feed shows a draft nobody was told of, withdrawn:\n%s", feed)
	}

	if code, out, errs := run("backfill", "resume", "fix_dedup_bug"); code != 0 || !strings.Contains(out, "validated") {
		t.Fatalf("backfill resume: exit %d: %s %s", code, out, errs)
	}
	n = show("1")
	if tr := last(n); n.State != notices.StateDraft || tr.From != notices.StateWithdrawn ||
		tr.Reason != "Run 1 of backfill fix_dedup_bug was resumed by "+cliActor()+"." {
		t.Errorf("after the resume the notice is %s, last transition %+v; want a draft again, saying who resumed it", n.State, tr)
	}
	if n.Evidence == nil || len(n.Evidence.Expectations) == 0 {
		t.Errorf("the draft again was not refreshed by the resumed run's validation: %+v", n.Evidence)
	}

	// A new run, cancelled, and one after it: each has its own notice; the cancelled one's stays
	// withdrawn.
	for _, args := range [][]string{
		{"backfill", "run", "fix_dedup_bug", "--new-version", "--sample", "1"},
		{"backfill", "cancel", "fix_dedup_bug"},
		{"backfill", "run", "fix_dedup_bug", "--new-version"},
	} {
		if code, out, errs := run(args...); code != 0 {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, errs)
		}
	}
	if got := noticeStates(t, "--config", cfg); got[1] != "draft" || got[2] != "withdrawn" || got[3] != "draft" {
		t.Errorf("notices after run 2 was cancelled and run 3 built: %v, want 1 draft, 2 withdrawn, 3 draft", got)
	}
}

// TestCancelKeepsTheAnnouncedNotice: cancelling a run whose notice was already announced leaves
// the notice announced (a cancel may be a pause) and says so, with how to withdraw it, in text
// locally and in JSON through a server; a cancel of a run whose notice is a draft says nothing
// of it.
func TestCancelKeepsTheAnnouncedNotice(t *testing.T) {
	t.Parallel() // long: beside the package's other long tests
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--config", cfg}, args...)...)
	}
	note := func(id string) string {
		return "notice " + id + " was announced to subscribers; it stays announced: withdraw it with trueup notice withdraw " + id +
			" --reason … if the change is called off"
	}

	for _, args := range [][]string{{"backfill", "run", "fix_dedup_bug", "--sample", "1"}, {"notice", "announce", "1"}} {
		if code, out, errs := run(args...); code != 0 {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, errs)
		}
	}
	code, out, errs := run("backfill", "cancel", "fix_dedup_bug")
	if code != 0 || !strings.Contains(out, "cancelled") || !strings.Contains(out, note("1")) {
		t.Errorf("backfill cancel: exit %d, lacks %q: %s %s", code, note("1"), out, errs)
	}
	if got := noticeStates(t, "--config", cfg); got[1] != "announced" {
		t.Errorf("after the cancel notice 1 is %s, want announced", got[1])
	}

	srv := serveDemo(t, dir)
	remote := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--config", cfg, "--server", srv.url}, args...)...)
	}
	for _, args := range [][]string{{"backfill", "run", "fix_dedup_bug", "--new-version", "--sample", "1"}, {"notice", "announce", "2"}} {
		if code, out, errs := remote(args...); code != 0 {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, errs)
		}
	}
	code, out, errs = remote("backfill", "cancel", "fix_dedup_bug", "--format", "json")
	var got struct {
		RunID  int64  `json:"run_id"`
		State  string `json:"state"`
		Notice *struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
			Note  string `json:"note"`
		} `json:"notice"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("backfill cancel --format json through the server: exit %d (%v): %s %s", code, err, out, errs)
	}
	if got.RunID != 2 || got.State != "cancelled" || got.Notice == nil || got.Notice.ID != 2 || got.Notice.State != "announced" || got.Notice.Note != note("2") {
		t.Errorf("backfill cancel --format json: %+v (notice %+v), want run 2 cancelled with notice 2 announced: %q", got, got.Notice, note("2"))
	}

	// a run whose notice is a draft: the cancel withdraws it, and says nothing of a notice kept
	for _, args := range [][]string{{"backfill", "run", "fix_dedup_bug", "--new-version", "--sample", "1"}} {
		if code, out, errs := run(args...); code != 0 {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, errs)
		}
	}
	if code, out, errs := run("backfill", "cancel", "fix_dedup_bug", "--format", "json"); code != 0 || strings.Contains(out, `"notice"`) {
		t.Errorf("backfill cancel of a run with a draft notice: exit %d, want no notice kept: %s %s", code, out, errs)
	}
}
