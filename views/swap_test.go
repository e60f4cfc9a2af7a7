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

// TestSwapAndRollback publishes a backfill run (orders and its downstream daily_revenue)
// together and takes it back together.
func TestSwapAndRollback(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		warehouse(t, e, 200)
		l := ledgertest.Open(t)
		heard := &listener{}
		s := views.New("w", e, l, views.WithListener(heard))

		// Adoption: v1 was built outside trueup; the first look records it as live.
		list, err := s.Versions(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if list.Live != 1 || len(list.Versions) != 2 || !list.Versions[0].Live || list.Versions[0].State != views.StateLive || list.Versions[0].Rows != 200 {
			t.Fatalf("adopted listing: %+v", list)
		}
		// The runner records what it built (after adoption recorded v2 as an old version, its
		// record replaces that one).
		record(t, s, "orders", 2, views.StateValidated, 7)
		record(t, s, "daily_revenue", 2, views.StateValidated, 7)

		plan, err := s.PlanSwap(ctx, "orders", "v2")
		if err != nil {
			t.Fatal(err)
		}
		if got := plan.Summary(); got != "orders v1 → v2, daily_revenue v1 → v2" {
			t.Errorf("plan = %q", got)
		}
		if src := source(t, e, "orders"); src != "orders__v1" {
			t.Fatalf("planning changed the view: %s", src)
		}

		p, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann", Reason: "fix dedup bug"})
		if err != nil {
			t.Fatal(err)
		}
		if p.State != views.PublishDone || p.Summary() != "orders v1 → v2, daily_revenue v1 → v2" {
			t.Errorf("publish = %+v", p)
		}
		for _, table := range []string{"orders", "daily_revenue"} {
			if src := source(t, e, table); src != table+"__v2" {
				t.Errorf("%s reads %s after swap", table, src)
			}
			if diff := cmp.Diff(map[string]string{"v1": views.StatePrevious, "v2": views.StateLive}, states(t, s, table)); diff != "" {
				t.Errorf("%s states after swap (-want +got):\n%s", table, diff)
			}
		}
		list, _ = s.Versions(ctx, "daily_revenue")
		if list.RollbackTarget != 1 || !list.Versions[0].RollbackTarget {
			t.Errorf("rollback target of daily_revenue = %d", list.RollbackTarget)
		}

		// Rolling back the downstream table takes back the whole publish.
		rb, err := s.Rollback(ctx, views.RollbackRequest{Table: "daily_revenue", Actor: "bob", Reason: "numbers look off"})
		if err != nil {
			t.Fatal(err)
		}
		if rb.Summary() != "daily_revenue v2 → v1, orders v2 → v1" || rb.Undoes != p.ID {
			t.Errorf("rollback = %+v", rb)
		}
		for _, table := range []string{"orders", "daily_revenue"} {
			if src := source(t, e, table); src != table+"__v1" {
				t.Errorf("%s reads %s after rollback", table, src)
			}
			if diff := cmp.Diff(map[string]string{"v1": views.StateLive, "v2": views.StatePrevious}, states(t, s, table)); diff != "" {
				t.Errorf("%s states after rollback (-want +got):\n%s", table, diff)
			}
		}
		_, err = s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "bob"})
		if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "nothing to roll back") {
			t.Errorf("second rollback: %v", err)
		}

		want := []string{
			"published orders v1 → v2, daily_revenue v1 → v2",
			"rolled back daily_revenue v2 → v1, orders v2 → v1: numbers look off",
		}
		if diff := cmp.Diff(want, heard.got()); diff != "" {
			t.Errorf("listener (-want +got):\n%s", diff)
		}
		var actions []string
		for _, a := range audit(t, l) {
			if strings.HasPrefix(a.Action, "view.") {
				actions = append(actions, a.Action+" "+a.Actor+" "+a.Outcome)
			}
		}
		wantAudit := []string{"view.swap ann ok", "view.rollback bob ok"}
		if diff := cmp.Diff(wantAudit, actions); diff != "" {
			t.Errorf("audit (-want +got):\n%s", diff)
		}
		last := audit(t, l)
		ok := last[len(last)-1]
		if ok.Params["reason"] != "numbers look off" || ok.Params["duration_ms"] == nil || ok.Detail != "daily_revenue v2 → v1, orders v2 → v1" {
			t.Errorf("rollback audit entry: %+v", ok)
		}
	})
}

