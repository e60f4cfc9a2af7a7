package notices_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"trueup/notices"
)

// lastDelivery is the state of the one delivery of event to recipient.
func lastDelivery(t *testing.T, r *rig, key string) notices.Delivery {
	t.Helper()
	ds, err := r.svc.Outbox().Deliveries(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ds, func(d notices.Delivery) bool { return d.Key == key })
	if i < 0 {
		t.Fatalf("no delivery %s among %d", key, len(ds))
	}
	return ds[i]
}

// TestEmailNonASCII: a subject, a sender's name and a body outside ASCII reach the reader exactly
// as written, and the headers on the wire are ASCII (RFC 2047 encoded words).
func TestEmailNonASCII(t *testing.T) {
	r := newRig(t)
	r.cfg.Email.From = "Trüeup Qualität <trueup@example.com>"
	r.open()
	msg := notices.Message{
		Event:   "alert:utf8",
		To:      []string{"email:ops@example.com"},
		Subject: "Umsatz für Juli — 1,92 M € → 2,01 M € (Größe: „Ü“) 日本語の件名もそのまま届く",
		Text:    "Grüße aus Köln.\nDer Umsatz für Juli steigt von 1,92 M € auf 2,01 M € (+4,7 %).\n\n- Zeile mit einer sehr langen Zeile, die über sechsundsiebzig Zeichen hinausgeht und umbrochen werden muss = ja\n",
		HTML:    "<p>Grüße aus Köln.</p>\n<p>1,92 M € → 2,01 M €</p>\n",
	}
	if _, err := r.svc.Outbox().Enqueue(r.ctx, msg); err != nil {
		t.Fatal(err)
	}
	if rep := r.deliver(); rep.Delivered != 1 {
		t.Fatalf("deliver: %+v, want 1 delivered", rep)
	}
	ms := r.mail.Messages()
	if len(ms) != 1 {
		t.Fatalf("%d emails, want 1", len(ms))
	}
	m := ms[0]
	if got := subject(m); got != msg.Subject {
		t.Errorf("subject %q, want %q", got, msg.Subject)
	}
	from, err := m.Header.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Name != "Trüeup Qualität" || from[0].Address != "trueup@example.com" {
		t.Errorf("From %q (%v), want Trüeup Qualität <trueup@example.com>", m.Header.Get("From"), err)
	}
	for _, h := range []string{"Subject", "From"} {
		if raw := m.Header.Get(h); strings.ContainsFunc(raw, func(c rune) bool { return c > 127 }) {
			t.Errorf("%s header is not ASCII on the wire: %q", h, raw)
		}
	}
	if m.Text != msg.Text {
		t.Errorf("text part %q, want %q", m.Text, msg.Text)
	}
	if m.HTML != msg.HTML {
		t.Errorf("html part %q, want %q", m.HTML, msg.HTML)
	}
	if got := m.Header.Get(notices.HeaderIdempotency); got != "alert:utf8/email:ops@example.com" {
		t.Errorf("%s %q", notices.HeaderIdempotency, got)
	}
}

// TestEmailSTARTTLSRequired: with starttls: true, a relay that does not offer STARTTLS gets
// nothing; the delivery waits for a retry with the reason kept.
func TestEmailSTARTTLSRequired(t *testing.T) {
	r := newRig(t)
	r.cfg.Email.StartTLS = true
	r.open()
	if _, err := r.svc.Outbox().Enqueue(r.ctx, notices.Message{Event: "alert:tls", To: []string{"email:ops@example.com"}, Subject: "s", Text: "t"}); err != nil {
		t.Fatal(err)
	}
	if rep := r.deliver(); rep.Retrying != 1 {
		t.Fatalf("deliver: %+v, want 1 retrying", rep)
	}
	if n := len(r.mail.Messages()); n != 0 {
		t.Errorf("%d emails sent in the clear", n)
	}
	if d := lastDelivery(t, r, "alert:tls/email:ops@example.com"); d.State != notices.DeliveryPending || !strings.Contains(d.LastError, "STARTTLS") {
		t.Errorf("delivery %+v: want pending, the error naming STARTTLS", d)
	}
}

// TestEmailAuth: the configured user authenticates with AUTH PLAIN; a relay refusing the
// credentials (535) fails the delivery for good, since the next attempt would be refused too.
func TestEmailAuth(t *testing.T) {
	tests := []struct {
		name, password, state, user string
	}{
		{"accepted", "right", notices.DeliveryDelivered, "trueup"},
		{"refused_for_good", "wrong", notices.DeliveryFailed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			r.mail.Users = map[string]string{"trueup": "right"}
			r.cfg.Email.Username, r.cfg.Email.Password = "trueup", tt.password
			r.open()
			if _, err := r.svc.Outbox().Enqueue(r.ctx, notices.Message{Event: "alert:auth", To: []string{"email:ops@example.com"}, Subject: "s", Text: "t"}); err != nil {
				t.Fatal(err)
			}
			r.deliver()
			d := lastDelivery(t, r, "alert:auth/email:ops@example.com")
			if d.State != tt.state || d.Attempts != 1 {
				t.Errorf("delivery %+v: want %s after 1 attempt", d, tt.state)
			}
			var users []string
			for _, m := range r.mail.Messages() {
				users = append(users, m.User)
			}
			want := []string{tt.user}
			if tt.user == "" {
				want = nil
			}
			if !slices.Equal(users, want) {
				t.Errorf("messages sent as users %q, want %q", users, want)
			}
			if tt.user == "" && !strings.Contains(d.LastError, "535") {
				t.Errorf("last error %q, want the relay's 535", d.LastError)
			}
		})
	}
}
