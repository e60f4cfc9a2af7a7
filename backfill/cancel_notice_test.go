package backfill_test

import (
	"context"
	"testing"
	"time"

	"trueup/app"
	"trueup/backfill"
	"trueup/notices"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// TestCancelWhileBuildingWithdrawsTheNotice: a run cancelled by bob while its partitions are
// being written (the worker stops after those in flight) has its draft notice withdrawn, naming
// the run and bob; carol's resume makes it a draft again, refreshed by the validation.
func TestCancelWhileBuildingWithdrawsTheNotice(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		d := newDemo(t, e)
		ntc := notices.New(d.ledger, notices.Options{})
		g := &gateEngine{Engine: e, prefix: "orders__", entered: make(chan struct{}, 64), release: make(chan struct{})}
		svc := &backfill.Service{Runner: d.newRunner(t, g, app.DraftNotices(backfill.Validator{}, ntc, nil))}
		defer svc.Close()
		run, err := svc.Start(ctx, "fix_dedup_bug", "ann", 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-g.entered:
		case <-time.After(30 * time.Second):
			t.Fatal("no partition started")
		}
		if _, err := svc.Cancel(ctx, "fix_dedup_bug", "bob"); err != nil {
			t.Fatal(err)
		}
		close(g.release)
		if st := awaitStopped(t, svc, "fix_dedup_bug", ""); st.State != backfill.RunCancelled {
			t.Fatalf("after the cancel the run is %s", st.State)
		}
		svc.Close() // the stopped worker has returned
		ns, err := ntc.List(ctx, notices.Filter{})
		if err != nil || len(ns) != 1 {
			t.Fatalf("notices: %v %v", ns, err)
		}
		n, _ := ntc.Get(ctx, ns[0].ID)
		last := n.Transitions[len(n.Transitions)-1]
		want := "Run 1 of backfill fix_dedup_bug was cancelled by bob."
		if n.RunID != run.ID || n.State != notices.StateWithdrawn || last.Actor != "bob" || last.Reason != want {
			t.Errorf("notice of run %d after the cancel: %s by %s, %q; want withdrawn by bob, %q", n.RunID, n.State, last.Actor, last.Reason, want)
		}

		if _, err := svc.Resume(ctx, "fix_dedup_bug", "carol"); err != nil {
			t.Fatal(err)
		}
		if st := awaitStopped(t, svc, "fix_dedup_bug", backfill.RunCancelled); st.State != backfill.RunValidated {
			t.Fatalf("resumed run: %s", st.State)
		}
		svc.Close() // the worker has returned: the listener has heard of the validation
		n, _ = ntc.Get(ctx, n.ID)
		last = n.Transitions[len(n.Transitions)-1]
		if n.State != notices.StateDraft || last.Actor != "carol" || last.Reason != "Run 1 of backfill fix_dedup_bug was resumed by carol." {
			t.Errorf("after the resume: %s by %s, %q; want a draft again, by carol", n.State, last.Actor, last.Reason)
		}
		if len(n.Evidence.Expectations) == 0 {
			t.Errorf("the draft was not refreshed by the validation: %+v", n.Evidence)
		}
	})
}

// TestCancelEndsTheFailedRunsBeforeIt: two runs of a backfill failed, the second beside the
// first's version (a new version): cancelling the backfill ends both, so neither version stays
// building for ever, and each can be retired (cancel reached only the newest run).
func TestCancelEndsTheFailedRunsBeforeIt(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		d := newDemo(t, e)
		flaky := &flakyEngine{Engine: e, failOn: "2026-07-12", failures: 100}
		r := d.newRunner(t, flaky)
		var ids []int64
		for _, opt := range []backfill.RunOptions{{Actor: "ann"}, {Actor: "ann"}} {
			run, err := r.Start(ctx, "fix_dedup_bug", opt)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Execute(ctx, run.ID, backfill.ExecOptions{}); err == nil {
				t.Fatal("a failing partition did not fail the run")
			}
			ids = append(ids, run.ID)
		}
		svc := &backfill.Service{Runner: r}
		if _, err := svc.Cancel(ctx, "fix_dedup_bug", "ann"); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			run, err := r.Store.GetRun(ctx, id)
			if err != nil || run.State != backfill.RunCancelled {
				t.Errorf("run %d after the cancel: %+v, %v; want cancelled", id, run, err)
			}
		}
		vs := views.New("warehouse", e, d.ledger)
		for _, v := range []string{"v2", "v3"} {
			if err := vs.Retire(ctx, views.RetireRequest{Table: "orders", Version: v, Actor: "ann"}); err != nil {
				t.Errorf("retire orders %s after the cancel: %v", v, err)
			}
		}
	})
}
