package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"trueup/notices"
	"trueup/views"
)

// noticeStates is each notice's state by id, as `trueup notice list --format json` says.
func noticeStates(t *testing.T, args ...string) map[int64]string {
	t.Helper()
	code, out, errs := cli(t, append(args, "notice", "list", "--format", "json")...)
	if code != 0 {
		t.Fatalf("notice list: exit %d: %s %s", code, out, errs)
	}
	var ns []notices.JSON
	if err := json.Unmarshal([]byte(out), &ns); err != nil {
		t.Fatalf("notice list: %v\n%s", err, out)
	}
	got := map[int64]string{}
	for _, n := range ns {
		got[n.ID] = string(n.State)
	}
	return got
}

// TestSwapNamesTheNoticeOfItsRun: run 1 of fix_dedup_bug built v2 (notice 1), run 2 was started
// for v3 and cancelled (notice 2). Swapping to v2 moves notice 1 only, and the dry run (text and
// JSON), the confirmation page and the swap itself all say so: none of them names the cancelled
// run's notice.
func TestSwapNamesTheNoticeOfItsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--config", cfg}, args...)...)
	}
	for _, args := range [][]string{
		{"backfill", "run", "fix_dedup_bug"},
		{"backfill", "run", "fix_dedup_bug", "--new-version", "--sample", "1"},
		{"backfill", "cancel", "fix_dedup_bug"},
	} {
		if code, out, errs := run(args...); code != 0 {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, errs)
		}
	}
	var ns []notices.JSON
	_, out, _ := run("notice", "list", "--format", "json")
	if err := json.Unmarshal([]byte(out), &ns); err != nil || len(ns) != 2 {
		t.Fatalf("want two notices, one per run (%v): %s", err, out)
	}
	titles := map[int64]string{}
	for _, n := range ns {
		titles[n.ID] = n.Title
	}

	code, out, errs := run("swap", "orders", "--to", "v2", "--dry-run")
	want := `notice 1 "` + titles[1] + `" (draft) becomes completed, and is sent to its subscribers`
	if code != 0 || !strings.Contains(out, want) || strings.Contains(out, "notice 2") {
		t.Errorf("swap --dry-run: exit %d, want it to name notice 1 only (%q): %s %s", code, want, out, errs)
	}
	_, out, _ = run("swap", "orders", "--to", "v2", "--dry-run", "--format", "json")
	var plan views.Plan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("swap --dry-run --format json: %v\n%s", err, out)
	}
	if len(plan.Notices) != 1 || plan.Notices[0] != (views.NoticeMove{ID: 1, Title: titles[1], From: "draft", To: "completed"}) {
		t.Errorf("swap --dry-run --format json: notices = %+v, want notice 1 draft → completed", plan.Notices)
	}

	srv := serveDemo(t, dir)
	resp, err := http.PostForm(srv.url+"/tables/orders/swap", url.Values{"to": {"v2"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	told := strings.Join(strings.Fields(d.Find(`[data-testid=confirm-told]`).Text()), " ")
	if resp.StatusCode != http.StatusOK || !strings.Contains(told, "The change notice "+titles[1]+" (draft) is marked completed") ||
		d.Find(`[data-testid=confirm-notice]`).Length() != 1 {
		t.Errorf("the confirmation page: status %d, who will be told: %q, want notice 1 alone", resp.StatusCode, told)
	}
	if href, _ := d.Find(`[data-testid=confirm-notice] a`).Attr("href"); href != "/notices/1" {
		t.Errorf("the confirmation page links the notice %q, want /notices/1", href)
	}

	if code, out, errs := cli(t, "--server", srv.url, "swap", "orders", "--to", "v2", "--reason", "fix"); code != 0 {
		t.Fatalf("swap: exit %d: %s %s", code, out, errs)
	}
	if got := noticeStates(t, "--server", srv.url); got[1] != "completed" || got[2] == "completed" {
		t.Errorf("after the swap the notices are %v: want notice 1 completed and the cancelled run's not", got)
	}
}
