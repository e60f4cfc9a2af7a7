package notices_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"trueup/fault"
	"trueup/ledger"
	"trueup/ledger/ledgertest"
	"trueup/notices"
	"trueup/rules"
	"trueup/views"
)

const hookSecret = "s3cret"

// rig is a notice service wired to real receivers: a webhook for daily_revenue, and emails for
// the board_revenue exposure, for orders, and for a table the change does not touch.
type rig struct {
	t     *testing.T
	ctx   context.Context
	clock *clock
	path  string
	hook  *webhookReceiver
	mail  *smtpReceiver
	cfg   notices.Channels
	l     *ledger.Ledger
	svc   *notices.Service
}

func newRig(t *testing.T) *rig {
	r := &rig{t: t, ctx: context.Background(), clock: newClock(), path: filepath.Join(t.TempDir(), "state.duckdb")}
	r.hook = newWebhookReceiver(t, hookSecret)
	r.hook.now = r.clock.Now
	r.mail = newSMTPReceiver(t)
	r.cfg = notices.Channels{
		PublicURL: "https://trueup.example.com",
		Webhooks:  map[string]notices.Webhook{"finance": {URL: r.hook.URL(), Secret: hookSecret}},
		Email:     notices.Email{SMTP: r.mail.Addr, From: "trueup <trueup@example.com>"},
		Subscriptions: []notices.Subscription{
			{Table: "daily_revenue", Webhook: "finance"},
			{Exposure: "board_revenue", Email: "CFO <cfo@example.com>"},
			{Table: "orders", Email: "ops@example.com"},
			{Table: "web_sessions", Email: "web@example.com"},
		},
	}
	r.open()
	return r
}

// open opens the ledger and a fresh service and outbox over it, as a new process would.
func (r *rig) open() {
	if r.l != nil {
		r.l.Close()
	}
	r.l = ledgertest.OpenAt(r.t, r.path, ledger.WithClock(r.clock.Now))
	ob := notices.NewOutbox(r.l, r.cfg, notices.OutboxOptions{Backoff: time.Minute, MaxAttempts: 5, HTTP: &http.Client{Timeout: 5 * time.Second}})
	r.svc = notices.New(r.l, notices.Options{Channels: r.cfg, Outbox: ob})
}

