package views_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"trueup/fault"
	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// TestRollbackNamesTheScopesRowsItLeaves: after the swap to v2 the pipeline writes v2 inside the
// backfill's scope (July 3) and outside it (July 22). The rollback to v1 carries July 22 back;
// July 3's rows, which v1 does not hold, stay in v2: the plan and the rollback name them
// (NotCarried), the audit entry says so, and afterwards Stale and CatchUp go on naming them as
// rows readers do not see, until v2 is published again, which shows them.
func TestRollbackNamesTheScopesRowsItLeaves(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		makeVersion(t, e, "orders", 1, 200, 0) // July 1–20, 10 rows a day
		pointView(t, e, "orders", 1)
		l := ledgertest.Open(t)
		s := views.New("w", e, l)
		if _, err := s.Versions(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		buildLike(t, s, e) // scope July 3 and 4
		if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"}); err != nil {
			t.Fatal(err)
		}
		if p, err := s.PlanRollback(ctx, "orders"); err != nil || len(p.Changes[0].NotCarried) != 0 {
			t.Fatalf("nothing written since the swap: plan %+v, %v; want nothing left behind", p.Changes, err)
		}

		write(t, e, "orders__v2", july(3), 3000, 2)  // inside the scope
		write(t, e, "orders__v2", july(22), 4000, 3) // outside it
		plan, err := s.PlanRollback(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		c := plan.Changes[0]
		if carried(c.Carried) != "2026-07-22 +3 rows" || carried(c.NotCarried) != "2026-07-03 +2 rows" {
			t.Errorf("rollback plan: carried %q, not carried %q; want July 22 carried, July 3 not", carried(c.Carried), carried(c.NotCarried))
		}
		want := "v2 was written inside the backfill's scope since the swap: 2026-07-03 +2 rows; these rows are not carried into v1"
		if line := c.NotCarriedLine(plan.Kind, true); !strings.Contains(line, want) || !strings.Contains(line, "stay in orders__v2, not visible to readers: trueup catch-up orders lists them") {
			t.Errorf("the plan says %q, want %q…", line, want)
		}

		rb, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		if carried(rb.Changes[0].NotCarried) != "2026-07-03 +2 rows" {
			t.Errorf("the rollback left behind %q, want July 3 +2", carried(rb.Changes[0].NotCarried))
		}
		if n := count(t, e, "orders", "id >= 4000"); n != 3 {
			t.Errorf("readers see %d of the 3 rows written outside the scope after the swap", n)
		}
		if n := count(t, e, "orders", "id >= 3000 AND id < 4000"); n != 0 {
			t.Errorf("readers see %d rows written inside the scope of v2: v1 holds its own rows there", n)
		}
		if n := count(t, e, "orders__v2", "id >= 3000 AND id < 4000"); n != 2 {
			t.Errorf("orders__v2 holds %d of the 2 rows written inside the scope: they must stay", n)
		}
		got, err := s.GetPublish(ctx, rb.ID)
		if err != nil || carried(got.Changes[0].NotCarried) != "2026-07-03 +2 rows" {
			t.Errorf("the ledger's record of the rollback: %+v %v", got.Changes, err)
		}
		var entry string
		for _, a := range audit(t, l) {
			if a.Action == "view.rollback" {
				entry = a.Detail
			}
		}
		if !strings.Contains(entry, "not carried, inside the backfill's scope: orders 2026-07-03 +2 rows left in orders__v2") {
			t.Errorf("the audit entry of the rollback: %q", entry)
		}

		stale, err := s.Stale(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if len(stale) != 1 || len(stale[0].Partitions) != 0 || carried(stale[0].InScope) != "2026-07-03 +2 rows" {
			t.Fatalf("stale after the rollback = %+v, want July 3 +2 inside the scope", stale)
		}
		if todo := stale[0].NotCarried(); len(todo) != 3 || !strings.Contains(todo[1], "publish orders__v2 again (trueup swap orders --to v2)") {
			t.Errorf("what to do: %q", todo)
		}
		res, err := s.CatchUp(ctx, "orders", "ann")
		if err != nil || len(res.NotCarried) != 1 || carried(res.NotCarried[0].InScope) != "2026-07-03 +2 rows" {
			t.Errorf("catch-up = %+v, %v; want July 3 named as not carried", res, err)
		}

		// Publishing v2 again shows them.
		if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"}); err != nil {
			t.Fatal(err)
		}
		if n := count(t, e, "orders", "id >= 3000"); n != 5 {
			t.Errorf("after swapping v2 again readers see %d of the 5 rows written after the first swap", n)
		}
		if stale, err := s.Stale(ctx, "orders"); err != nil || len(stale) != 0 {
			t.Errorf("stale after swapping v2 again = %+v, %v", stale, err)
		}
	})
}

