package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserSwapShowsTheCarry: after the pipeline wrote a new day to the live version while the
// backfill was built, the swap's confirmation says so before the click, and after a writer kept
// writing the old version the versions page names it with a catch-up button that shows what it carries, then carries it.
func TestBrowserSwapShowsTheCarry(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	url := "duckdb:" + filepath.Join(dir, "warehouse.duckdb")
	if code, out, errs := cli(t, "--config", cfg, "backfill", "run", "fix_dedup_bug"); code != 0 {
		t.Fatalf("backfill run: exit %d: %s %s", code, out, errs)
	}
	lateRows(t, url, "orders__v1", "2026-09-01", 0, 5)

	serveFor := func(t *testing.T) (string, func()) {
		addr := freeAddr(t)
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan int, 1)
		var log bytes.Buffer
		go func() { done <- run(ctx, []string{"--config", cfg, "serve", "--addr", addr}, io.Discard, &log) }()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
				resp.Body.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server did not come up:\n%s", log.String())
			}
		}
		return "http://" + addr, func() { stop(); <-done }
	}
	base, stop := serveFor(t)
	b := newBrowser(t, base)
	b.do("versions page", 30*time.Second, chromedp.Navigate(base+"/tables/orders"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=swap-button]`)))
	b.click("swap", `[data-testid=swap-button]`, `[data-testid=confirm-button]`)
	if got := b.text(`[data-testid=carry][data-table=orders]`); !strings.Contains(got, "live changed since the build: 1 partition, +5 rows — will be carried into v2") {
		t.Errorf("the confirmation's carry line: %q", got)
	}
	b.shot("swap-confirm-carry")
	b.click("confirm swap", `[data-testid=confirm-button]`, `[data-testid=live]`)
	stop()

	// A writer that kept writing v1 after the swap.
	lateRows(t, url, "orders__v1", "2026-09-02", 10, 3)
	base, stop = serveFor(t)
	b.base = base
	b.do("versions page", 30*time.Second, chromedp.Navigate(base+"/tables/orders"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=stale]`)))
	if got := b.text(`[data-testid=stale]`); !strings.Contains(got, "orders__v1 changed after it stopped being live: 2026-09-02 +3 rows not visible to readers") {
		t.Errorf("the versions page's stale line: %q", got)
	}
	b.shot("versions-stale")
	b.click("catch up", `[data-testid=catch-up-button]`, `[data-testid=confirm-button]`)
	if got := b.text(`[data-testid=catch-up-carry-row]`); got != "orders__v1 2026-09-02 +3 rows" {
		t.Errorf("the catch-up's confirmation carries %q", got)
	}
	b.click("confirm catch-up", `[data-testid=confirm-button]`, `[data-testid=flash]`)
	if got := b.text(`[data-testid=flash]`); !strings.Contains(got, "Caught up: 1 partition carried") {
		t.Errorf("after the catch-up: %q", got)
	}
	if n := b.texts(`[data-testid=stale]`); len(n) != 0 {
		t.Errorf("the versions page still names a stale version: %v", n)
	}
	stop() // the server holds the warehouse file
	if rows, ids := lateSeen(t, url); rows != 8 || ids != 8 {
		t.Errorf("readers see %d rows of the 8 the pipeline wrote (%d distinct)", rows, ids)
	}
}
