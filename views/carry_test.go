package views_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"trueup/fault"
	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

var july = func(day int) time.Time { return time.Date(2026, 7, day, 0, 0, 0, 0, time.UTC) }

// buildLike builds orders__v2 as a backfill run does: the basis recorded, live's partitions
// outside the scope (July 3 and 4) carried over, the scope's rows rebuilt (amount + 1000).
func buildLike(t *testing.T, s *views.Service, e tsql.Engine) {
	t.Helper()
	buildVersion(t, s, e, 2, 7, july(3), july(4))
}

// buildVersion builds orders version n from the live orders__v1 as run (of backfill
// fix_dedup_bug) would with scope: the days outside it carried, those inside rebuilt.
func buildVersion(t *testing.T, s *views.Service, e tsql.Engine, n int, run int64, scope ...time.Time) {
	t.Helper()
	ctx := context.Background()
	physical := views.Physical("orders", n)
	if err := e.CreateTableLike(ctx, physical, "orders__v1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Store().RecordBasis(ctx, e, s.Target(), "orders", n, "orders__v1", "", "d", tsql.TypeDate, "day", scope); err != nil {
		t.Fatal(err)
	}
	var ws []tsql.Window
	for _, d := range scope {
		ws = append(ws, tsql.Window{Column: "d", Type: tsql.TypeDate, Start: d, End: d.AddDate(0, 0, 1)})
	}
	if err := e.CopyPartitions(ctx, physical, "orders__v1", "d", ws); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if _, err := e.ReplacePartition(ctx, physical, w, "SELECT id, d, region, amount + 1000 AS amount FROM orders__v1"); err != nil {
			t.Fatal(err)
		}
	}
	record(t, s, "orders", n, views.StateValidated, run)
}

// write appends rows to table for day, ids from first, as a pipeline would.
func write(t *testing.T, e tsql.Engine, table string, day time.Time, first, n int) {
	t.Helper()
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(first + i), day, "NA", int64(5)}
	}
	if err := e.Insert(context.Background(), table, []string{"id", "d", "region", "amount"}, rows); err != nil {
		t.Fatal(err)
	}
}

// count is what readers of relation see: rows, and the rows of ids from first on.
func count(t *testing.T, e tsql.Engine, relation, where string) int64 {
	t.Helper()
	res, err := e.Query(context.Background(), "SELECT count(*) FROM "+relation+" WHERE "+where)
	if err != nil {
		t.Fatal(err)
	}
	return tsql.AsInt64(res.Rows[0][0])
}

func carried(cs []views.Carried) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return strings.Join(out, "; ")
}

