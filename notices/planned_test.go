package notices_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"trueup/fault"
	"trueup/notices"
)

// A real backfill knows no planned time; the operator sets it and readers see it in the text,
// the status line, the email and the feed.
func TestPlanSwap(t *testing.T) {
	r := newRig(t)
	ev := demoEvidence()
	ev.PlannedSwap = time.Time{}
	n, err := r.svc.Draft(r.ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(n.Body, "The date the new data goes live is not set yet.") {
		t.Fatalf("draft without a plan:\n%s", n.Body)
	}
	at := time.Date(2026, 8, 4, 9, 0, 0, 0, time.UTC)
	if _, err := r.svc.PlanSwap(r.ctx, n.ID, "alice", at.Add(-48*time.Hour)); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("a planned time in the past: %v, want ErrInvalid", err)
	}
	n, err = r.svc.PlanSwap(r.ctx, n.ID, "alice", at)
	if err != nil {
		t.Fatal(err)
	}
	when := "The new data is planned to go live on Tuesday 4 August 2026 at 09:00 UTC."
	if !strings.Contains(n.Body, when) || !n.Evidence.PlannedSwap.Equal(at) || n.Revision != 2 {
		t.Errorf("planned: revision %d evidence %v body:\n%s", n.Revision, n.Evidence.PlannedSwap, n.Body)
	}
	if got := notices.StateLine(n); got != "Status: draft, not sent yet. "+when {
		t.Errorf("state line %q", got)
	}
	// Validation ends and the backfill redrafts: the plan stays.
	if n, err = r.svc.Draft(r.ctx, ev); err != nil || !strings.Contains(n.Body, when) || !n.Evidence.PlannedSwap.Equal(at) {
		t.Errorf("a redraft lost the plan (%v):\n%s", err, n.Body)
	}

	n = r.announce(n.ID)
	r.deliver()
	planned := "The change has not gone live yet; it is planned for Tuesday 4 August 2026 at 09:00 UTC."
	if ms := mailsTo(r.mail.Messages(), "ops@example.com"); len(ms) != 1 || !strings.Contains(ms[0].Text, planned) || !strings.Contains(ms[0].Text, when) || !strings.Contains(ms[0].HTML, planned) {
		t.Errorf("the announcement lacks the planned time")
	}
	feed, err := notices.Feed([]notices.Notice{n}, "https://trueup.example.com", "/notices.atom", "", time.Now())
	if err != nil || !strings.Contains(string(feed), planned+"</summary>") {
		t.Errorf("feed lacks the planned time (%v):\n%s", err, feed)
	}
	if _, err := r.svc.PlanSwap(r.ctx, n.ID, "alice", at.Add(time.Hour)); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("planning an announced notice: %v, want ErrConflict", err)
	}
}

// An operator's own text is kept when the plan is set; the status line still says the time.
func TestPlanSwapKeepsEditedText(t *testing.T) {
	r := newRig(t)
	n := r.draft()
	if _, err := r.svc.Edit(r.ctx, n.ID, "alice", "July revenue corrected", "# What happened\nWe fixed it.\n"); err != nil {
		t.Fatal(err)
	}
	n, err := r.svc.PlanSwap(r.ctx, n.ID, "alice", time.Date(2026, 8, 5, 14, 30, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if n.Body != "# What happened\nWe fixed it.\n" || n.Revision != 2 {
		t.Errorf("the edited text was replaced: revision %d:\n%s", n.Revision, n.Body)
	}
	if got := notices.Text(n); !strings.Contains(got, "Status: draft, not sent yet. The new data is planned to go live on Wednesday 5 August 2026 at 14:30 UTC.") {
		t.Errorf("text:\n%s", got)
	}
}

func TestParsePlannedSwap(t *testing.T) {
	want := time.Date(2026, 8, 4, 9, 0, 0, 0, time.UTC)
	for _, in := range []string{"2026-08-04T09:00:00Z", "2026-08-04T11:00:00+02:00", "2026-08-04 09:00", "2026-08-04T09:00"} {
		if got, err := notices.ParsePlannedSwap(in); err != nil || !got.Equal(want) {
			t.Errorf("%q: %v, %v", in, got, err)
		}
	}
	if _, err := notices.ParsePlannedSwap("tomorrow"); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "2026-08-04 09:00") {
		t.Errorf("tomorrow: %v", err)
	}
}
