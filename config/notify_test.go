package config_test

import (
	"errors"
	"strings"
	"testing"

	"trueup/config"
	"trueup/fault"
)

const notifyBase = "targets:\n  w:\n    url: duckdb:x.duckdb\n"

func TestNotify(t *testing.T) {
	body := notifyBase + `notify:
  public_url: https://trueup.example.com
  webhooks:
    finance:
      url: https://hooks.example.com/trueup
      secret: s3cret
  email:
    smtp: smtp.example.com:587
    from: trueup@example.com
    starttls: true
  subscriptions:
    - table: daily_revenue
      webhook: finance
    - exposure: board_revenue
      email: CFO <CFO@Example.com>
`
	c, err := config.Parse("trueup.yaml", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	n := c.Notify
	if n.PublicURL != "https://trueup.example.com" || n.Webhooks["finance"].Secret != "s3cret" || !n.Email.StartTLS {
		t.Errorf("notify = %+v", n)
	}
	var got []string
	for _, s := range n.Subscriptions {
		got = append(got, s.Recipient())
	}
	if strings.Join(got, " ") != "webhook:finance email:cfo@example.com" {
		t.Errorf("recipients = %q", got)
	}
}

func TestNotifyErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"email_not_an_address", "notify:\n  email: {smtp: 'm:25', from: a@b.c}\n  subscriptions:\n    - table: t\n      email: finance at example\n",
			`trueup.yaml:8: subscription: "finance at example" is not an email address`},
		{"email_two_addresses", "notify:\n  email: {smtp: 'm:25', from: a@b.c}\n  subscriptions:\n    - table: t\n      email: a@b.c, d@e.f\n",
			`trueup.yaml:8: subscription: "a@b.c, d@e.f" is not an email address`},
		{"webhook_url_not_http", "notify:\n  webhooks:\n    fin:\n      url: ftp://x/y\n      secret: s\n",
			`trueup.yaml:7: webhook url "ftp://x/y": want an http:// or https:// URL`},
		{"webhook_url_no_host", "notify:\n  webhooks:\n    fin:\n      url: 'https://'\n      secret: s\n",
			`trueup.yaml:7: webhook url "https://": has no host`},
		{"webhook_without_secret", "notify:\n  webhooks:\n    fin:\n      url: https://x/y\n",
			`trueup.yaml:7: webhook: missing secret`},
		{"unknown_webhook", "notify:\n  webhooks:\n    fin: {url: 'https://x/y', secret: s}\n  subscriptions:\n    - table: t\n      webhook: finance\n",
			`trueup.yaml:8: subscription: webhook "finance" is not one of notify.webhooks (fin)`},
		{"email_without_smtp", "notify:\n  subscriptions:\n    - table: t\n      email: a@b.c\n",
			`trueup.yaml:6: subscription: email to a@b.c needs notify.email`},
		{"no_channel", "notify:\n  subscriptions:\n    - table: t\n", `trueup.yaml:6: subscription: name a webhook or an email address`},
		{"no_table", "notify:\n  webhooks:\n    fin: {url: 'https://x/y', secret: s}\n  subscriptions:\n    - webhook: fin\n",
			`trueup.yaml:8: subscription: name a table or an exposure`},
		{"unknown_subscription_key", "notify:\n  subscriptions:\n    - tabel: t\n", `trueup.yaml:6: field tabel not found in subscription`},
		{"unknown_notify_key", "notify:\n  webhook: {}\n", `trueup.yaml:5: field webhook not found in notify`},
		{"bad_smtp", "notify:\n  email:\n    smtp: mail.example.com\n    from: a@b.c\n", `trueup.yaml:6: email.smtp "mail.example.com": want host:port`},
		{"bad_from", "notify:\n  email:\n    smtp: 'm:25'\n    from: trueup\n", `trueup.yaml:7: email.from "trueup" is not an email address`},
		{"bad_public_url", "notify:\n  public_url: trueup.example.com\n", `trueup.yaml:5: notify.public_url "trueup.example.com": want an http:// or https:// URL`},
		{"webhook_without_public_url", "notify:\n  webhooks:\n    fin: {url: 'https://x/y', secret: s}\n  subscriptions:\n    - table: t\n      webhook: fin\n",
			`trueup.yaml:8: subscription: sending to webhook:fin needs notify.public_url, the address readers open notice links at (e.g. public_url: https://trueup.example.com)`},
		{"webhook_kind_unknown", "notify:\n  webhooks:\n    fin:\n      url: https://x/y\n      kind: discord\n",
			`trueup.yaml:8: webhook kind "discord": want standard, slack or teams`},
		{"webhook_whsec_not_base64", "notify:\n  webhooks:\n    fin:\n      url: https://x/y\n      secret: whsec_not*base64\n",
			`trueup.yaml:8: webhook secret whsec_…: want whsec_ and at least 16 bytes in base64`},
		{"webhook_legacy_without_secret", "notify:\n  webhooks:\n    fin:\n      url: https://x/y\n      kind: slack\n      legacy_signature: true\n",
			`trueup.yaml:9: webhook: legacy_signature needs a secret to sign with`},
		{"email_without_public_url", "notify:\n  email: {smtp: 'm:25', from: a@b.c}\n  subscriptions:\n    - exposure: board\n      email: CFO <cfo@example.com>\n",
			`trueup.yaml:7: subscription: sending to email:cfo@example.com needs notify.public_url`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("trueup.yaml", []byte(notifyBase+tc.body))
			if !errors.Is(err, fault.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}
