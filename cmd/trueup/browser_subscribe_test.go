package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"trueup/internal/mailtest"
)

// TestBrowserSubscribe: a stakeholder subscribes from a notice's page, by the form, in
// Chromium; the confirmation arrives at a real SMTP receiver; its link confirms; the manage
// page lists the table; the notices index shows the subscription to the team and the table's
// page links its feed; the leave page's button ends it.
func TestBrowserSubscribe(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	mail := mailtest.New(t)
	addr := freeAddr(t)
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("notify:\n  public_url: http://" + addr + "\n  email: {smtp: '" + mail.Addr + "', from: 'trueup <trueup@example.com>'}\n")
	f.Close()
	if code, out, errs := cli(t, "--config", cfg, "backfill", "run", "fix_dedup_bug"); code != 0 {
		t.Fatalf("backfill run: exit %d: %s %s", code, out, errs)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var log bytes.Buffer
	go func() { done <- run(ctx, []string{"--config", cfg, "serve", "--addr", addr}, io.Discard, &log) }()
	t.Cleanup(func() {
		stop()
		<-done
		if t.Failed() {
			t.Logf("server log:\n%s", log.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not come up:\n%s", log.String())
		}
	}
	t.Setenv("TRUEUP_SCREENSHOTS", filepath.Join("..", "..", "test-artifacts", "browser-subscribe"))
	b := newBrowser(t, "http://"+addr)

	const who = "dana@example.com"
	b.do("notice page", 30*time.Second, chromedp.Navigate(b.base+"/notices/1"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=subscribe-form]`)))
	if got := b.texts(`[data-testid=subscribe-follow] option`); len(got) == 0 || got[0] != "table orders" {
		t.Errorf("the notice's form offers %v, want table orders first", got)
	}
	b.look("notice-subscribe")
	b.do("subscribe", 30*time.Second,
		chromedp.SendKeys(chromedp.CSS(`[data-testid=subscribe-email]`), who),
		chromedp.Click(chromedp.CSS(`[data-testid=subscribe-alerts]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=subscribe-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=subscription-heading]`)))
	if got := b.text(`[data-testid=subscription-heading]`); got != "Check your inbox" {
		t.Errorf("after subscribing: %q", got)
	}
	b.look("subscribe-answer")

	// The outbox worker sends the confirmation.
	var link string
	for deadline := time.Now().Add(30 * time.Second); link == ""; time.Sleep(50 * time.Millisecond) {
		for _, m := range mail.Messages() {
			if m.To == who {
				link = regexp.MustCompile(`http://\S+/subscriptions/confirm/\S+`).FindString(m.Text)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no confirmation reached %s", who)
		}
	}
	b.do("confirm", 30*time.Second, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`[data-testid=subscription-heading]`)))
	if got := b.text(`[data-testid=subscription-text]`); !strings.Contains(got, who+" will be told of changes to table orders and its rule alerts") {
		t.Errorf("confirmation page: %q", got)
	}
	b.look("subscribe-confirmed")
	b.click("manage", `[data-testid=subscription-manage-link]`, `[data-testid=manage-follows]`)
	if got := b.texts(`[data-testid=manage-follow] td`); len(got) < 2 || got[0] != "table orders" || got[1] != "yes" {
		t.Errorf("manage page lists %v", got)
	}
	b.look("subscribe-manage")
	manage := get(b, "manage url", chromedp.Location())

	b.do("notices index", 30*time.Second, chromedp.Navigate(b.base+"/notices"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=self-subscriptions]`)))
	if got := b.text(`[data-testid=self-subscription-row]`); !strings.Contains(got, who) || !strings.Contains(got, "active") {
		t.Errorf("the notices page lists %q", got)
	}
	b.look("notices-subscriptions")

	b.do("table page", 30*time.Second, chromedp.Navigate(b.base+"/tables/orders"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=table-feed] a`)))
	if href := get(b, "feed link", chromedp.Evaluate[string](`document.querySelector('[data-testid=table-feed] a').href`)); href != b.base+"/tables/orders/notices.atom" {
		t.Errorf("table feed link %q", href)
	}
	b.look("table-subscribe")

	b.do("leave page", 30*time.Second, chromedp.Navigate(strings.Replace(manage, "/manage/", "/unsubscribe/", 1)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=unsubscribe-submit]`)))
	b.look("unsubscribe")
	b.click("leave", `[data-testid=unsubscribe-submit]`, `[data-testid=subscription-heading]`)
	if got := b.text(`[data-testid=subscription-heading]`); got != "Unsubscribed" {
		t.Errorf("after leaving: %q", got)
	}
	b.look("unsubscribed")
}
