package notices_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"trueup/fault"
	"trueup/notices"
	"trueup/rules"
	"trueup/views"
)

var (
	confirmLink = regexp.MustCompile(`https://trueup\.example\.com/subscriptions/confirm/(\S+)`)
	leaveHeader = regexp.MustCompile(`^<https://trueup\.example\.com/subscriptions/unsubscribe/(\S+)>$`)
)

// confirmToken is the token of the confirmation link in the last message to addr.
func confirmToken(t *testing.T, r *rig, addr string) string {
	t.Helper()
	ms := mailsTo(r.mail.Messages(), addr)
	if len(ms) == 0 {
		t.Fatalf("no message to %s", addr)
	}
	m := confirmLink.FindStringSubmatch(ms[len(ms)-1].Text)
	if m == nil {
		t.Fatalf("no confirmation link in %q", ms[len(ms)-1].Text)
	}
	return m[1]
}

// The whole path of a self-service subscriber: a request sends one confirmation; nothing is
// sent before it is confirmed; once confirmed, an announced notice reaches the address once
// (beside a configured subscription of the same table), with the RFC 8058 headers; the
// header's token ends it; the next notice does not reach it.
func TestSelfServiceSubscriptionLifecycle(t *testing.T) {
	r := newRig(t)
	const addr = "dana@example.com"
	sent, err := r.svc.Subscribe(r.ctx, notices.SubscribeRequest{Email: " Dana@Example.com ", Follow: "table:orders"})
	if err != nil || !sent {
		t.Fatalf("subscribe: sent %v, %v", sent, err)
	}
	r.deliver()
	ms := mailsTo(r.mail.Messages(), addr)
	if len(ms) != 1 || !strings.HasPrefix(subject(ms[0]), "Confirm: trueup notices about table orders") {
		t.Fatalf("messages to %s: %v", addr, ms)
	}
	if ms[0].Header.Get("List-Unsubscribe") != "" {
		t.Errorf("the confirmation carries List-Unsubscribe: there is nothing to leave yet")
	}
	tok := confirmToken(t, r, addr)
	// an HTML mail client that finds no links itself shows one to click
	if href := `<a href="https://trueup.example.com/subscriptions/confirm/` + tok + `">`; !strings.Contains(ms[0].HTML, href) {
		t.Errorf("the confirmation's HTML part has no link %s:\n%s", href, ms[0].HTML)
	}

	// Not confirmed: an announced notice does not reach the address.
	first := r.draft()
	r.announce(first.ID)
	r.deliver()
	if n := len(mailsTo(r.mail.Messages(), addr)); n != 1 {
		t.Fatalf("%d messages to an unconfirmed address, want only the confirmation", n)
	}

	sub, err := r.svc.Confirm(r.ctx, tok)
	if err != nil || sub.State != notices.SubscriptionActive || sub.Email != addr {
		t.Fatalf("confirm: %+v, %v", sub, err)
	}
	if _, err := r.svc.Confirm(r.ctx, tok); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "used already") {
		t.Errorf("confirming twice: %v, want a conflict saying it was used", err)
	}

	// Withdraw the first, then a second notice: announced, it reaches the address once.
	if _, err := r.svc.Withdraw(r.ctx, first.ID, "alice", "redo"); err != nil {
		t.Fatal(err)
	}
	ev := demoEvidence()
	ev.RunID = 4
	second, err := r.svc.Draft(r.ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	r.announce(second.ID)
	r.deliver()
	r.deliver() // a second pass sends nothing again
	ms = mailsTo(r.mail.Messages(), addr)
	if len(ms) != 2 || !strings.HasPrefix(subject(ms[1]), "Upcoming data change") {
		t.Fatalf("messages to %s: %d, want the confirmation and the announcement", addr, len(ms))
	}
	m := ms[1]
	if got := m.Header.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe-Post %q", got)
	}
	lm := leaveHeader.FindStringSubmatch(m.Header.Get("List-Unsubscribe"))
	if lm == nil {
		t.Fatalf("List-Unsubscribe %q", m.Header.Get("List-Unsubscribe"))
	}
	if !strings.Contains(m.Text, "Stop these messages: https://trueup.example.com/subscriptions/unsubscribe/"+lm[1]) ||
		!strings.Contains(m.Text, "Change what you follow: https://trueup.example.com/subscriptions/manage/"+lm[1]) {
		t.Errorf("text lacks the leave and manage links:\n%s", m.Text)
	}
	// ops@example.com subscribes to orders in the config: its messages carry no leave link.
	for _, om := range mailsTo(r.mail.Messages(), "ops@example.com") {
		if om.Header.Get("List-Unsubscribe") != "" {
			t.Errorf("a configured recipient was given a leave link")
		}
	}

	// The one-click unsubscribe.
	ended, err := r.svc.Unsubscribe(r.ctx, lm[1], 0)
	if err != nil || len(ended) != 1 || ended[0].Follow != "table:orders" {
		t.Fatalf("unsubscribe: %+v, %v", ended, err)
	}
	if _, err := r.svc.Unsubscribe(r.ctx, lm[1], 0); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("unsubscribing twice: %v, want a conflict", err)
	}
	if _, err := r.svc.Withdraw(r.ctx, second.ID, "alice", "redo"); err != nil {
		t.Fatal(err)
	}
	before := len(mailsTo(r.mail.Messages(), addr))
	ev.RunID = 5
	third, err := r.svc.Draft(r.ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	r.announce(third.ID)
	r.deliver()
	// The withdrawal of the second still goes to who was told of it; the third does not.
	for _, m := range mailsTo(r.mail.Messages(), addr)[before:] {
		if strings.HasPrefix(subject(m), "Upcoming data change") {
			t.Errorf("after unsubscribing, %s got %q", addr, subject(m))
		}
	}
}