// TestSwapBackRefusesToHideRows: after a rollback to v1, the pipeline writes v1 inside v2's
// scope (July 3). Swapping v2 in again would hide those rows, as the first swap after the build
// would have: it is refused, dry run and swap alike, naming them, and nothing moves; rows
// written outside the scope are no reason to refuse.
func TestSwapBackRefusesToHideRows(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		s := swappedToV2(t, e)
		if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"}); err != nil {
			t.Fatal(err)
		}
		write(t, e, "orders__v1", july(22), 4000, 3) // outside the scope: carried by the swap
		if _, err := s.PlanSwap(ctx, "orders", "v2"); err != nil {
			t.Fatalf("a swap back with rows outside the scope only: %v", err)
		}
		write(t, e, "orders__v1", july(3), 3000, 2) // inside it
		want := "orders changed inside the backfill's scope since v1 went live again: 2026-07-03 +2 rows; publishing would overwrite those rows"
		if _, err := s.PlanSwap(ctx, "orders", "v2"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("dry run of the swap back: %v, want %q", err, want)
		}
		_, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
		if err == nil || !strings.Contains(err.Error(), want) || fault.Of(err) != fault.Conflict {
			t.Errorf("the swap back: %v (%v), want a conflict saying %q", err, fault.Of(err), want)
		}
		if n := count(t, e, "orders", "id >= 3000 AND id < 4000"); n != 2 {
			t.Errorf("readers see %d of the 2 rows written inside the scope after the refused swap", n)
		}
	})
}

// TestOldVersionsLosingRowsHideNothing: a partition of an old version emptied after the swap
// (dropped to free space) hides nothing from readers: Stale does not list it and CatchUp leaves
// the live day as it is (it replaced it with the emptied one, deleting live rows); a partition
// the old version gained rows in is still caught up.
func TestOldVersionsLosingRowsHideNothing(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		s := swappedToV2(t, e)
		july5 := tsql.Window{Column: "d", Type: tsql.TypeDate, Start: july(5), End: july(6)}
		if _, err := e.ReplacePartitions(ctx, "orders__v1", []tsql.PartitionWrite{{Window: july5, Query: "SELECT * FROM orders__v1 WHERE 1 = 0"}}); err != nil {
			t.Fatal(err)
		}
		if stale, err := s.Stale(ctx, "orders"); err != nil || len(stale) != 0 {
			t.Errorf("stale after July 5 was emptied in v1: %+v, %v; want nothing", stale, err)
		}
		write(t, e, "orders__v1", july(22), 4000, 3)
		res, err := s.CatchUp(ctx, "orders", "ann")
		if err != nil || len(res.Carried) != 1 || carried(res.Carried[0].Partitions) != "2026-07-22 +3 rows" {
			t.Errorf("catch-up: %+v, %v; want July 22 +3 only", res, err)
		}
		if n := count(t, e, "orders", "d = "+dateLit(t, e, july(5))); n != 10 {
			t.Errorf("readers see %d rows of July 5 after the catch-up, want its 10", n)
		}
		if n := count(t, e, "orders", "id >= 4000"); n != 3 {
			t.Errorf("readers see %d of the 3 rows written to v1 on July 22", n)
		}
	})
}