func (r *rig) deliver() notices.Report {
	r.t.Helper()
	rep, err := r.svc.Outbox().Deliver(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return rep
}

func (r *rig) draft() notices.Notice {
	r.t.Helper()
	n, err := r.svc.Draft(r.ctx, demoEvidence())
	if err != nil {
		r.t.Fatal(err)
	}
	return n
}

func (r *rig) announce(id int64) notices.Notice {
	r.t.Helper()
	n, err := r.svc.Announce(r.ctx, id, "alice")
	if err != nil {
		r.t.Fatal(err)
	}
	return n
}

var (
	wantRecipients = []string{"email:cfo@example.com", "email:ops@example.com", "webhook:finance"}
	swapToV2       = notices.Moved{Target: "warehouse", Versions: map[string]int{"orders": 2, "daily_revenue": 2}, Actor: "bob"}
)

func recipientsOf(n notices.Notice) []string {
	var out []string
	for _, r := range n.Recipients {
		out = append(out, r.ID)
	}
	return out
}

func mailsTo(ms []mailMessage, to string) []mailMessage {
	var out []mailMessage
	for _, m := range ms {
		if m.To == to {
			out = append(out, m)
		}
	}
	return out
}

func TestAnnounceThenSwapCompletes(t *testing.T) {
	r := newRig(t)
	n := r.draft()
	if rep := r.deliver(); rep != (notices.Report{}) {
		t.Fatalf("a draft was delivered: %+v", rep)
	}
	r.clock.Advance(time.Hour)
	n = r.announce(n.ID)
	if n.State != notices.StateAnnounced || !slices.Equal(recipientsOf(n), wantRecipients) {
		t.Fatalf("announced: state %s recipients %v, want %v", n.State, recipientsOf(n), wantRecipients)
	}
	if rep := r.deliver(); rep.Delivered != 3 || rep.Retrying+rep.Failed != 0 {
		t.Fatalf("announce deliveries: %+v, want 3 delivered", rep)
	}

	t.Run("webhook_is_signed_and_carries_the_notice", func(t *testing.T) {
		calls := r.hook.Calls()
		if len(calls) != 1 || r.hook.badSigs != 0 {
			t.Fatalf("%d webhook calls, %d bad signatures; want 1 and 0", len(calls), r.hook.badSigs)
		}
		c := calls[0]
		p := c.Payload
		if p.ID != n.ID || p.State != notices.StateAnnounced || p.Title != n.Title || len(p.Partitions) != 9 || !slices.Equal(p.Tables, n.Tables) {
			t.Errorf("payload %+v", p)
		}
		if want := "notice:1:2:announced/webhook:finance"; c.Key != want || c.Event != "notice:1:2:announced" {
			t.Errorf("idempotency key %q event %q, want %q", c.Key, c.Event, want)
		}
		if !strings.HasPrefix(p.AckURL, "https://trueup.example.com/notices/1/ack/") || p.URL != "https://trueup.example.com/notices/1" {
			t.Errorf("links %q %q", p.URL, p.AckURL)
		}
	})

	t.Run("email_has_text_and_html_with_links", func(t *testing.T) {
		ms := r.mail.Messages()
		if len(ms) != 2 || len(mailsTo(ms, "cfo@example.com")) != 1 || len(mailsTo(ms, "ops@example.com")) != 1 {
			t.Fatalf("emails to %v, want one each to cfo and ops (not web@)", tos(ms))
		}
		m := mailsTo(ms, "cfo@example.com")[0]
		if want := "Upcoming data change: Correction to orders, daily_revenue and 2 more tables, 10–18 July 2026"; m.From != "trueup@example.com" || subject(m) != want {
			t.Errorf("from %q subject %q, want %q", m.From, subject(m), want)
		}
		for _, want := range []string{"# What happened", "July 2026 revenue 1.92M → 2.01M (+4.7%)", "Let us know you have read it: https://trueup.example.com/notices/1/ack/"} {
			if !strings.Contains(m.Text, want) {
				t.Errorf("text part lacks %q", want)
			}
		}
		for _, want := range []string{"<h2>What happened</h2>", "<td>July 2026</td>", `href="https://trueup.example.com/notices/1/ack/`} {
			if !strings.Contains(m.HTML, want) {
				t.Errorf("html part lacks %q", want)
			}
		}
	})

	r.clock.Advance(24 * time.Hour)
	done, err := r.svc.Complete(r.ctx, swapToV2)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 || done[0].State != notices.StateCompleted {
		t.Fatalf("swap completed %d notices (%+v), want this one", len(done), done)
	}
	if rep := r.deliver(); rep.Delivered != 3 {
		t.Fatalf("completion deliveries: %+v", rep)
	}
	calls := r.hook.Calls()
	if len(calls) != 2 || calls[1].Payload.State != notices.StateCompleted {
		t.Fatalf("webhook calls after the swap: %+v", calls)
	}

	t.Run("every_transition_is_timestamped", func(t *testing.T) {
		got, err := r.svc.Get(r.ctx, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		var steps []string
		for _, tr := range got.Transitions {
			steps = append(steps, string(tr.To)+" "+tr.At.Format("01-02 15:04")+" "+tr.Actor)
		}
		want := []string{"draft 08-03 09:00 trueup", "announced 08-03 10:00 alice", "completed 08-04 10:00 bob"}
		if !slices.Equal(steps, want) {
			t.Errorf("transitions %q, want %q", steps, want)
		}
	})

	// The feed reads the notice as it is now: gone live, not still to come.
	t.Run("feed_says_it_went_live", func(t *testing.T) {
		ns, err := r.svc.List(r.ctx, notices.Filter{Told: true, History: true})
		if err != nil {
			t.Fatal(err)
		}
		feed, err := notices.Feed(ns, "https://trueup.example.com", "/notices.atom", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if f := string(feed); !strings.Contains(f, "went live on") || strings.Contains(f, "will be rebuilt") {
			t.Errorf("the feed does not say the change went live:\n%s", f)
		}
	})

	t.Run("a_second_swap_event_changes_nothing", func(t *testing.T) {
		again, err := r.svc.Complete(r.ctx, swapToV2)
		if err != nil || len(again) != 0 {
			t.Errorf("completed again: %v, %v", again, err)
		}
		if rep := r.deliver(); rep != (notices.Report{}) {
			t.Errorf("sent again: %+v", rep)
		}
	})
}

func tos(ms []mailMessage) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.To)
	}
	return out
}

