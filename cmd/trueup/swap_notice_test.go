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

	code, out, errs = cli(t, "--server", srv.url, "swap", "orders", "--to", "v2", "--reason", "fix")
	if done := `notice 1 "` + titles[1] + `": draft → completed`; code != 0 || !strings.Contains(out, done) || strings.Contains(out, "notice 2") {
		t.Fatalf("swap: exit %d, want it to say %q and nothing of notice 2: %s %s", code, done, out, errs)
	}
	if got := noticeStates(t, "--server", srv.url); got[1] != "completed" || got[2] == "completed" {
		t.Errorf("after the swap the notices are %v: want notice 1 completed and the cancelled run's not", got)
	}
}

// TestSwapButtonOfASetRollsTheSetBack: orders went live at v2 with its three downstream tables
// in one swap. The versions page's "Swap to v1" of orders does not split that set: its
// confirmation says so and is the rollback of the whole set, and confirming it puts all four
// tables back on v1.
func TestSwapButtonOfASetRollsTheSetBack(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	for _, args := range [][]string{{"backfill", "run", "fix_dedup_bug"}, {"swap", "orders", "--to", "v2", "--reason", "fix"}} {
		if code, out, errs := cli(t, append([]string{"--config", cfg}, args...)...); code != 0 {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, errs)
		}
	}
	srv := serveDemo(t, dir)
	page := func(path string, form url.Values) (int, *goquery.Document) {
		t.Helper()
		client := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.PostForm(srv.url+path, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		d, err := goquery.NewDocumentFromReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, d
	}
	// the versions page's button for v1
	resp, err := http.Get(srv.url + "/tables/orders")
	if err != nil {
		t.Fatal(err)
	}
	list, err := goquery.NewDocumentFromReader(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	btn := list.Find(`[data-testid=swap-form][data-version=v1]`)
	if btn.Length() != 1 {
		t.Fatalf("the versions page has no swap button for v1")
	}
	form := url.Values{}
	btn.Find("input").Each(func(_ int, in *goquery.Selection) {
		n, _ := in.Attr("name")
		v, _ := in.Attr("value")
		form.Add(n, v)
	})
	code, d := page("/tables/orders/swap", form)
	heading := strings.Join(strings.Fields(d.Find(`[data-testid=confirm-heading]`).Text()), " ")
	set := strings.Join(strings.Fields(d.Find(`[data-testid=confirm-set]`).Text()), " ")
	if code != http.StatusOK || heading != "Roll back orders?" || d.Find(`[data-testid=change-row]`).Length() != 4 ||
		!strings.Contains(set, "orders went live together with customer_ltv, daily_revenue and region_summary in swap #") ||
		!strings.Contains(set, "Swapping orders alone to v1 would leave them on the versions that swap made live, so this rolls back the whole set.") {
		t.Fatalf("the confirmation of Swap to v1: status %d, %q, %d changes, %q", code, heading, d.Find(`[data-testid=change-row]`).Length(), set)
	}
	action, _ := d.Find(`[data-testid=confirm-form]`).Attr("action")
	confirm := url.Values{}
	d.Find(`[data-testid=confirm-form] input`).Each(func(_ int, in *goquery.Selection) {
		n, _ := in.Attr("name")
		v, _ := in.Attr("value")
		confirm.Add(n, v)
	})
	if code, _ := page(action, confirm); code != http.StatusSeeOther {
		t.Fatalf("confirming: status %d", code)
	}
	for _, table := range []string{"orders", "daily_revenue", "customer_ltv", "region_summary"} {
		resp, err := http.Get(srv.url + "/api/v1/tables/" + table + "/write-target")
		if err != nil {
			t.Fatal(err)
		}
		var w struct {
			WriteTarget string `json:"write_target"`
		}
		err = json.NewDecoder(resp.Body).Decode(&w)
		resp.Body.Close()
		if got := w.WriteTarget; err != nil || got != table+"__v1" {
			t.Errorf("after the confirmation %s reads %s, want %s__v1", table, got, table)
		}
	}
}