// TestRefusals: every bad request is refused with a clear message and changes nothing.
func TestRefusals(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		warehouse(t, e, 50)
		makeVersion(t, e, "orders", 3, 50, 3)
		makeVersion(t, e, "orders", 4, 50, 4)
		makeVersion(t, e, "orders", 5, 50, 5)
		l := ledgertest.Open(t)
		s := views.New("w", e, l)
		if _, err := s.Versions(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		record(t, s, "orders", 2, views.StateValidationFailed, 0)
		record(t, s, "orders", 3, views.StateBuilding, 0)
		record(t, s, "orders", 4, views.StateRetired, 0)
		record(t, s, "orders", 5, views.StateCancelled, 0)
		record(t, s, "daily_revenue", 2, views.StateValidated, 0)
		before := states(t, s, "orders")

		for _, tc := range []struct {
			name, to string
			is       error
			msg      string
		}{
			{"nonexistent", "v9", fault.ErrNotFound, "orders has no version v9"},
			{"other_tables_version", "daily_revenue__v2", fault.ErrInvalid, "daily_revenue__v2 is a version of daily_revenue, not of orders"},
			{"garbage", "latest", fault.ErrInvalid, `version "latest" of orders: want vN`},
			{"building", "v3", fault.ErrConflict, "orders v3 is still building"},
			{"retired", "v4", fault.ErrConflict, "orders v4 was retired"},
			{"cancelled", "v5", fault.ErrConflict, "orders v5 was cancelled"},
			{"already_live", "v1", fault.ErrConflict, "orders v1 is already live"},
			{"validation_failed", "v2", fault.ErrFailed, "orders v2: validation failed; an approver may override"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: tc.to, Actor: "ann"})
				if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("err = %v, want %v containing %q", err, tc.is, tc.msg)
				}
				if src := source(t, e, "orders"); src != "orders__v1" {
					t.Errorf("view changed: %s", src)
				}
				if diff := cmp.Diff(before, states(t, s, "orders")); diff != "" {
					t.Errorf("states changed (-want +got):\n%s", diff)
				}
				if h, _ := s.History(ctx, "orders", 0); len(h) != 0 {
					t.Errorf("a publish was recorded: %+v", h)
				}
			})
		}

		t.Run("override", func(t *testing.T) {
			p, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "carol", Reason: "month end",
				Override: "  the 0.2% drift is the late-data fix; finance signed off  "})
			if err != nil {
				t.Fatal(err)
			}
			if p.OverrideBy != "carol" || p.OverrideReason != "the 0.2% drift is the late-data fix; finance signed off" {
				t.Errorf("publish override = %q %q", p.OverrideBy, p.OverrideReason)
			}
			v, _ := s.Store().Get(ctx, "w", "orders", 2)
			if v.State != views.StateLive || v.OverrideBy != "carol" || !strings.Contains(v.OverrideReason, "finance signed off") {
				t.Errorf("version after override: %+v", v)
			}
			var overrides int
			for _, a := range audit(t, l) {
				if a.Action == "view.override" && a.Actor == "carol" && strings.Contains(a.Detail, "finance signed off") {
					overrides++
				}
			}
			if overrides != 1 {
				t.Errorf("%d view.override audit entries", overrides)
			}
			// Taken back and published again: the override does not carry over.
			if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "carol"}); err != nil {
				t.Fatal(err)
			}
			_, err = s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "dave"})
			if !errors.Is(err, fault.ErrFailed) || !strings.Contains(err.Error(), "only by carol's override") {
				t.Errorf("republish without override: %v", err)
			}
			if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "dave", Override: "again"}); err != nil {
				t.Fatal(err)
			}
			if v, _ := s.Store().Get(ctx, "w", "orders", 2); v.OverrideBy != "dave" || v.OverrideReason != "again" {
				t.Errorf("second override not recorded: %+v", v)
			}
			// An override given where none is needed is not recorded.
			p, err = s.Swap(ctx, views.SwapRequest{Table: "daily_revenue", To: "v2", Actor: "carol", Override: "just in case"})
			if err != nil || p.OverrideBy != "" {
				t.Errorf("needless override: %+v, %v", p, err)
			}
		})
	})
}