func TestAnnounceTwiceSendsOnce(t *testing.T) {
	r := newRig(t)
	n := r.announce(r.draft().ID)
	_, err := r.svc.Announce(r.ctx, n.ID, "bob")
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "already announced (by alice") {
		t.Fatalf("second announce: %v, want ErrConflict naming the first", err)
	}
	r.deliver()
	r.deliver()
	if got := len(r.hook.Calls()); got != 1 {
		t.Errorf("webhook got %d calls, want 1", got)
	}
	if got := len(r.mail.Messages()); got != 2 {
		t.Errorf("%d emails, want 2", got)
	}
	if _, err := r.svc.Announce(r.ctx, 99, "bob"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("announcing a missing notice: %v", err)
	}
	log, _ := r.l.AuditLog(r.ctx, ledger.AuditFilter{Action: "notice.announce"})
	var outcomes []string
	for _, e := range log {
		outcomes = append(outcomes, e.Actor+" "+e.Outcome)
	}
	if !slices.Equal(outcomes, []string{"bob refused", "bob refused", "alice ok"}) {
		t.Errorf("audit of announce: %q", outcomes)
	}
}

func TestRollbackMarksRolledBack(t *testing.T) {
	r := newRig(t)
	n := r.announce(r.draft().ID)
	if _, err := r.svc.Complete(r.ctx, swapToV2); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(2 * time.Hour)
	back, err := r.svc.RollBack(r.ctx, notices.Moved{Versions: map[string]int{"orders": 2}, Actor: "carol"}, "EMEA totals look wrong")
	if err != nil || len(back) != 1 {
		t.Fatalf("rollback: %v, %v", back, err)
	}
	got := back[0]
	tr, _ := got.Transitioned(notices.StateRolledBack)
	if got.State != notices.StateRolledBack || tr.Reason != "EMEA totals look wrong" || tr.Actor != "carol" {
		t.Errorf("state %s transition %+v", got.State, tr)
	}
	r.deliver()
	calls := r.hook.Calls()
	if len(calls) != 3 {
		t.Fatalf("%d webhook calls, want announced, completed, rolled-back", len(calls))
	}
	last := calls[2].Payload
	if last.State != notices.StateRolledBack || last.Reason != "EMEA totals look wrong" || !strings.Contains(last.Text, "The previous data is live again. Reason: EMEA totals look wrong") {
		t.Errorf("rollback payload %+v", last)
	}
	if ms := mailsTo(r.mail.Messages(), "ops@example.com"); len(ms) != 3 || !strings.Contains(ms[2].Text, "Status: rolled back") {
		t.Errorf("ops got %d emails", len(ms))
	}
	if _, err := r.svc.Withdraw(r.ctx, n.ID, "alice", "late"); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("withdrawing a rolled-back notice: %v", err)
	}
}