// Links that trueup did not make, that were used, that expired or that were changed to name
// another address's subscription change nothing and say why.
func TestSubscriptionLinksRefused(t *testing.T) {
	r := newRig(t)
	for _, a := range []string{"ann@example.com", "bob@example.com"} {
		if _, err := r.svc.Subscribe(r.ctx, notices.SubscribeRequest{Email: a, Follow: "all"}); err != nil {
			t.Fatal(err)
		}
	}
	r.deliver()
	ann, bob := confirmToken(t, r, "ann@example.com"), confirmToken(t, r, "bob@example.com")
	bobID := strings.SplitN(bob, ".", 2)[0]
	annRest := strings.SplitN(ann, ".", 2)[1]
	tests := []struct {
		name, token string
		want        error
		says        string
	}{
		{"forged", "c1.4102444800.AAAAAAAAAAAAAAAAAAAAAA", fault.ErrNotFound, "not one trueup sent"},
		{"cut_short", ann[:len(ann)-3], fault.ErrNotFound, "not one trueup sent"},
		{"other_address", bobID + "." + annRest, fault.ErrNotFound, "not one trueup sent"},
		{"manage_token_as_confirm", "m" + ann[1:], fault.ErrNotFound, "not one trueup sent"},
		{"garbage", "../../etc/passwd", fault.ErrNotFound, "not one trueup sent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := r.svc.Confirm(r.ctx, tt.token); !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("confirm: %v, want %v saying %q", err, tt.want, tt.says)
			}
			if _, err := r.svc.Unsubscribe(r.ctx, tt.token, 0); !errors.Is(err, fault.ErrNotFound) {
				t.Errorf("unsubscribe: %v, want not found", err)
			}
		})
	}
	subs, err := r.svc.SelfSubscriptions(r.ctx)
	if err != nil || len(subs) != 2 || subs[0].State != notices.SubscriptionPending || subs[1].State != notices.SubscriptionPending {
		t.Fatalf("after the bad links: %+v, %v: want both still pending", subs, err)
	}
	r.clock.Advance(notices.ConfirmTTL + time.Minute)
	if _, err := r.svc.Confirm(r.ctx, ann); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired link: %v, want invalid, saying it expired", err)
	}
}

// A flood of requests for one address sends it one confirmation an hour; malformed addresses
// and follows, header injection included, are refused and store nothing.
func TestSubscribeLimitsAndBadInput(t *testing.T) {
	r := newRig(t)
	for i := range 20 {
		sent, err := r.svc.Subscribe(r.ctx, notices.SubscribeRequest{Email: "eve@example.com", Follow: "table:orders"})
		if err != nil || sent != (i == 0) {
			t.Fatalf("request %d: sent %v, %v", i, sent, err)
		}
	}
	r.clock.Advance(notices.ConfirmEvery + time.Second)
	if sent, err := r.svc.Subscribe(r.ctx, notices.SubscribeRequest{Email: "eve@example.com", Follow: "all"}); err != nil || !sent {
		t.Fatalf("an hour later: sent %v, %v", sent, err)
	}
	r.deliver()
	if n := len(mailsTo(r.mail.Messages(), "eve@example.com")); n != 2 {
		t.Errorf("%d confirmations for 21 requests over an hour, want 2", n)
	}
	bad := []notices.SubscribeRequest{
		{Email: "not an address", Follow: "all"},
		{Email: "eve@example.com\r\nBcc: all@example.com", Follow: "all"},
		{Email: "Eve <eve@example.com>", Follow: "all"},
		{Email: "a@b.c, d@e.f", Follow: "all"},
		{Email: "eve@localhost", Follow: "all"},
		{Email: "eve@example.com", Follow: "table:orders\r\nSubject: hi"},
		{Email: "eve@example.com", Follow: "table:"},
		{Email: "eve@example.com", Follow: "rule:x"},
		{Email: strings.Repeat("a", 250) + "@example.com", Follow: "all"},
	}
	for _, req := range bad {
		if _, err := r.svc.Subscribe(r.ctx, req); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%q / %q: %v, want invalid", req.Email, req.Follow, err)
		}
	}
	subs, _ := r.svc.SelfSubscriptions(r.ctx)
	if len(subs) != 2 {
		t.Errorf("%d subscriptions stored, want 2", len(subs))
	}
}

