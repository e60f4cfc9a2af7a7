package notices_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"trueup/notices"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// TestSwapAndRollbackThroughViews publishes the demo backfill's versions with the views service
// and takes them back: the notice follows, and its subscribers hear of both.
func TestSwapAndRollbackThroughViews(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	e := sqltest.DuckDB(t)
	for _, table := range []string{"orders", "daily_revenue"} {
		for n, rows := range map[int]int{1: 3, 2: 4} {
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
		rows, sum, err := views.Fingerprint(ctx, e, views.Physical(table, 2))
		if err != nil {
			t.Fatal(err)
		}
		v := views.Version{Target: "warehouse", Table: table, N: 2, State: views.StateValidated, BuiltBy: "alice",
			Backfill: "fix_dedup_bug", RunID: 3, Rows: rows, Checksum: sum}
		if err := vs.Store().Put(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	n := r.announce(r.draft().ID)

	p, err := vs.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "bob", Reason: "fix dedup bug"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) > 0 {
		t.Fatalf("swap warnings: %v", p.Warnings)
	}
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
	var events []string
	for _, c := range r.hook.Calls() {
		events = append(events, c.Event[strings.LastIndex(c.Event, ":")+1:])
	}
	if strings.Join(events, " ") != "announced completed rolled-back" {
		t.Errorf("webhook heard %q", events)
	}
}