// TestRollbackSaysWhatItLeftBehind: a rollback of orders and daily_revenue to v1 that could not
// carry back the rows the pipeline wrote to orders__v2 on 2026-07-12 after the swap (inside the
// backfill's scope) tells the subscribers, by webhook and email, that those rows are no longer
// visible and what would publish them; the notice page's status line says the same.
func TestRollbackSaysWhatItLeftBehind(t *testing.T) {
	r := newRig(t)
	n := r.announce(r.draft().ID)
	if _, err := r.svc.Complete(r.ctx, swapToV2); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(2 * time.Hour)
	back := views.Publish{Kind: views.KindRollback, Target: "warehouse", Actor: "carol", Changes: []views.Change{
		{Table: "orders", From: 2, To: 1, NotCarried: []views.Carried{{Partition: "2026-07-12", Rows: 1210, Delta: 2}}},
		{Table: "daily_revenue", From: 2, To: 1},
	}}
	if _, err := r.svc.RolledBack(r.ctx, back, "EMEA totals look wrong"); err != nil {
		t.Fatal(err)
	}
	want := "The previous data is live again. Rows written since the change went live are no longer visible to readers: " +
		"orders 2026-07-12 +2 rows (kept in orders__v2). A new swap (trueup swap orders --to v2) would publish them; " +
		"trueup catch-up orders lists them. Reason: EMEA totals look wrong"
	r.deliver()
	calls := r.hook.Calls()
	if len(calls) != 3 {
		t.Fatalf("%d webhook calls, want announced, completed, rolled-back", len(calls))
	}
	if last := calls[2].Payload; last.State != notices.StateRolledBack || !strings.Contains(last.Text, want) {
		t.Errorf("the rolled-back webhook lacks %q:\n%s", want, last.Text)
	}
	ms := mailsTo(r.mail.Messages(), "ops@example.com")
	if len(ms) != 3 || !strings.Contains(ms[2].Text, want) || !strings.Contains(ms[2].HTML, "orders 2026-07-12 &#43;2 rows (kept in orders__v2)") {
		t.Errorf("ops got %d emails; the last lacks %q:\n%s", len(ms), want, ms[len(ms)-1].Text)
	}
	got, err := r.svc.Get(r.ctx, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	if line := notices.StateLine(got); !strings.Contains(line, want) {
		t.Errorf("the notice's status line %q lacks %q", line, want)
	}
	// What changes no longer says the data is all as it was
	if body := notices.Body(got); !strings.Contains(body, "the data is as it was before the change, except the rows written inside this range while the rebuilt data was live, which are no longer visible.") {
		t.Errorf("the rolled-back notice's text says nothing of the rows left behind:\n%s", body)
	}
}

func TestWithdraw(t *testing.T) {
	r := newRig(t)
	quiet := r.draft()
	if _, err := r.svc.Withdraw(r.ctx, quiet.ID, "alice", "not needed"); err != nil {
		t.Fatal(err)
	}
	ev := demoEvidence()
	ev.RunID = 4
	told, err := r.svc.Draft(r.ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	r.announce(told.ID)
	w, err := r.svc.Withdraw(r.ctx, told.ID, "alice", "the fix is wrong; a new run follows")
	if err != nil || w.State != notices.StateWithdrawn {
		t.Fatalf("withdraw: %v %v", w.State, err)
	}
	r.deliver()
	var events []string
	for _, c := range r.hook.Calls() {
		events = append(events, c.Event)
	}
	if !slices.Equal(events, []string{"notice:2:2:announced", "notice:2:3:withdrawn"}) {
		t.Errorf("webhook events %q: a draft's withdrawal is silent, an announced one's is not", events)
	}
}

func TestReceiverDownThenUp(t *testing.T) {
	r := newRig(t)
	r.hook.down()
	r.announce(r.draft().ID)
	if rep := r.deliver(); rep.Delivered != 2 || rep.Retrying != 1 {
		t.Fatalf("with the webhook down: %+v, want 2 emails delivered and 1 retrying", rep)
	}
	ds, _ := r.svc.Outbox().Deliveries(r.ctx, 1)
	hook := ds[slices.IndexFunc(ds, func(d notices.Delivery) bool { return d.Recipient == "webhook:finance" })]
	if hook.State != notices.DeliveryPending || hook.Attempts != 1 || !hook.NextAt.Equal(r.clock.Now().Add(time.Minute)) || hook.LastError == "" {
		t.Errorf("pending webhook delivery %+v: want attempt 1, retry in 1m, the error kept", hook)
	}
	r.clock.Advance(30 * time.Second)
	if rep := r.deliver(); rep != (notices.Report{Waiting: 1}) {
		t.Errorf("retried before its backoff: %+v", rep)
	}
	r.clock.Advance(30 * time.Second)
	if rep := r.deliver(); rep.Retrying != 1 {
		t.Errorf("second attempt: %+v", rep)
	}
	r.hook.up()
	r.clock.Advance(time.Minute) // the second wait is twice the first
	if rep := r.deliver(); rep.Delivered != 0 {
		t.Errorf("retried before the doubled backoff: %+v", rep)
	}
	r.clock.Advance(time.Minute)
	if rep := r.deliver(); rep.Delivered != 1 {
		t.Errorf("receiver back up: %+v, want 1 delivered", rep)
	}
	r.clock.Advance(time.Hour)
	r.deliver()
	if calls := r.hook.Calls(); len(calls) != 1 {
		t.Errorf("webhook got %d calls, want exactly 1", len(calls))
	}
}

func TestGivesUpOnRefusal(t *testing.T) {
	r := newRig(t)
	r.hook.status = http.StatusGone
	r.announce(r.draft().ID)
	if rep := r.deliver(); rep.Failed != 1 {
		t.Fatalf("a 410 answer: %+v, want failed for good", rep)
	}
	ds, _ := r.svc.Outbox().Deliveries(r.ctx, 1)
	for _, d := range ds {
		if d.Recipient == "webhook:finance" && (d.State != notices.DeliveryFailed || !strings.Contains(d.LastError, "410")) {
			t.Errorf("delivery %+v", d)
		}
	}
}

// A receiver that keeps idempotency keys answers 409 to one it has seen: the notice reached it
// before (its answer was lost), so the delivery is done, not retried and not failed.
func TestConflictAnswerIsDelivered(t *testing.T) {
	r := newRig(t)
	r.hook.status = http.StatusConflict
	r.announce(r.draft().ID)
	if rep := r.deliver(); rep.Delivered != 3 || rep.Retrying+rep.Failed != 0 {
		t.Fatalf("a 409 answer: %+v, want all 3 delivered", rep)
	}
	ds, _ := r.svc.Outbox().Deliveries(r.ctx, 1)
	for _, d := range ds {
		if d.Recipient == "webhook:finance" && (d.State != notices.DeliveryDelivered || d.Attempts != 1) {
			t.Errorf("delivery %+v, want delivered on the first attempt", d)
		}
	}
	r.clock.Advance(time.Hour)
	if rep := r.deliver(); rep != (notices.Report{}) {
		t.Errorf("sent again after a 409: %+v", rep)
	}
}

func TestRestartWithPendingOutbox(t *testing.T) {
	r := newRig(t)
	r.announce(r.draft().ID)
	// the process dies before its worker ran: the deliveries are only in the ledger
	r.open()
	if rep := r.deliver(); rep.Delivered != 3 {
		t.Fatalf("after restart: %+v, want 3 delivered", rep)
	}
	r.open()
	r.clock.Advance(time.Hour)
	if rep := r.deliver(); rep != (notices.Report{}) {
		t.Errorf("second restart sent again: %+v", rep)
	}
	if len(r.hook.Calls()) != 1 || len(r.mail.Messages()) != 2 {
		t.Errorf("%d webhook calls and %d emails, want 1 and 2", len(r.hook.Calls()), len(r.mail.Messages()))
	}
}

func TestAcknowledge(t *testing.T) {
	r := newRig(t)
	n := r.announce(r.draft().ID)
	r.deliver()
	ack := r.hook.Calls()[0].Payload.AckURL
	token := ack[strings.LastIndex(ack, "/")+1:]
	r.clock.Advance(15 * time.Minute)
	rec, err := r.svc.Acknowledge(r.ctx, n.ID, token)
	if err != nil || rec.ID != "webhook:finance" {
		t.Fatalf("acknowledge: %+v, %v", rec, err)
	}
	r.clock.Advance(time.Hour)
	if again, _ := r.svc.Acknowledge(r.ctx, n.ID, token); !again.AckedAt.Equal(rec.AckedAt) {
		t.Errorf("a second click moved the acknowledgement to %v", again.AckedAt)
	}
	got, _ := r.svc.Get(r.ctx, n.ID)
	for _, rc := range got.Recipients {
		if rc.Acked() != (rc.ID == "webhook:finance") {
			t.Errorf("recipient %s acked=%v", rc.ID, rc.Acked())
		}
	}
	if _, err := r.svc.Acknowledge(r.ctx, n.ID, "not-a-token"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("bad token: %v", err)
	}
	if _, err := r.svc.Acknowledge(r.ctx, n.ID+1, token); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("token of another notice: %v", err)
	}
}

func TestAlertThroughOutbox(t *testing.T) {
	r := newRig(t)
	m := notices.Message{Event: "alert:7", Tables: []string{"daily_revenue"}, Subject: "matches_raw failed", Text: "9 days differ from orders_raw."}
	for i := range 2 {
		n, err := r.svc.Outbox().Enqueue(r.ctx, m)
		if err != nil || n != 1-i {
			t.Fatalf("enqueue %d: %d added, %v", i, n, err)
		}
	}
	r.deliver()
	calls := r.hook.Calls()
	if len(calls) != 1 || calls[0].Raw["subject"] != "matches_raw failed" || calls[0].Key != "alert:7/webhook:finance" {
		t.Errorf("alert calls %+v", calls)
	}
	if _, err := r.svc.Outbox().Enqueue(r.ctx, notices.Message{Tables: []string{"orders"}}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("a message without an event: %v", err)
	}
}

func TestAlertSender(t *testing.T) {
	r := newRig(t)
	send := notices.AlertSender(r.svc.Outbox(), "", func(rule string) string { return "daily_revenue" })
	alert := rules.Alert{ID: 12, Rule: "matches_raw", At: r.clock.Now(), From: rules.StatusPass, To: rules.StatusFail,
		Severity: rules.SeverityError, Message: "9 partitions differ from orders_raw"}
	for range 2 { // the same alert again: not sent twice
		if err := send(r.ctx, alert); err != nil {
			t.Fatal(err)
		}
	}
	r.deliver()
	calls := r.hook.Calls()
	if len(calls) != 1 || calls[0].Key != "alert:12/webhook:finance" || calls[0].Raw["subject"] != "Rule matches_raw is now fail on daily_revenue" {
		t.Fatalf("alert webhook calls %+v", calls)
	}
	if !strings.Contains(calls[0].Raw["text"].(string), "9 partitions differ from orders_raw") {
		t.Errorf("alert text %q", calls[0].Raw["text"])
	}
	if len(r.mail.Messages()) != 0 {
		t.Errorf("an alert about daily_revenue was emailed to %v", tos(r.mail.Messages()))
	}
}

// cancelAfterSend is a transport that ends the pass's context once a request has been answered,
// as a server shutting down between a send and its record does.
type cancelAfterSend struct {
	rt     http.RoundTripper
	cancel context.CancelFunc
}

func (c cancelAfterSend) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err == nil {
		c.cancel()
	}
	return resp, err
}