// TestSwapCarriesWhatThePipelineWrote: rows written to the live version while the new one was
// built — a new day and late rows in an old one — are carried into it with the swap; rows
// written into the scope refuse the swap; a rollback carries back what was written to the new
// version; a version written after it stopped being live is caught and caught up.
func TestSwapCarriesWhatThePipelineWrote(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		makeVersion(t, e, "orders", 1, 200, 0) // July 1–20, 10 rows a day
		pointView(t, e, "orders", 1)
		l := ledgertest.Open(t)
		s := views.New("w", e, l)
		if _, err := s.Versions(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		buildLike(t, s, e)

		// The pipeline keeps writing the live version: a new day, late rows in July 10.
		write(t, e, "orders__v1", july(21), 1000, 5)
		write(t, e, "orders__v1", july(10), 2000, 2)
		plan, err := s.PlanSwap(ctx, "orders", "v2")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := carried(plan.Changes[0].Carried), "2026-07-10 +2 rows; 2026-07-21 +5 rows"; got != want {
			t.Errorf("planned carry = %q, want %q", got, want)
		}
		if got := views.CarriedSummary(plan.Changes[0].Carried); got != "2 partitions, +2 and +5 rows" {
			t.Errorf("summary = %q", got)
		}
		if n := count(t, e, "orders__v2", "id >= 1000"); n != 0 {
			t.Fatalf("planning wrote %d rows", n)
		}

		p, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		if got := carried(p.Changes[0].Carried); got != "2026-07-10 +2 rows; 2026-07-21 +5 rows" {
			t.Errorf("recorded carry = %q", got)
		}
		if n := count(t, e, "orders", "id >= 1000"); n != 7 {
			t.Errorf("readers see %d of the 7 rows the pipeline wrote", n)
		}
		if n := count(t, e, "orders", "1=1"); n != 207 {
			t.Errorf("readers see %d rows, want 207", n)
		}
		if n := count(t, e, "orders", "amount >= 1000"); n != 20 {
			t.Errorf("readers see %d rebuilt rows of the scope, want 20", n)
		}
		got, err := s.GetPublish(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if carried(got.Changes[0].Carried) != "2026-07-10 +2 rows; 2026-07-21 +5 rows" {
			t.Errorf("the ledger's record of the swap: %+v", got.Changes)
		}

		// After the swap the pipeline writes the new live version; a rollback carries it back.
		write(t, e, "orders__v2", july(22), 3000, 3)
		rb, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		if got := carried(rb.Changes[0].Carried); got != "2026-07-22 +3 rows" {
			t.Errorf("rollback carried %q", got)
		}
		if n := count(t, e, "orders", "id >= 1000"); n != 10 {
			t.Errorf("after the rollback readers see %d of the 10 rows written, want 10", n)
		}
		if n := count(t, e, "orders", "amount >= 1000"); n != 0 {
			t.Errorf("after the rollback the scope still reads %d rebuilt rows", n)
		}
		// A version's own table is not a plain table to adopt: the answer names its logical table.
		if _, err := s.Versions(ctx, "orders__v1"); err == nil || !strings.Contains(err.Error(), "orders__v1 is version v1 of the logical table orders") {
			t.Errorf("versions of orders__v1: %v", err)
		}
		// The versions list the rows each holds now, carries included, not as recorded.
		listing, err := s.Versions(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range listing.Versions {
			want := count(t, e, views.Physical("orders", v.N), "1=1")
			if v.Rows != want || (!v.Live && (v.RowsVsLive != 0 || v.ChecksumCompared)) {
				t.Errorf("versions: v%d %d rows (%+d against live, checksum compared %v), want %d rows, as many as live, checksums not compared (written since)",
					v.N, v.Rows, v.RowsVsLive, v.ChecksumCompared, want)
			}
			if v.Checksum != "" { // each was written since its checksum was taken
				t.Errorf("versions: v%d shows the checksum %s, taken of other rows", v.N, v.Checksum)
			}
		}

		// A writer that did not notice keeps writing v2: caught, then caught up.
		write(t, e, "orders__v2", july(22), 4000, 4)
		write(t, e, "orders__v2", july(3), 5000, 1) // inside the scope: listed, not carried
		stale, err := s.Stale(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if len(stale) != 1 || stale[0].String() != "orders__v2 changed after it stopped being live: 2026-07-22 +4 rows, 2026-07-03 +1 rows not visible to readers; 2026-07-03 inside the scope of backfill fix_dedup_bug: trueup catch-up does not carry it" {
			t.Fatalf("stale = %+v", stale)
		}
		res, err := s.CatchUp(ctx, "orders", "ann")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Carried) != 1 || carried(res.Carried[0].Partitions) != "2026-07-22 +4 rows" {
			t.Errorf("catch-up = %+v", res)
		}
		if len(res.NotCarried) != 1 || len(res.NotCarried[0].Partitions) != 0 || carried(res.NotCarried[0].InScope) != "2026-07-03 +1 rows" {
			t.Errorf("catch-up's partitions not carried = %+v", res.NotCarried)
		}
		if n := count(t, e, "orders", "id >= 1000"); n != 14 {
			t.Errorf("after the catch-up readers see %d of the 14 rows written outside the scope", n)
		}
		if n := count(t, e, "orders", "id >= 3000 AND id < 5000"); n != 7 {
			t.Errorf("the catch-up duplicated or lost rows: %d of 7", n)
		}
		again, err := s.Stale(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != 1 || len(again[0].Partitions) != 0 || len(again[0].InScope) != 1 {
			t.Errorf("after the catch-up: %+v", again)
		}

		// Both written since: the live writer and the stale one each add to July 23: merged.
		write(t, e, "orders__v1", july(23), 6000, 2)
		write(t, e, "orders__v2", july(23), 7000, 1)
		res, err = s.CatchUp(ctx, "orders", "ann")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Carried) != 1 || carried(res.Carried[0].Partitions) != "2026-07-23 +1 rows (merged)" {
			t.Errorf("catch-up of both sides = %+v", res)
		}
		if n := count(t, e, "orders", "id >= 6000"); n != 3 {
			t.Errorf("after merging July 23 readers see %d of its 3 rows", n)
		}
	})
}

// TestSwapRefusesWhenTheScopeChanged: a write into the days the backfill rebuilt since the build
// refuses the swap, naming them, with nothing changed.
func TestSwapRefusesWhenTheScopeChanged(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		makeVersion(t, e, "orders", 1, 200, 0)
		pointView(t, e, "orders", 1)
		l := ledgertest.Open(t)
		s := views.New("w", e, l)
		if _, err := s.Versions(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		buildLike(t, s, e)
		write(t, e, "orders__v1", july(4), 1000, 3)
		write(t, e, "orders__v1", july(21), 2000, 1)
		for _, op := range []func() error{
			func() error { _, err := s.PlanSwap(ctx, "orders", "v2"); return err },
			func() error { _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2"}); return err },
		} {
			err := op()
			var sc *views.ScopeChangedError
			if !errors.As(err, &sc) || !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "2026-07-04 +3 rows") ||
				!strings.Contains(err.Error(), "trueup backfill run fix_dedup_bug --catch-up") {
				t.Fatalf("swap after a write into the scope: %v", err)
			}
		}
		if src := source(t, e, "orders"); src != "orders__v1" {
			t.Errorf("the refused swap moved the view to %s", src)
		}
		if n := count(t, e, "orders__v2", "id >= 1000"); n != 0 {
			t.Errorf("the refused swap carried %d rows", n)
		}
	})
}

