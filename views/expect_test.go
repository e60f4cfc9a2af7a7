package views_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"trueup/fault"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// TestStaleConfirmation: a swap or rollback that carries what the operator confirmed is refused
// as a conflict, nothing changed, when that no longer holds — a second click of "roll back" does
// not take back the swap before, and a swap confirmed as "v1 → v2" does not move v3 → v2.
// Without the expectation a request does what is asked now, as before.
func TestStaleConfirmation(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		warehouse(t, e, 50)
		makeVersion(t, e, "orders", 3, 50, 3)
		s := views.New("w", e, ledgertest.Open(t))
		validatedRun(t, s)
		record(t, s, "orders", 3, views.StateValidated, 0)
		reads := func(table string, n int) {
			t.Helper()
			if src := source(t, e, table); src != views.Physical(table, n) {
				t.Fatalf("%s reads %s, want v%d", table, src, n)
			}
		}

		t.Run("stale_swap_is_refused", func(t *testing.T) {
			plan, err := s.PlanSwap(ctx, "orders", "v2") // the confirmation: orders and daily_revenue v1 → v2
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v3", Actor: "bob"}); err != nil {
				t.Fatal(err)
			}
			_, err = s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann", From: views.FromOf(plan)})
			if !views.Stale(err) || !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "orders v3 → v2") {
				t.Fatalf("swap confirmed as v1 → v2 while v3 is live: %v, want a stale conflict naming v3 → v2", err)
			}
			reads("orders", 3)
			reads("daily_revenue", 1)
		})

		t.Run("second_rollback_of_one_confirmation_is_refused", func(t *testing.T) {
			if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann", From: map[string]int{"orders": 3, "daily_revenue": 1}}); err != nil {
				t.Fatal(err)
			}
			plan, err := s.PlanRollback(ctx, "orders") // "This takes back swap #N"
			if err != nil {
				t.Fatal(err)
			}
			req := views.RollbackRequest{Table: "orders", Actor: "ann", Undoes: plan.Undoes}
			if _, err := s.Rollback(ctx, req); err != nil {
				t.Fatalf("first rollback: %v", err)
			}
			reads("orders", 3)
			reads("daily_revenue", 1)
			_, err = s.Rollback(ctx, req) // the same confirmation again
			if !views.Stale(err) || !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "already taken back") {
				t.Fatalf("second rollback of one confirmation: %v, want a stale conflict", err)
			}
			reads("orders", 3)
			// Without the expectation the next rollback in the stack is taken back, as asked.
			if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"}); err != nil {
				t.Fatalf("explicit rollback: %v", err)
			}
			reads("orders", 1)
		})
	})
}