// TestStopAfterSendRecordsIt: a pass stopped right after a message went out still records it as
// delivered, so the next pass does not send it again.
func TestStopAfterSendRecordsIt(t *testing.T) {
	r := newRig(t)
	r.announce(r.draft().ID)
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second, Transport: cancelAfterSend{rt: http.DefaultTransport, cancel: cancel}}
	ob := notices.NewOutbox(r.l, r.cfg, notices.OutboxOptions{Backoff: time.Minute, MaxAttempts: 5, HTTP: client})
	if _, err := ob.Deliver(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped pass: %v", err)
	}
	r.clock.Advance(time.Hour)
	r.deliver()
	if len(r.hook.Calls()) != 1 || len(r.mail.Messages()) != 2 {
		t.Errorf("%d webhook calls and %d emails, want 1 and 2", len(r.hook.Calls()), len(r.mail.Messages()))
	}
}

// TestStalledMailServer: a mail server that accepts and never answers holds a pass only until
// the pass is stopped; the message waits for a retry and nothing else is held up.
func TestStalledMailServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() }) // accepted, never greeted
		}
	}()
	r := newRig(t)
	r.cfg.Email.SMTP = ln.Addr().String()
	r.open()
	r.announce(r.draft().ID)
	ctx, cancel := context.WithCancel(r.ctx)
	time.AfterFunc(300*time.Millisecond, cancel)
	done := make(chan error, 1)
	go func() { _, err := r.svc.Outbox().Deliver(ctx); done <- err }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the pass is still held by the stalled mail server 10 s after it was stopped")
	}
	ds, _ := r.svc.Outbox().Deliveries(r.ctx, 1)
	for _, d := range ds {
		if strings.HasPrefix(d.Recipient, "email:") && d.State == notices.DeliveryDelivered {
			t.Errorf("delivery %+v: recorded as delivered", d)
		}
	}
	// the mail server is mended; the next passes send everything once
	r.cfg.Email.SMTP = r.mail.Addr
	r.open()
	r.clock.Advance(time.Minute)
	r.deliver()
	if len(r.hook.Calls()) != 1 || len(r.mail.Messages()) != 2 {
		t.Errorf("%d webhook calls and %d emails, want 1 and 2", len(r.hook.Calls()), len(r.mail.Messages()))
	}
}
