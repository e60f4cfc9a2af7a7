package views_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"trueup/fault"

	"github.com/google/go-cmp/cmp"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// TestSwapWhenTheEngineDisagreesWithTheLedger changes views and tables behind trueup's back
// before a swap or rollback: what the engine says wins, a refused request leaves no publish
// behind, and an accepted one moves the views from where they really were.
func TestSwapWhenTheEngineDisagreesWithTheLedger(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		warehouse(t, e, 50)
		makeVersion(t, e, "orders", 3, 50, 3)
		makeVersion(t, e, "orders", 4, 50, 4)
		s := views.New("w", e, ledgertest.Open(t))
		record(t, s, "orders", 2, views.StateValidated, 0)
		record(t, s, "orders", 3, views.StateValidated, 0)
		record(t, s, "orders", 4, views.StateValidated, 0)
		if _, err := s.Versions(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		history := func() []string {
			t.Helper()
			ps, err := s.History(ctx, "orders", 0)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, p := range ps {
				out = append(out, p.Kind+" "+p.State+": "+p.Summary())
			}
			return out
		}

		// A pipeline outside trueup made the view read v2.
		pointView(t, e, "orders", 2)
		_, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
		if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "orders v2 is already live") {
			t.Fatalf("swap to the version the view reads: %v", err)
		}
		if h := history(); len(h) != 0 {
			t.Errorf("a refused swap left a publish: %v", h)
		}
		if got := states(t, s, "orders"); got["v2"] != views.StateLive || got["v1"] != views.StatePrevious {
			t.Errorf("the ledger does not follow the view: %v", got)
		}

		// v4's table was dropped outside trueup: the ledger records it retired.
		if err := e.DropTable(ctx, views.Physical("orders", 4)); err != nil {
			t.Fatal(err)
		}
		_, err = s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v4", Actor: "ann"})
		if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "orders v4 was retired") {
			t.Fatalf("swap to a dropped version: %v", err)
		}
		if src := source(t, e, "orders"); src != "orders__v2" {
			t.Errorf("view changed by a refused swap: %s", src)
		}

		// Published from where the view really is.
		p, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v3", Actor: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]views.Change{{Table: "orders", From: 2, To: 3}}, p.Changes); diff != "" {
			t.Errorf("changes (-want +got):\n%s", diff)
		}

		// The view moved on outside trueup: the rollback is refused and leaves nothing behind.
		pointView(t, e, "orders", 1)
		_, err = s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"})
		if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "moved on since") {
			t.Fatalf("rollback after the view moved: %v", err)
		}
		if diff := cmp.Diff([]string{"swap done: orders v2 → v3"}, history()); diff != "" {
			t.Errorf("history (-want +got):\n%s", diff)
		}
		if src := source(t, e, "orders"); src != "orders__v1" {
			t.Errorf("view changed by a refused rollback: %s", src)
		}
	})
}
