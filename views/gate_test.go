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

// TestAdoptedVersionNeedsOverride: a version table built by hand beside the live one is adopted
// as previous, but no swap ever made it live, so the gate does not let it through as "was live
// before": it needs an approver's override like any unvalidated version. The version that was
// live when trueup took the table over still goes back live without one.
func TestAdoptedVersionNeedsOverride(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		warehouse(t, e, 50)
		s := views.New("w", e, ledgertest.Open(t))
		if _, err := s.Versions(ctx, "orders"); err != nil { // takes orders over: v1 live
			t.Fatal(err)
		}
		record(t, s, "orders", 2, views.StateValidationFailed, 0)
		makeVersion(t, e, "orders", 3, 50, 3) // by hand, validated by nobody

		plan, err := s.PlanSwap(ctx, "orders", "v3")
		if err != nil {
			t.Fatal(err)
		}
		if !plan.NeedsOverride || len(plan.Gate) != 1 || plan.Gate[0].Passed || !strings.Contains(plan.Gate[0].Why, "built outside trueup") {
			t.Errorf("plan of the hand-made v3: %+v, want the gate to fail it", plan)
		}
		if got := states(t, s, "orders")["v3"]; got != views.StatePrevious {
			t.Errorf("v3 adopted as %q", got)
		}
		_, err = s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v3", Actor: "mallory"})
		if !errors.Is(err, fault.ErrFailed) {
			t.Fatalf("swap to the hand-made v3 without an override: %v, want the gate to refuse", err)
		}
		if src := source(t, e, "orders"); src != "orders__v1" {
			t.Fatalf("orders reads %s after a refused swap", src)
		}
		p, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v3", Actor: "carol", Override: "checked by hand"})
		if err != nil || p.OverrideBy != "carol" {
			t.Fatalf("swap with an override: %+v, %v", p, err)
		}
		// v1 was live when trueup took the table over: it goes back live without an override.
		if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v1", Actor: "ann"}); err != nil {
			t.Fatalf("swap back to v1: %v", err)
		}
		if src := source(t, e, "orders"); src != "orders__v1" {
			t.Errorf("orders reads %s, want v1", src)
		}
	})
}

// TestGateSeenLive: a version a swap made live and a later swap moved away from passes the gate
// as "was live before" by its own record, with the swaps' history gone; and by that history, for
// a record that does not say (a ledger from before the record kept it). With neither, it needs
// an override like any version built outside trueup.
func TestGateSeenLive(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		warehouse(t, e, 50)
		l := ledgertest.Open(t)
		s := views.New("w", e, l)
		if _, err := s.Versions(ctx, "orders"); err != nil { // takes orders over: v1 live
			t.Fatal(err)
		}
		record(t, s, "orders", 2, views.StateValidated, 0)
		swap := func(to string) (views.Publish, error) {
			return s.Swap(ctx, views.SwapRequest{Table: "orders", To: to, Actor: "ann"})
		}
		if _, err := swap("v2"); err != nil {
			t.Fatal(err)
		}
		if _, err := swap("v1"); err != nil {
			t.Fatal(err)
		}
		seen := func() bool {
			v, err := s.Store().Get(ctx, "w", "orders", 2)
			if err != nil {
				t.Fatal(err)
			}
			return v.State == views.StatePrevious && v.SeenLive
		}
		if !seen() {
			t.Fatal("v2, live once and moved away from, is not recorded seen live")
		}
		// A builder writing the record again (Put) keeps what trueup saw of it.
		v2, err := s.Store().Get(ctx, "w", "orders", 2)
		if err != nil {
			t.Fatal(err)
		}
		v2.SeenLive = false
		if err := s.Store().Put(ctx, v2); err != nil {
			t.Fatal(err)
		}
		if !seen() {
			t.Fatal("v2 written again lost that it was seen live")
		}
		exec := func(q string) {
			t.Helper()
			if _, err := l.DB().ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		// The record says so: no history needed.
		exec(`UPDATE swaps SET changes = '[]'`)
		if _, err := swap("v2"); err != nil {
			t.Fatalf("swap back to v2, seen live by its record: %v", err)
		}
		if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"}); err != nil {
			t.Fatal(err)
		}
		// The record does not say; the history does.
		exec(`UPDATE versions SET seen_live = false`)
		if _, err := swap("v2"); err != nil {
			t.Fatalf("swap back to v2, seen live by the history: %v", err)
		}
		if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"}); err != nil {
			t.Fatal(err)
		}
		// Neither says: refused.
		exec(`UPDATE versions SET seen_live = false`)
		exec(`UPDATE swaps SET changes = '[]'`)
		if _, err := swap("v2"); !errors.Is(err, fault.ErrFailed) || !strings.Contains(err.Error(), "built outside trueup") {
			t.Fatalf("swap to v2 with nothing to vouch for it: %v, want the gate to refuse", err)
		}
		if src := source(t, e, "orders"); src != "orders__v1" {
			t.Errorf("orders reads %s after a refused swap", src)
		}
	})
}