// dateLit is day as e's SQL literal.
func dateLit(t *testing.T, e tsql.Engine, day time.Time) string {
	t.Helper()
	s, err := e.Dialect().Literal(tsql.Date(day))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRetireKeepsRowsReadersNeverSaw: an old version written after it stopped being live is
// not retired until those rows are caught up: retiring dropped them for good. (Retention skips
// such a version by the same check, hiding.)
func TestRetireKeepsRowsReadersNeverSaw(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		s := swappedToV2(t, e)
		if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"}); err != nil {
			t.Fatal(err)
		}
		write(t, e, "orders__v2", july(22), 4000, 3) // a writer still on v2
		err := s.Retire(ctx, views.RetireRequest{Table: "orders", Version: "v2", Actor: "ann"})
		want := "orders v2 holds rows readers never saw (2026-07-22 +3 rows): retiring it would drop them for good"
		if err == nil || fault.Of(err) != fault.Conflict || !strings.Contains(err.Error(), want) {
			t.Errorf("retire v2: %v (%v), want a conflict saying %q", err, fault.Of(err), want)
		}
		if n := count(t, e, "orders__v2", "id >= 4000"); n != 3 {
			t.Fatalf("orders__v2 holds %d of the 3 rows after the refused retire", n)
		}
		if _, err := s.CatchUp(ctx, "orders", "ann"); err != nil {
			t.Fatal(err)
		}
		if err := s.Retire(ctx, views.RetireRequest{Table: "orders", Version: "v2", Actor: "ann"}); err != nil {
			t.Errorf("retire v2 once caught up: %v", err)
		}
		if n := count(t, e, "orders", "id >= 4000"); n != 3 {
			t.Errorf("readers see %d of the 3 rows after the catch-up and the retire", n)
		}
	})
}

// swappedToV2 is orders with v1 (July 1–20, 10 rows a day) and v2 built like a backfill (scope
// July 3 and 4) swapped in, on a ledger of its own.
func swappedToV2(t *testing.T, e tsql.Engine) *views.Service {
	t.Helper()
	ctx := context.Background()
	makeVersion(t, e, "orders", 1, 200, 0)
	pointView(t, e, "orders", 1)
	s := views.New("w", e, ledgertest.Open(t))
	if _, err := s.Versions(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	buildLike(t, s, e)
	if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCatchUpCountsWhatReadersGained: a stale writer wrote into v1 the rows the pipeline wrote
// into live v2 too: catch-up merges them and says live gained none (it said +3, the rows v1
// gained).
func TestCatchUpCountsWhatReadersGained(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		s := swappedToV2(t, e)
		write(t, e, "orders__v2", july(22), 4000, 3)
		write(t, e, "orders__v1", july(22), 4000, 3) // the same rows, to the old version too
		write(t, e, "orders__v1", july(21), 5000, 2) // and two live lacks
		res, err := s.CatchUp(ctx, "orders", "ann")
		if err != nil || len(res.Carried) != 1 {
			t.Fatalf("catch-up: %+v, %v", res, err)
		}
		if got := carried(res.Carried[0].Partitions); got != "2026-07-21 +2 rows; 2026-07-22 changed (merged)" {
			t.Errorf("catch-up carried %q, want July 21 +2 and July 22 merged adding nothing", got)
		}
		if n := count(t, e, "orders", "id >= 4000"); n != 5 {
			t.Errorf("readers see %d of the 5 rows written after the swap, want 5", n)
		}
	})
}

// TestSwapBackCountsWhatReadersGain: after a rollback the pipeline writes three rows into live
// v1, and a stale writer the same three and one more into v2. Swapping back to v2 merges July 22
// and says readers gain nothing of v1's there (they see v2's four rows): it said +3, the rows v1
// gained, which readers of v2 had already.
func TestSwapBackCountsWhatReadersGain(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		s := swappedToV2(t, e)
		if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"}); err != nil {
			t.Fatal(err)
		}
		write(t, e, "orders__v1", july(22), 4000, 3)
		write(t, e, "orders__v2", july(22), 4000, 4)
		write(t, e, "orders__v1", july(21), 5000, 2) // and two v2 lacks, merged or not
		plan, err := s.PlanSwap(ctx, "orders", "v2")
		if err != nil {
			t.Fatal(err)
		}
		if got := carried(plan.Changes[0].Carried); got != "2026-07-21 +2 rows; 2026-07-22 changed (merged)" {
			t.Errorf("the swap plans to carry %q, want July 21 +2 and July 22 merged adding nothing", got)
		}
		p, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		if got := carried(p.Changes[0].Carried); got != "2026-07-21 +2 rows; 2026-07-22 changed (merged)" {
			t.Errorf("the swap carried %q, want July 21 +2 and July 22 merged adding nothing", got)
		}
		if n := count(t, e, "orders", "id >= 4000 AND id < 5000"); n != 4 {
			t.Errorf("readers see %d of July 22's 4 rows", n)
		}
		if n := count(t, e, "orders", "id >= 5000"); n != 2 {
			t.Errorf("readers see %d of July 21's 2 rows", n)
		}
	})
}
