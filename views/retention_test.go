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

// TestRetention: neither an operator nor automatic retention can drop the live version or the
// rollback target; older versions go, their tables dropped and the retirement audited.
func TestRetention(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		warehouse(t, e, 50)
		for n := 3; n <= 5; n++ {
			makeVersion(t, e, "orders", n, 50, n)
		}
		l := ledgertest.Open(t)
		s := views.New("w", e, l, views.WithRetention(1, true))
		if _, err := s.Versions(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		for n := 2; n <= 5; n++ {
			record(t, s, "orders", n, views.StateValidated, 0)
		}
		for _, to := range []string{"v2", "v3"} {
			if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: to, Actor: "ann"}); err != nil {
				t.Fatal(err)
			}
		}
		// Live v3, rollback target v2, older v1: keep 1 keeps it; v4 and v5 are newer, unpublished.
		if diff := cmp.Diff(map[string]string{"v1": views.StatePrevious, "v2": views.StatePrevious, "v3": views.StateLive,
			"v4": views.StateValidated, "v5": views.StateValidated}, states(t, s, "orders")); diff != "" {
			t.Errorf("states (-want +got):\n%s", diff)
		}

		for _, tc := range []struct{ version, msg string }{
			{"v3", "orders v3 is live"},
			{"v2", "orders v2 is the rollback target"},
			{"v9", "orders has no version v9"},
		} {
			err := s.Retire(ctx, views.RetireRequest{Table: "orders", Version: tc.version, Actor: "ann"})
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("retire %s: %v, want %q", tc.version, err, tc.msg)
			}
		}
		if got := relations(t, e, "orders__v"); !cmp.Equal(got, []string{"orders__v1", "orders__v2", "orders__v3", "orders__v4", "orders__v5"}) {
			t.Errorf("a refused retirement dropped a table: %v", got)
		}

		// A third swap: automatic retention (keep 1) retires v1 but never the new rollback target v3.
		if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v4", Actor: "ann"}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]string{"v1": views.StateRetired, "v2": views.StatePrevious, "v3": views.StatePrevious,
			"v4": views.StateLive, "v5": views.StateValidated}, states(t, s, "orders")); diff != "" {
			t.Errorf("after auto retention (-want +got):\n%s", diff)
		}
		if got := relations(t, e, "orders__v"); !cmp.Equal(got, []string{"orders__v2", "orders__v3", "orders__v4", "orders__v5"}) {
			t.Errorf("tables after auto retention: %v", got)
		}
		// By hand: v2 may go now (v3 is the rollback target); rolling back still works.
		if err := s.Retire(ctx, views.RetireRequest{Table: "orders", Version: "v2", Actor: "bob", Reason: "space"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Retire(ctx, views.RetireRequest{Table: "orders", Version: "v2", Actor: "bob"}); !errors.Is(err, fault.ErrConflict) {
			t.Errorf("retiring twice: %v", err)
		}
		if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "bob"}); err != nil {
			t.Fatal(err)
		}
		if src := source(t, e, "orders"); src != "orders__v3" {
			t.Errorf("rollback went to %s", src)
		}
		// The swap before that one went back to the retired v2: refused, nothing changed.
		_, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "bob"})
		if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "v2") {
			t.Errorf("rollback onto a retired version: %v", err)
		}
		if src := source(t, e, "orders"); src != "orders__v3" {
			t.Errorf("a refused rollback moved the view to %s", src)
		}
		var retired []string
		for _, a := range audit(t, l) {
			if a.Action == "version.retire" {
				retired = append(retired, a.Actor+" "+a.Params["version"].(string))
			}
		}
		if diff := cmp.Diff([]string{"trueup v1", "bob v2"}, retired); diff != "" {
			t.Errorf("retirement audit (-want +got):\n%s", diff)
		}
	})
}

// TestTimeTravel queries retained versions by name and evaluates a report as of a version.
func TestTimeTravel(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		warehouse(t, e, 100)
		s := views.New("w", e, ledgertest.Open(t))
		if rel, err := views.Relation("orders", "v1"); err != nil || rel != "orders__v1" {
			t.Errorf("Relation = %q, %v", rel, err)
		}
		report := "SELECT sum(o.amount) AS total FROM orders o JOIN daily_revenue ON daily_revenue.id = o.id WHERE o.region = 'NA'"
		total := func(at map[string]string) int64 {
			t.Helper()
			res, err := s.QueryAsOf(ctx, report, at)
			if err != nil {
				t.Fatal(err)
			}
			return tsql.AsInt64(res.Rows[0][0])
		}
		live, v1, v2 := total(nil), total(map[string]string{"orders": "v1"}), total(map[string]string{"orders": "v2"})
		if live != v1 || v2 == v1 {
			t.Errorf("totals: live %d, as of v1 %d, as of v2 %d", live, v1, v2)
		}
		p, err := s.PlanSwap(ctx, "orders", "v2")
		if err != nil {
			t.Fatal(err)
		}
		before, after := views.PlanSides(p)
		if total(before) != v1 || total(after) != v2 {
			t.Errorf("plan sides: %v %v", before, after)
		}
		if err := s.Retire(ctx, views.RetireRequest{Table: "orders", Version: "v2", Actor: "ann"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.QueryAsOf(ctx, report, map[string]string{"orders": "v2"}); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("as of a retired version: %v", err)
		}
		if _, err := s.AsOf(ctx, "DELETE FROM orders", nil); err == nil {
			t.Error("as of accepted a write")
		}
	})
}

func relations(t *testing.T, e tsql.Engine, prefix string) []string {
	t.Helper()
	rels, err := e.Relations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rels {
		if strings.HasPrefix(r.Name, prefix) {
			out = append(out, r.Name)
		}
	}
	return out
}

// TestTimeTravelQualifiedNames: a report naming its tables with the current schema or database
// (main.orders on DuckDB, db.orders on ClickHouse) is evaluated as of the version asked for, not
// on the live data; another schema's table of the same name is another table, read as written.
func TestTimeTravelQualifiedNames(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		warehouse(t, e, 100)
		s := views.New("w", e, ledgertest.Open(t))
		schema := "main"
		if e.Info().Kind == "clickhouse" {
			schema = e.Info().Target[strings.LastIndexByte(e.Info().Target, '/')+1:]
		}
		total := func(report string, at map[string]string) int64 {
			t.Helper()
			res, err := s.QueryAsOf(ctx, report, at)
			if err != nil {
				t.Fatal(err)
			}
			return tsql.AsInt64(res.Rows[0][0])
		}
		plain := "SELECT sum(amount) FROM orders"
		qualified := "SELECT sum(amount) FROM " + e.Dialect().Quote(schema) + ".orders"
		v2 := total(plain, map[string]string{"orders": "v2"})
		if live := total(qualified, nil); live == v2 {
			t.Fatalf("v1 and v2 have the same total %d", v2)
		}
		if got := total(qualified, map[string]string{"orders": "v2"}); got != v2 {
			t.Errorf("%s as of v2 = %d, want %d (it read the live data)", qualified, got, v2)
		}
		if q, err := s.AsOf(ctx, "SELECT sum(amount) FROM elsewhere.orders", map[string]string{"orders": "v2"}); err != nil || q != "SELECT sum(amount) FROM elsewhere.orders" {
			t.Errorf("as of with another schema's orders: %q, %v; want it as written", q, err)
		}
	})
}
