package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/config"
	"trueup/notices"
)

// Every value of trueup.yaml's notify section reaches notices, and each subscription names the
// same recipient on both sides (the outbox's idempotency keys and the pages depend on it).
func TestNoticeChannelsCarryTheNotifySection(t *testing.T) {
	p := filepath.Join(t.TempDir(), "trueup.yaml")
	body := `targets:
  w:
    url: duckdb:w.duckdb
notify:
  public_url: https://trueup.example.com
  webhooks:
    finance: {url: "https://hooks.example.com/f", secret: s3cret, legacy_signature: true}
    chat: {url: "https://hooks.slack.com/services/T/B/X", kind: slack}
  email: {smtp: "smtp.example.com:587", from: "trueup <trueup@example.com>", username: u, password: p, starttls: true}
  subscriptions:
    - {table: orders, webhook: finance}
    - {exposure: board_revenue, email: "CFO <CFO@Example.com>"}
`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	got := Channels(cfg.Notify)
	want := notices.Channels{
		PublicURL: "https://trueup.example.com",
		Webhooks: map[string]notices.Webhook{
			"finance": {URL: "https://hooks.example.com/f", Secret: "s3cret", LegacySignature: true},
			"chat":    {URL: "https://hooks.slack.com/services/T/B/X", Kind: notices.KindSlack},
		},
		Email: notices.Email{SMTP: "smtp.example.com:587", From: "trueup <trueup@example.com>", Username: "u", Password: "p", StartTLS: true},
		Subscriptions: []notices.Subscription{
			{Table: "orders", Webhook: "finance"},
			{Exposure: "board_revenue", Email: "CFO <CFO@Example.com>"},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("channels (-want +got):\n%s", d)
	}
	for i, s := range cfg.Notify.Subscriptions {
		if r := got.Subscriptions[i].Recipient(); r != s.Recipient() {
			t.Errorf("subscription %d: notices names %q, config %q", i, r, s.Recipient())
		}
	}
	if r := got.Subscriptions[1].Recipient(); r != "email:cfo@example.com" {
		t.Errorf("email recipient %q, want the bare lower-cased address", r)
	}
	if d := cmp.Diff(notices.Channels{}, Channels(config.Notify{})); d != "" {
		t.Errorf("no notify section (-want +got):\n%s", d)
	}
}