// TestStaleAfterAnotherVersionWentLive: v2 (one backfill's, scope July 3–4) is swapped in and
// rolled back, and written into July 3 after; then v3 (built from v1 by another run, scope
// July 8) goes live. The rows written into v2 are named with the backfill and version that
// rebuilt July 3 — v2's, not v3's — and the only advice is to write them into live: publishing
// v2 again would take v3 back, and v3 was not rebuilt there.
func TestStaleAfterAnotherVersionWentLive(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		s := swappedToV2(t, e)
		if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"}); err != nil {
			t.Fatal(err)
		}
		write(t, e, "orders__v2", july(3), 5000, 1)
		buildVersion(t, s, e, 3, 8, july(8))
		v3, err := s.Store().Get(ctx, s.Target(), "orders", 3)
		if err != nil {
			t.Fatal(err)
		}
		v3.Backfill = "other_fix"
		if err := s.Store().Put(ctx, v3); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v3", Actor: "ann"}); err != nil {
			t.Fatal(err)
		}
		stale, err := s.Stale(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if len(stale) != 1 || len(stale[0].InScope) != 1 || stale[0].Backfill != "fix_dedup_bug" {
			t.Fatalf("stale = %+v, want v2's July 3 inside the scope of fix_dedup_bug", stale)
		}
		got := strings.Join(stale[0].NotCarried(), "\n")
		for _, want := range []string{"backfill fix_dedup_bug rebuilt 2026-07-03 in orders__v2",
			"to let readers see them: write the rows into orders__v3"} {
			if !strings.Contains(got, want) {
				t.Errorf("not carried says:\n%s\nwant %q", got, want)
			}
		}
		if strings.Contains(got, "other_fix") || strings.Contains(got, "trueup swap") || strings.Contains(got, "trueup run") {
			t.Errorf("not carried names the wrong backfill or a harmful command:\n%s", got)
		}
	})
}