// Rule alerts reach a self-service subscriber of the table only when it asked for them.
func TestSelfServiceAlertsOnlyWhenAsked(t *testing.T) {
	r := newRig(t)
	for _, req := range []notices.SubscribeRequest{
		{Email: "quiet@example.com", Follow: "table:orders"},
		{Email: "loud@example.com", Follow: "table:orders", Alerts: true},
	} {
		if _, err := r.svc.Subscribe(r.ctx, req); err != nil {
			t.Fatal(err)
		}
		r.deliver()
		if _, err := r.svc.Confirm(r.ctx, confirmToken(t, r, req.Email)); err != nil {
			t.Fatal(err)
		}
	}
	a := rules.Alert{ID: 9, Rule: "order_id_unique", From: rules.StatusPass, To: rules.StatusFail, Severity: "error", At: r.clock.Now()}
	if _, err := r.svc.Outbox().Enqueue(r.ctx, notices.AlertMessage(a, "orders", "")); err != nil {
		t.Fatal(err)
	}
	r.deliver()
	if n := len(mailsTo(r.mail.Messages(), "loud@example.com")); n != 2 {
		t.Errorf("loud@: %d messages, want the confirmation and the alert", n)
	}
	if n := len(mailsTo(r.mail.Messages(), "quiet@example.com")); n != 1 {
		t.Errorf("quiet@: %d messages, want only the confirmation", n)
	}
}

// A leave link changed to name another address's subscription ends nothing; once ManageTTL has
// passed it has expired, and says so; the other address is still subscribed.
func TestLeaveLinksRefused(t *testing.T) {
	r := newRig(t)
	for _, a := range []string{"ann@example.com", "bob@example.com"} {
		if _, err := r.svc.Subscribe(r.ctx, notices.SubscribeRequest{Email: a, Follow: "table:orders"}); err != nil {
			t.Fatal(err)
		}
		r.deliver()
		if _, err := r.svc.Confirm(r.ctx, confirmToken(t, r, a)); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := r.svc.ManageToken(r.ctx, "ann@example.com")
	if err != nil || !strings.HasPrefix(tok, "m1.") {
		t.Fatalf("ann's manage token %q, %v", tok, err)
	}
	if _, err := r.svc.Unsubscribe(r.ctx, "m2."+strings.SplitN(tok, ".", 2)[1], 0); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("ann's link changed to bob's subscription: %v, want not found", err)
	}
	r.clock.Advance(notices.ManageTTL + time.Hour)
	if _, err := r.svc.Unsubscribe(r.ctx, tok, 0); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired leave link: %v, want invalid, saying it expired", err)
	}
	subs, _ := r.svc.SelfSubscriptions(r.ctx)
	if len(subs) != 2 || subs[0].State != notices.SubscriptionActive || subs[1].State != notices.SubscriptionActive {
		t.Errorf("after the refused links: %+v, want both active", subs)
	}
}

// TestSubscribeOnlyToWhatTheProjectHas: with the project's names known (KnowsTable, Exposures),
// a subscription may follow a logical table trueup keeps and a report of its exposures, and
// nothing else: a table of no such name, a version's physical table, a report of no such name
// are refused as bad input, and nothing is stored or sent.
func TestSubscribeOnlyToWhatTheProjectHas(t *testing.T) {
	r := newRig(t)
	if err := (views.Store{L: r.l}).Put(r.ctx, views.Version{Target: "warehouse", Table: "orders", N: 1, State: views.StateLive}); err != nil {
		t.Fatal(err)
	}
	svc := notices.New(r.l, notices.Options{Channels: r.cfg, Exposures: []*notices.Exposure{{Name: "board_revenue"}},
		KnowsTable: views.Store{L: r.l}.Keeps})
	i := 0
	for follow, ok := range map[string]bool{
		"table:orders": true, "table:Orders": true, "exposure:board_revenue": true, "all": true,
		"table:nope": false, "table:orders__v1": false, "exposure:nope": false,
	} {
		i++ // an address each: one address is sent one confirmation an hour
		_, err := svc.Subscribe(r.ctx, notices.SubscribeRequest{Email: fmt.Sprintf("sam%d@example.com", i), Follow: follow})
		if ok && err != nil || !ok && !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("follow %s: %v, want accepted %v", follow, err, ok)
		}
	}
	if subs, _ := svc.SelfSubscriptions(r.ctx); len(subs) != 4 {
		t.Errorf("%d subscriptions stored, want the 4 accepted", len(subs))
	}
}
