package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser drives Debian's Chromium through the demo as a person would, saving a screenshot of
// every step under test-artifacts/browser.
type browser struct {
	t     *testing.T
	ctx   context.Context
	base  string
	dir   string
	shots int
}

func chromiumPath(t *testing.T) string {
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: make test installs it (scripts/chromium.sh)")
	}
	t.Skip("chromium is not installed (make test installs it)")
	return ""
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser and ties it to this context, not to a step's deadline.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	dir := filepath.Join("..", "..", "test-artifacts", "browser")
	if d := os.Getenv("TRUEUP_SCREENSHOTS"); d != "" {
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The folder holds this walk's pages only, numbered in order.
	old, _ := filepath.Glob(filepath.Join(dir, "*.png"))
	for _, f := range old {
		os.Remove(f)
	}
	return &browser{t: t, ctx: ctx, base: base, dir: dir}
}

// throttle sets a backfill file's throttle header (the pause between its batches).
func throttle(t *testing.T, file, d string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append([]byte("-- throttle: "+d+"\n"), b...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// do runs actions with a deadline, failing the test with what step it was.
func (b *browser) do(step string, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.shot("failed-" + step)
		b.t.Fatalf("%s: %v", step, err)
	}
}

// layoutJS lists what is wrong with the page shown at the window's width: the page or a box in
// it scrolls sideways, a date in a table cell breaks over two lines, a chart's label is cut off
// at the chart's edge.
const layoutJS = `(() => {
	const out = [], w = window.innerWidth;
	const name = e => e.dataset.testid || e.tagName.toLowerCase() + (e.className && typeof e.className === 'string' ? '.' + e.className : '');
	if (document.documentElement.scrollWidth > w) {
		out.push('the page is ' + document.documentElement.scrollWidth + ' px wide in a ' + w + ' px window');
	}
	for (const e of document.querySelectorAll('body *')) {
		const x = getComputedStyle(e).overflowX;
		if ((x === 'auto' || x === 'scroll') && e.scrollWidth > e.clientWidth + 1) {
			const inner = e.querySelector('[data-testid]');
			out.push(name(inner || e) + ' scrolls sideways: ' + e.scrollWidth + ' px in ' + e.clientWidth + ' px');
		}
	}
	const date = /\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?(?: UTC)?/g;
	for (const cell of document.querySelectorAll('td, th')) {
		const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
		for (let n; (n = walk.nextNode()); ) {
			for (const m of n.data.matchAll(date)) {
				const r = document.createRange();
				r.setStart(n, m.index);
				r.setEnd(n, m.index + m[0].length);
				if (new Set(Array.from(r.getClientRects()).map(q => Math.round(q.top))).size > 1) {
					out.push('"' + m[0] + '" wraps in ' + name(cell.closest('[data-testid]') || cell));
				}
			}
		}
	}
	for (const svg of document.querySelectorAll('svg')) {
		const box = svg.getBoundingClientRect();
		for (const t of svg.querySelectorAll('text')) {
			const r = t.getBoundingClientRect();
			if (r.width > 0 && (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)) {
				out.push('the chart label "' + t.textContent + '" is cut off at the edge of ' + name(svg.closest('[data-testid]') || svg));
			}
		}
	}
	return out;
})()`

// withinWidth fails the test when the control sel is not inside the window's width as its page
// loads: a main action is not in a column scrolled off to the side.
func (b *browser) withinWidth(what, sel string) {
	b.t.Helper()
	if off := get(b, what+" within the width", chromedp.Evaluate[bool](`(() => {
		const r = document.querySelector(`+strconv.Quote(sel)+`).getBoundingClientRect();
		return r.left < 0 || r.right > window.innerWidth })()`)); off {
		b.t.Errorf("the %s control is outside the window's width", what)
	}
}

// look checks what every page of the walk owes its reader in a 1280 px window (layoutJS), then
// saves its screenshot.
func (b *browser) look(name string) {
	b.t.Helper()
	for _, p := range get(b, "layout of "+name, chromedp.Evaluate[[]string](layoutJS)) {
		b.t.Errorf("%s: %s", name, p)
	}
	b.shot(name)
}

func (b *browser) shot(name string) {
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	b.shots++
	path := filepath.Join(b.dir, strconv.Itoa(100 + b.shots)[1:]+"-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
}

// get runs one action that returns a value.
func get[T any](b *browser, step string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.shot("failed-read")
		b.t.Fatalf("%s: %v", step, err)
	}
	return v
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return strings.Join(strings.Fields(get(b, "read "+sel, chromedp.Text(chromedp.CSS(sel)))), " ")
}

func (b *browser) texts(sel string) []string {
	b.t.Helper()
	return get(b, "read all "+sel, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll(`+strconv.Quote(sel)+`)).map(e => e.textContent.trim())`))
}

// mark marks the page shown, so that a wait for body:not([data-old]) … waits for the next one.
func (b *browser) mark() {
	b.t.Helper()
	get(b, "mark the page", chromedp.Evaluate[bool](`document.body.dataset.old = "1", true`))
}

func (b *browser) click(step, sel, waitFor string) {
	b.t.Helper()
	b.do(step, 60*time.Second, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS(waitFor)))
}

// TestBrowserWalk walks the whole demo flow by clicks: the failing rule on the dashboard, the
// plan it leads to, the dry run, the run to 100%, the validation, the swap, the notice, the
// rollback.
func TestBrowserWalk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	if code, _, errs := cli(t, "demo", "--dir", dir, "--rows", "100000", "--write-only"); code != 0 {
		t.Fatalf("demo: %s", errs)
	}
	// The run pauses between its batches, so the walk sees it in flight (step 5).
	throttle(t, filepath.Join(dir, "backfills", "fix_dedup_bug.sql"), "300ms")
	addr := freeAddr(t)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serverLog bytes.Buffer
	go func() {
		done <- run(ctx, []string{"--config", filepath.Join(dir, "trueup.yaml"), "serve", "--addr", addr}, io.Discard, &serverLog)
	}()
	t.Cleanup(func() {
		stop()
		<-done
		if t.Failed() {
			t.Logf("server log:\n%s", serverLog.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not come up:\n%s", serverLog.String())
		}
	}
	b := newBrowser(t, "http://"+addr)

	// 1. The dashboard says what needs attention: the totals rule fails.
	b.do("dashboard", 60*time.Second, chromedp.Navigate(b.base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=work-rules] [data-name=matches_raw]`)))
	if got := b.text(`[data-testid=work-rules] [data-name=matches_raw]`); !strings.Contains(got, "9 failing partitions") {
		t.Errorf("dashboard: %q", got)
	}
	b.look("dashboard")

	// 2. The failing rule names the nine days.
	b.click("open rule", `[data-testid=work-rules] [data-name=matches_raw] a`, `[data-testid=rule-title]`)
	body := get(b, "rule page", chromedp.Text(chromedp.CSS("main")))
	for _, day := range []string{"2026-07-10", "2026-07-14", "2026-07-18"} {
		if !strings.Contains(body, day) {
			t.Errorf("rule page does not name %s", day)
		}
	}
	if strings.Contains(body, "2026-07-09") || strings.Contains(body, "2026-07-19") {
		t.Error("rule page names a day outside the bug")
	}
	// Its history charts the violations of each run, under the pass/fail strip.
	// (Every run so far found the nine days: the walk's check, and a scheduled run when the
	// walk happens to cross one of the demo rules' cron slots.)
	vbars := get(b, "violations chart", chromedp.Evaluate[map[string]int](`({
		nine: document.querySelectorAll('[data-testid=violations-chart] rect[data-violations="9"]').length,
		all: document.querySelectorAll('[data-testid=violations-chart] rect[data-violations]').length})`))
	if vbars["nine"] == 0 || vbars["nine"] != vbars["all"] {
		t.Errorf("the violations chart has %d bars of 9 violations among %d, want every run's", vbars["nine"], vbars["all"])
	}
	b.look("rule-failing")

	// 3. Plan a backfill for the failing partitions.
	b.click("plan", `[data-testid=plan-backfill-link]`, `[data-testid=plan-partition-count]`)
	if got := b.text(`[data-testid=plan-partition-count]`); got != "9" {
		t.Errorf("plan partitions %q", got)
	}
	if got := b.text(`[data-testid=plan-downstream]`); !strings.HasPrefix(got, "27 refreshes") {
		t.Errorf("plan downstream %q", got)
	}
	b.withinWidth("run", `[data-testid=run]`)
	b.look("plan")

	// 4. Dry run: about +5% on exactly the nine days, nothing written.
	b.click("dry run", `[data-testid=dry-run]`, `[data-testid=dry-run-verdict]`)
	if got := b.text(`[data-testid=dry-run-verdict]`); !strings.Contains(got, "meets its expectations") {
		t.Errorf("dry run verdict %q", got)
	}
	pcts := b.texts(`[data-testid=diff][data-table=orders] [data-testid=diff-pct]`)
	if len(pcts) != 9 {
		t.Errorf("dry run shows %d changed days, want 9: %v", len(pcts), pcts)
	}
	for _, p := range pcts {
		if v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(p, "+"), "%"), 64); err != nil || v < 3 || v > 7 {
			t.Errorf("dry run pct_change %q, want about +5%%", p)
		}
	}
	// The dry run is kept: a page of its own, which a reload shows again.
	if loc := get(b, "dry run url", chromedp.Location()); !strings.HasSuffix(loc, "/backfills/fix_dedup_bug/dry-run") {
		t.Errorf("the dry run is at %s", loc)
	}
	b.do("reload the dry run", 30*time.Second, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`[data-testid=dry-run-when]`)))
	b.look("dry-run")

	// 5. Run, and watch the progress reach 100%.
	b.click("back to plan", `[data-testid=back-to-plan]`, `[data-testid=run]`)
	if got := b.text(`[data-testid=no-run]`); !strings.Contains(got, "A dry run ran") {
		t.Errorf("the plan after the dry run says %q", got)
	}
	b.do("run", 60*time.Second, chromedp.Click(chromedp.CSS(`[data-testid=run]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=progress]`)))
	// While the run builds, Run and Dry run are off: a second click starts nothing. Every
	// change of the page is looked at until the run has ended (the throttle set above keeps it
	// in flight for seconds), and the walk must have seen it in flight at least once.
	seen := get(b, "buttons while in flight", chromedp.Evaluate[map[string]int](`new Promise(resolve => {
		const seen = {inFlight: 0, live: 0};
		const live = id => { const e = document.querySelector('[data-testid=' + id + ']'); return e !== null && !e.disabled; };
		const look = () => {
			const p = document.querySelector('[data-testid=progress]');
			const state = p ? p.dataset.state : '';
			if (state === 'running' || state === 'validating' || state === 'pending') {
				seen.inFlight++;
				if (live('run') || live('dry-run')) seen.live++;
				return;
			}
			if (state !== '') { mo.disconnect(); resolve(seen); }
		};
		const mo = new MutationObserver(look);
		mo.observe(document.body, {subtree: true, childList: true, attributes: true});
		look();
	})`, chromedp.EvalAwaitPromise))
	t.Logf("looks in flight: %v", seen)
	if seen["inFlight"] == 0 {
		t.Error("the walk never saw the run in flight: the check of its buttons proved nothing")
	}
	if seen["live"] > 0 {
		t.Errorf("Run or Dry run was live in %d of %d looks while the run was in flight", seen["live"], seen["inFlight"])
	}
	b.do("run to the end", 180*time.Second, chromedp.WaitVisible(chromedp.CSS(`[data-testid=progress][data-state=validated]`)))
	if got := b.text(`[data-testid=progress-percent]`); got != "100%" {
		t.Errorf("progress %q at the end", got)
	}
	// After a validated run the page offers Run again, which says it builds v3 and asks first;
	// unasked, the API refuses to build v3 beside the validated v2.
	b.do("run again", 30*time.Second, chromedp.WaitVisible(chromedp.CSS(`[data-testid=run-again-open]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=run-again-open]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid=run-again-confirm]`)))
	if got := b.text(`[data-testid=run-again-text]`); !strings.Contains(got, "orders v2 is validated and not published yet") || !strings.Contains(got, "builds v3") {
		t.Errorf("run again says %q", got)
	}
	if n := get(b, "run buttons", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=run]').length`)); n != 0 {
		t.Error("a plain Run button is still offered after a validated run")
	}
	resp, err := http.Post(b.base+"/api/v1/backfills/fix_dedup_bug/run", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	refusal, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(refusal), "would build v3") {
		t.Errorf("a second run unasked: %d %s", resp.StatusCode, refusal)
	}
	b.do("close run again", 10*time.Second, chromedp.Click(chromedp.CSS(`[data-testid=run-again-open]`)))
	b.look("progress-100")

	// 6. The validation passed: rules on the new versions and the diff against expectations.
	if got := b.text(`[data-testid=validation-verdict]`); got != "passed" {
		t.Errorf("validation %q", got)
	}
	if got := b.texts(`[data-testid=validation-rule][data-status=pass]`); len(got) != 3 {
		t.Errorf("%d rules passed on the new versions, want 3", len(got))
	}
	// daily_revenue has one row a day: its rows do not change, its revenue does, and that is
	// what its chart, its headline and its table say.
	if got := get(b, "daily_revenue charted", chromedp.Evaluate[string](
		`document.querySelector('[data-testid=diff][data-table=daily_revenue] [data-testid=diff-chart]').dataset.charted`)); got != "sum(revenue)" {
		t.Errorf("daily_revenue's chart shows %q, want sum(revenue)", got)
	}
	if got := b.text(`[data-testid=run-verdict] [data-table=daily_revenue] [data-testid=verdict-headline]`); !strings.Contains(got, "rows unchanged") || !strings.Contains(got, "sum(revenue) +5") {
		t.Errorf("daily_revenue's headline %q", got)
	}
	// The verdict and the next step come first: on screen as the page stands.
	if below := get(b, "verdict on screen", chromedp.Evaluate[bool](
		`document.querySelector('[data-testid=verdict-publish]').getBoundingClientRect().bottom > window.innerHeight + window.scrollY`)); below {
		t.Error("the validated run's publish button is below the first screen")
	}
	for _, p := range b.texts(`[data-testid=diff][data-table=daily_revenue] [data-testid=diff-measure-pct]`) {
		if !regexp.MustCompile(`^\+[3-7]\.\d%$`).MatchString(p) {
			t.Errorf("daily_revenue's revenue change %q, want about +5%% written +5.3%%", p)
		}
	}
	b.look("validation")
	diffHref := get(b, "full diff link", chromedp.Evaluate[string](
		`document.querySelector('[data-testid=diff][data-table=orders] header a').getAttribute('href')`))
	revenueDiffHref := get(b, "daily_revenue's diff link", chromedp.Evaluate[string](
		`document.querySelector('[data-testid=diff][data-table=daily_revenue] header a').getAttribute('href')`))

	// 7. Swap: the confirmation says exactly what changes; then v2 is live.
	// The run drafted its notice: a draft offers Announce, and leads on to the swap.
	b.do("draft notice", 30*time.Second, chromedp.Navigate(b.base+"/notices"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=notice-row][data-state=draft] a`)))
	b.click("open the draft", `[data-testid=notice-row][data-state=draft] a`, `[data-testid=announce] button`)
	if got := b.text(`[data-testid=notice-state]`); got != "draft, not sent yet." {
		t.Errorf("draft notice state %q", got)
	}
	b.withinWidth("announce", `[data-testid=announce] button`)
	b.look("notice-draft")
	b.click("versions page", `[data-testid=notice-swap]`, `[data-testid=swap-button]`)
	// The product's main action is on screen as the page loads: not in a column scrolled off
	// to the side.
	if off := get(b, "swap button on screen", chromedp.Evaluate[bool](
		`(() => { const r = document.querySelector('[data-testid=swap-button]').getBoundingClientRect();
			return r.left < 0 || r.right > window.innerWidth || r.bottom > window.innerHeight })()`)); off {
		t.Error("the swap button is outside the viewport when the versions page loads")
	}
	if fits := get(b, "versions table fits", chromedp.Evaluate[bool](
		`(() => { const d = document.querySelector('[data-testid=versions]').parentElement; return d.scrollWidth <= d.clientWidth })()`)); !fits {
		t.Error("the versions table scrolls sideways at 1280 px")
	}
	b.look("versions")
	b.click("swap", `[data-testid=swap-button]`, `[data-testid=confirm-button]`)
	changes := b.text(`[data-testid=changes]`)
	for _, want := range []string{"orders", "daily_revenue", "customer_ltv", "region_summary", "v1", "v2"} {
		if !strings.Contains(changes, want) {
			t.Errorf("confirmation does not say %q: %s", want, changes)
		}
	}
	if got := b.text(`[data-testid=confirm-told]`); !strings.Contains(got, "change notice") || !strings.Contains(got, "marked completed") {
		t.Errorf("confirmation does not say who is told: %q", got)
	}
	b.look("swap-confirm")
	b.click("confirm swap", `[data-testid=confirm-button]`, `[data-testid=live]`)
	if got := b.text(`[data-testid=live]`); !strings.Contains(got, "v2") {
		t.Errorf("after the swap live is %q", got)
	}
	b.look("swapped")

	// The swap reruns the rules of the tables it moved: the dashboard stops listing the fixed
	// rule as failing, without anyone pressing Run now. (The rerun runs beside the request;
	// the dashboard is read again until it has landed, a minute at most.)
	for deadline := time.Now().Add(time.Minute); ; {
		b.do("dashboard after the swap", 30*time.Second, chromedp.Navigate(b.base+"/"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid=nav]`)))
		gone := get(b, "failing rule listed", chromedp.Evaluate[bool](
			`document.querySelector('[data-testid=work-rules] [data-name=matches_raw]') === null`))
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a minute after the swap the dashboard still lists matches_raw as failing")
		}
	}
	// The dashboard lists the swap among what went live lately.
	if got := b.text(`[data-testid=recent-publish][data-kind=swap][data-table=orders]`); !strings.Contains(got, "orders v1 → v2") {
		t.Errorf("the dashboard's recent swaps say %q", got)
	}
	b.look("dashboard-after-swap")

	// 8. The notice completed itself on the swap and tells readers what changed.
	b.do("notices", 30*time.Second, chromedp.Navigate(b.base+"/notices"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=notice-row] a`)))
	b.click("open notice", `[data-testid=notice-row] a`, `[data-testid=notice-state]`)
	if got := b.text(`[data-testid=notice-state]`); !strings.HasPrefix(got, "completed. The new data went live") {
		t.Errorf("notice state %q after the swap", got)
	}
	if got := b.text(`[data-testid=notice-body]`); strings.Contains(got, "will be rebuilt") || strings.Contains(got, "not set yet") {
		t.Errorf("the completed notice's text still tells of the future: %q", got)
	}
	noticeURL := get(b, "notice url", chromedp.Location())
	if got := b.text(`[data-testid=notice-body]`); !regexp.MustCompile(`2026-07-10|July`).MatchString(got) || !strings.Contains(got, "orders") {
		t.Errorf("notice text: %q", got)
	}
	b.look("notice-completed")

	// 9. Rollback: one more click puts v1 back, and the notice says so.
	b.do("versions again", 30*time.Second, chromedp.Navigate(b.base+"/tables/orders?target=warehouse"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=rollback-button]`)))
	b.withinWidth("rollback", `[data-testid=rollback-button]`)
	b.click("rollback", `[data-testid=rollback-button]`, `[data-testid=confirm-button]`)
	b.look("rollback-confirm")
	b.click("confirm rollback", `[data-testid=confirm-button]`, `[data-testid=live]`)
	if got := b.text(`[data-testid=live]`); !strings.Contains(got, "v1") {
		t.Errorf("after the rollback live is %q", got)
	}
	b.look("rolled-back")
	b.do("notice again", 30*time.Second, chromedp.Navigate(noticeURL), chromedp.WaitVisible(chromedp.CSS(`[data-testid=notice-state]`)))
	if got := b.text(`[data-testid=notice-state]`); !strings.HasPrefix(got, "rolled-back on ") {
		t.Errorf("notice state %q after the rollback", got)
	}
	b.look("notice-rolled-back")

	// 10. The validation's full diff of orders: the chart colours the nine days as expected, and a
	// day opens on the rows it gained.
	b.do("full diff", 30*time.Second, chromedp.Navigate(b.base+diffHref),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=diff-chart] svg`)))
	bars := get(b, "chart bars", chromedp.Evaluate[map[string]int](`(() => {
		const m = {};
		document.querySelectorAll('[data-testid=diff-chart] rect[data-verdict]').forEach(r => {
			const k = r.dataset.verdict + ' ' + r.getAttribute('fill'); m[k] = (m[k] || 0) + 1;
		});
		return m;
	})()`))
	fills := map[string]string{}
	for k, n := range bars {
		verdict, fill, _ := strings.Cut(k, " ")
		if fills[verdict] != "" {
			t.Errorf("%s bars in two colours: %v", verdict, bars)
		}
		fills[verdict] = fill
		if verdict == "expected" && n != 9 {
			t.Errorf("%d bars expected, want the nine days: %v", n, bars)
		}
	}
	if fills["expected"] == "" || fills["expected"] == fills["identical"] || fills["identical"] == "" {
		t.Errorf("chart colours by verdict: %v", bars)
	}
	// The diff leads back to the run it validated and to the table's versions.
	if got := get(b, "diff links", chromedp.Evaluate[string](
		`document.querySelector('[data-testid=diff-backfill]').getAttribute('href') + ' ' + document.querySelector('[data-testid=diff-versions]').getAttribute('href')`)); got != "/backfills/fix_dedup_bug /tables/orders?target=warehouse" {
		t.Errorf("diff links %q", got)
	}
	b.look("diff")
	b.click("open a day", `[data-testid=diff-row][data-partition="2026-07-10"] a`, `[data-testid=partition-verdict]`)
	if got := get(b, "day verdict", chromedp.Evaluate[string](`document.querySelector('[data-testid=partition-verdict]').dataset.verdict`)); got != "expected" {
		t.Errorf("2026-07-10 verdict %q", got)
	}
	if rows := b.texts(`[data-testid=added-rows] tbody tr`); len(rows) == 0 {
		t.Error("2026-07-10 shows no added rows")
	}
	b.look("diff-partition")

	// daily_revenue's full diff charts its revenue: nine bars of about +5%, not a flat line of
	// unchanged row counts.
	b.do("daily_revenue's diff", 30*time.Second, chromedp.Navigate(b.base+revenueDiffHref),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=diff-chart] svg`)))
	if got := b.text(`[data-testid=diff-chart-caption]`); !strings.Contains(got, "sum(revenue)") {
		t.Errorf("daily_revenue's chart caption %q", got)
	}
	if tall := get(b, "daily_revenue's bars", chromedp.Evaluate[int](
		`Array.from(document.querySelectorAll('[data-testid=diff-chart] rect[data-verdict=expected]')).filter(r => r.getBBox().height > 20).length`)); tall != 9 {
		t.Errorf("daily_revenue's chart has %d non-zero bars, want the nine days", tall)
	}
	b.look("diff-daily-revenue")

	// 11. Time travel: the swap's row on daily_revenue's page opens the board report as of after
	// the swap (v2), beside live now (v1 again since the rollback), the July numbers marked.
	b.do("daily_revenue history", 30*time.Second, chromedp.Navigate(b.base+"/tables/daily_revenue?target=warehouse"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=publish-row]:last-child [data-testid=report-after]`)))
	b.click("report as of after the swap", `[data-testid=publish-row]:last-child [data-testid=report-after]`, `[data-testid=query-live]`)
	if got := b.text(`[data-testid=query-asked] [data-testid=query-read]`); !strings.Contains(got, "daily_revenue v2") {
		t.Errorf("as asked read %q, want daily_revenue v2", got)
	}
	if got := b.text(`[data-testid=query-live] [data-testid=query-read]`); !strings.Contains(got, "daily_revenue v1") {
		t.Errorf("live read %q, want daily_revenue v1", got)
	}
	numbers := b.texts(`[data-testid=query-changes] [data-testid=report-row]`)
	marked := b.texts(`[data-testid=query-changed]`)
	if len(numbers) == 0 || len(marked) != 2*len(numbers) {
		t.Errorf("%d numbers differ, %d cells marked: want each marked on both sides", len(numbers), len(marked))
	}
	for _, c := range numbers {
		if !strings.Contains(c, "July 2026") {
			t.Errorf("a number outside July changed: %q", c)
		}
	}
	b.look("query-after-swap")

	// The picker: daily_revenue at v1 is the live answer, no number differs. (The page before
	// is marked, so that each wait is for the answer to the new request.)
	b.mark()
	b.do("pick v1", 30*time.Second, chromedp.SetValue(chromedp.CSS(`[data-testid=query-version][data-table=daily_revenue]`), "v1"),
		chromedp.Click(chromedp.CSS(`[data-testid=query-run]`)), chromedp.WaitVisible(chromedp.CSS(`body:not([data-old]) [data-testid=query-unchanged]`)))
	if got := b.text(`main`); !strings.Contains(got, "No number differs") {
		t.Errorf("daily_revenue v1 against live v1: %q", got)
	}
	// The SQL box and the time: a time before trueup knew the table is refused with the reason.
	b.mark()
	b.do("own SQL as of long ago", 30*time.Second,
		chromedp.SetValue(chromedp.CSS(`[data-testid=query-exposure]`), ""),
		chromedp.SetValue(chromedp.CSS(`[data-testid=query-version][data-table=daily_revenue]`), ""),
		chromedp.SetValue(chromedp.CSS(`[data-testid=query-sql]`), "SELECT count(*) AS days FROM daily_revenue"),
		chromedp.SetValue(chromedp.CSS(`[data-testid=query-as-of]`), "2001-01-01"),
		chromedp.Click(chromedp.CSS(`[data-testid=query-run]`)), chromedp.WaitVisible(chromedp.CSS(`body:not([data-old]) [data-testid=query-error]`)))
	if got := b.text(`[data-testid=query-error]`); !strings.Contains(got, "daily_revenue: 2001-01-01 00:00:00 UTC is before trueup knew the table") {
		t.Errorf("refusal %q", got)
	}
	b.mark()
	b.do("own SQL live", 30*time.Second, chromedp.Clear(chromedp.CSS(`[data-testid=query-as-of]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=query-run]`)), chromedp.WaitVisible(chromedp.CSS(`body:not([data-old]) [data-testid=query-asked] [data-testid=query-row]`)))
	if got := b.text(`[data-testid=query-asked] [data-testid=query-row]`); got == "" || got == "0" {
		t.Errorf("days: %q", got)
	}
	b.look("query-own-sql")

	// The notice's report opens as of before its change: when it was drafted, v1 was live.
	b.do("notice for its reports", 30*time.Second, chromedp.Navigate(noticeURL),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=report-before]`)))
	b.click("report as of before the notice's change", `[data-testid=report-before]`, `[data-testid=query-live]`)
	if got := b.text(`[data-testid=query-asked] [data-testid=query-read]`); !strings.Contains(got, "daily_revenue v1") {
		t.Errorf("as of the notice's draft read %q, want daily_revenue v1", got)
	}
	if got := b.text(`[data-testid=query-head]`); !strings.Contains(got, "as of ") {
		t.Errorf("head %q does not say the time", got)
	}
	b.look("query-notice-before")

	// 12. The other pages of the navigation, filled by the walk.
	for _, p := range []struct{ name, path, sel string }{
		{"rules", "/rules", `[data-testid=rules]`},
		{"backfills", "/backfills", `[data-testid=backfills]`},
		{"notices", "/notices", `[data-testid=notices]`},
		{"diffs", "/diffs", `[data-testid=diff-list]`},
		{"audit", "/audit", `[data-testid=audit-table]`},
		{"tables", "/tables", `[data-testid=target-tables][data-target=warehouse] [data-testid=table-row]`},
		{"calendar", "/tables/daily_revenue/calendar?target=warehouse", `[data-testid=calendar]`},
	} {
		b.do(p.name, 30*time.Second, chromedp.Navigate(b.base+p.path), chromedp.WaitVisible(chromedp.CSS(p.sel)))
		switch p.name {
		case "backfills":
			// A backfill run only as another's downstream says so, not an empty chip.
			if got := b.texts(`[data-testid=backfill-scope]`); len(got) != 4 || slices.Contains(got, "") {
				t.Errorf("backfill scopes %q", got)
			}
		case "tables":
			// Tables in the navigation lists the logical tables of each target.
			if got := b.texts(`[data-testid=target-tables][data-target=warehouse] [data-testid=table-name]`); strings.Join(got, " ") != "customer_ltv daily_revenue orders region_summary" {
				t.Errorf("tables of warehouse %q", got)
			}
		case "calendar":
			// daily_revenue's days: matches_raw fails on the nine days again since the rollback, and
			// the backfill rebuilt those nine, swapped in and rolled back.
			cells := get(b, "calendar cells", chromedp.Evaluate[map[string]int](`(() => {
				const m = {};
				document.querySelectorAll('[data-testid=calendar-row]').forEach(r => r.querySelectorAll('[data-day]').forEach(c => {
					const k = r.dataset.name + ' ' + c.dataset.state; m[k] = (m[k] || 0) + 1; }));
				return m; })()`))
			if cells["matches_raw fail"] != 9 || cells["matches_raw pass"] != 83 || cells["fix_dedup_bug run 1 undone"] != 9 {
				t.Errorf("daily_revenue's calendar: %v", cells)
			}
		case "audit":
			// Each entry reads as a line; its parameters open on demand.
			for _, s := range b.texts(`[data-testid=audit-summary]`) {
				if strings.ContainsAny(s, "{}\"") {
					t.Errorf("audit summary reads as JSON: %q", s)
				}
			}
			if open := get(b, "audit details", chromedp.Evaluate[int](
				`document.querySelectorAll('[data-testid=audit-params][open]').length`)); open != 0 {
				t.Errorf("%d audit parameters open before they are asked for", open)
			}
		}
		b.look(p.name)
	}
}
