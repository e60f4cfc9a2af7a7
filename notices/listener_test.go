package notices_test

import (
	"context"
	"mime"
	"strconv"
	"strings"
	"testing"
	"time"

	"trueup/notices"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// publishedViews puts orders and daily_revenue in a DuckDB warehouse as views over v1 (live),
// with v2 of both built by backfill fix_dedup_bug run 3 in state v2State, and returns the views
// service telling r's notices about every publish.
func publishedViews(t *testing.T, r *rig, v2State string) *views.Service {
	t.Helper()
	ctx := context.Background()
	e := sqltest.DuckDB(t)
	for _, table := range []string{"orders", "daily_revenue"} {
		for n, rows := range map[int]int{1: 3, 2: 4, 3: 5} {
			phys := views.Physical(table, n)
			if err := e.CreateTableAs(ctx, phys, "", nil, "SELECT range AS id FROM range("+strconv.Itoa(rows)+")"); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: table, Table: views.Physical(table, 1)}}); err != nil {
			t.Fatal(err)
		}
	}
	vs := views.New("warehouse", e, r.l, views.WithListener(r.svc))
	for _, table := range []string{"orders", "daily_revenue"} {
		if _, err := vs.Versions(ctx, table); err != nil { // adopts v1 as live
			t.Fatal(err)
		}
		for n, state := range map[int]string{2: v2State, 3: views.StateValidated} {
			rows, sum, err := views.Fingerprint(ctx, e, views.Physical(table, n))
			if err != nil {
				t.Fatal(err)
			}
			v := views.Version{Target: "warehouse", Table: table, N: n, State: state, BuiltBy: "alice",
				Backfill: "fix_dedup_bug", RunID: int64(n + 1), Rows: rows, Checksum: sum}
			if err := vs.Store().Put(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	return vs
}

// swap publishes req and fails on any warning (a listener error is one).
func swap(t *testing.T, vs *views.Service, req views.SwapRequest) {
	t.Helper()
	p, err := vs.Swap(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) > 0 {
		t.Fatalf("swap warnings: %v", p.Warnings)
	}
}

// subject is a message's decoded Subject header.
func subject(m mailMessage) string {
	s, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil {
		return m.Header.Get("Subject")
	}
	return s
}

// heard lists the states the webhook heard of, in order.
func heard(r *rig) string {
	var events []string
	for _, c := range r.hook.Calls() {
		events = append(events, c.Event[strings.LastIndex(c.Event, ":")+1:])
	}
	return strings.Join(events, " ")
}

// TestSwapAndRollbackThroughViews publishes the demo backfill's versions with the views service
// and takes them back: the notice follows, and its subscribers hear of both.
func TestSwapAndRollbackThroughViews(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	vs := publishedViews(t, r, views.StateValidated)
	n := r.announce(r.draft().ID)

	swap(t, vs, views.SwapRequest{Table: "orders", To: "v2", Actor: "bob", Reason: "fix dedup bug"})
	got, _ := r.svc.Get(ctx, n.ID)
	if got.State != notices.StateCompleted {
		t.Fatalf("after the swap the notice is %s, want completed", got.State)
	}
	if _, err := vs.Rollback(ctx, views.RollbackRequest{Table: "daily_revenue", Actor: "carol", Reason: "numbers look off"}); err != nil {
		t.Fatal(err)
	}
	got, _ = r.svc.Get(ctx, n.ID)
	tr, _ := got.Transitioned(notices.StateRolledBack)
	if got.State != notices.StateRolledBack || tr.Reason != "numbers look off" || tr.Actor != "carol" {
		t.Fatalf("after the rollback: %s %+v", got.State, tr)
	}
	r.deliver()
	if got := heard(r); got != "announced completed rolled-back" {
		t.Errorf("webhook heard %q", got)
	}
}

// Publishing the old version again (swap --to v1) takes the change back as a rollback does:
// once none of the notice's tables reads its version any more, the notice is rolled back with
// the swap's reason and its readers hear so. Swapping back one table while another still reads
// the notice's version leaves the notice completed: most of its change is still live.
func TestSwapToOlderVersionRollsBack(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	vs := publishedViews(t, r, views.StateValidated)
	n := r.announce(r.draft().ID)
	swap(t, vs, views.SwapRequest{Table: "orders", To: "v2", Actor: "bob"}) // orders and daily_revenue, one run

	swap(t, vs, views.SwapRequest{Table: "orders", To: "v1", Actor: "carol", Reason: "orders v2 counts refunds twice"})
	if got, _ := r.svc.Get(ctx, n.ID); got.State != notices.StateCompleted {
		t.Fatalf("with daily_revenue still on v2 the notice is %s, want completed", got.State)
	}
	swap(t, vs, views.SwapRequest{Table: "daily_revenue", To: "v1", Actor: "carol", Reason: "v2 counts refunds twice"})

	got, _ := r.svc.Get(ctx, n.ID)
	tr, _ := got.Transitioned(notices.StateRolledBack)
	if got.State != notices.StateRolledBack || tr.Reason != "v2 counts refunds twice" || tr.Actor != "carol" {
		t.Fatalf("after publishing v1 of both tables again the notice is %s %+v, want rolled back with the last swap's reason", got.State, tr)
	}
	r.deliver()
	if got := heard(r); got != "announced completed rolled-back" {
		t.Errorf("webhook heard %q", got)
	}
	ms := mailsTo(r.mail.Messages(), "ops@example.com")
	if len(ms) != 3 || !strings.Contains(ms[2].Text, "The previous data is live again. Reason: v2 counts refunds twice") {
		t.Errorf("ops got %d emails; the last:\n%s", len(ms), ms[len(ms)-1].Text)
	}

	// Publishing v2 once more makes the change live again.
	swap(t, vs, views.SwapRequest{Table: "orders", To: "v2", Actor: "bob"})
	if got, _ := r.svc.Get(ctx, n.ID); got.State != notices.StateCompleted {
		t.Errorf("v2 live again: the notice is %s, want completed", got.State)
	}
}

// Rolling back a swap to v1 makes v2 live again: the notice that swap rolled back completes
// again, and its readers hear that the change is live once more.
func TestRollbackOfSwapBackCompletesAgain(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	vs := publishedViews(t, r, views.StateValidated)
	n := r.announce(r.draft().ID)
	swap(t, vs, views.SwapRequest{Table: "orders", To: "v2", Actor: "bob"})
	swap(t, vs, views.SwapRequest{Table: "orders", To: "v1", Actor: "carol", Reason: "refunds look doubled"})
	swap(t, vs, views.SwapRequest{Table: "daily_revenue", To: "v1", Actor: "carol", Reason: "refunds look doubled"})
	if got, _ := r.svc.Get(ctx, n.ID); got.State != notices.StateRolledBack {
		t.Fatalf("after both tables went back to v1 the notice is %s, want rolled-back", got.State)
	}
	r.clock.Advance(time.Hour)

	p, err := vs.Rollback(ctx, views.RollbackRequest{Table: "daily_revenue", Actor: "dave", Reason: "the refunds were real"})
	if err != nil || len(p.Warnings) > 0 {
		t.Fatalf("rollback: %v %v", err, p.Warnings)
	}
	got, _ := r.svc.Get(ctx, n.ID)
	tr, _ := got.Transitioned(notices.StateCompleted)
	if got.State != notices.StateCompleted || tr.From != notices.StateRolledBack || tr.Actor != "dave" {
		t.Fatalf("daily_revenue v2 live again: the notice is %s %+v, want completed again", got.State, tr)
	}
	r.deliver()
	if got := heard(r); got != "announced completed rolled-back completed" {
		t.Errorf("webhook heard %q", got)
	}
	want := "Status: completed. The new data went live again on 3 August 2026 at 10:00 UTC, after it had been rolled back on 3 August 2026 at 09:00 UTC. Reason: the refunds were real"
	ms := mailsTo(r.mail.Messages(), "ops@example.com")
	if len(ms) != 4 || !strings.Contains(ms[3].Text, want) || !strings.HasPrefix(subject(ms[3]), "Data change now live") {
		t.Errorf("ops got %d emails, want the last to say %q:\n%s", len(ms), want, ms[len(ms)-1].Text)
	}
}

// A newer version supersedes the live one; the change that one brought was not taken back, so
// its notice stays completed.
func TestSwapToNewerVersionKeepsCompleted(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	vs := publishedViews(t, r, views.StateValidated)
	n := r.announce(r.draft().ID)
	swap(t, vs, views.SwapRequest{Table: "orders", To: "v2", Actor: "bob"})
	swap(t, vs, views.SwapRequest{Table: "orders", To: "v3", Actor: "bob"})
	if got, _ := r.svc.Get(ctx, n.ID); got.State != notices.StateCompleted {
		t.Errorf("after v3 replaced v2 the notice of v2 is %s, want completed", got.State)
	}
}

// A withdrawn notice whose versions go live anyway completes, and the readers who were told it
// would not happen hear that it did.
func TestWithdrawnNoticeCompletesWhenItGoesLive(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	vs := publishedViews(t, r, views.StateValidated)
	n := r.announce(r.draft().ID)
	if _, err := r.svc.Withdraw(ctx, n.ID, "alice", "waiting for the refunds fix"); err != nil {
		t.Fatal(err)
	}
	swap(t, vs, views.SwapRequest{Table: "orders", To: "v2", Actor: "bob"})
	got, _ := r.svc.Get(ctx, n.ID)
	if got.State != notices.StateCompleted {
		t.Fatalf("a withdrawn notice whose versions went live is %s, want completed", got.State)
	}
	r.deliver()
	if got := heard(r); got != "announced withdrawn completed" {
		t.Errorf("webhook heard %q", got)
	}
	ms := mailsTo(r.mail.Messages(), "ops@example.com")
	want := "Status: completed. The new data went live on 3 August 2026 at 09:00 UTC, although the change had been withdrawn on 3 August 2026 at 09:00 UTC."
	if len(ms) != 3 || !strings.Contains(ms[2].Text, want) || !strings.HasPrefix(subject(ms[2]), "Data change now live") {
		t.Errorf("ops got %d emails, want the last to say %q:\n%s", len(ms), want, ms[len(ms)-1].Text)
	}
}

// A swap published past a failed validation says so in what readers get: the email, the
// webhook and the feed; the override is kept on the notice's evidence.
func TestOverrideReachesReaders(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	vs := publishedViews(t, r, views.StateValidationFailed)
	n := r.announce(r.draft().ID)
	swap(t, vs, views.SwapRequest{Table: "orders", To: "v2", Actor: "bob", Override: "the CFO needs July numbers today"})

	got, _ := r.svc.Get(ctx, n.ID)
	if o := got.Evidence.Override; got.State != notices.StateCompleted || o == nil || o.By != "bob" || o.Reason != "the CFO needs July numbers today" {
		t.Fatalf("state %s override %+v", got.State, got.Evidence.Override)
	}
	want := `Validation did not pass, and bob chose to publish anyway: "the CFO needs July numbers today".`
	r.deliver()
	calls := r.hook.Calls()
	if len(calls) != 2 || !strings.Contains(calls[1].Payload.Text, "Status: completed. The new data went live on 3 August 2026 at 09:00 UTC. "+want) {
		t.Errorf("webhook payload lacks the override:\n%s", calls[len(calls)-1].Payload.Text)
	}
	if ms := mailsTo(r.mail.Messages(), "ops@example.com"); len(ms) != 2 || !strings.Contains(ms[1].Text, want) || !strings.Contains(ms[1].HTML, "chose to publish anyway") {
		t.Errorf("email lacks the override")
	}
	feed, err := notices.Feed([]notices.Notice{got}, "https://trueup.example.com", "/notices.atom", "", time.Now())
	if err != nil || !strings.Contains(string(feed), "<summary>Status: completed. The new data went live on 3 August 2026 at 09:00 UTC. Validation did not pass, and bob chose to publish anyway: &#34;the CFO needs July numbers today&#34;.</summary>") {
		t.Errorf("feed lacks the override (%v):\n%s", err, feed)
	}
}
