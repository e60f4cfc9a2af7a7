package backfill_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"trueup/backfill"
	"trueup/fault"
	"trueup/fixtures"
	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestValidationRereadsLiveWrittenSince: a pipeline writes a row into the live version after the
// run measured live (its basis) and carried it over, before the validation. Live's recorded
// fingerprints no longer describe it, so the validation reads live (only the new version's
// fingerprints stand in) and reports the partition the pipeline changed, where trusting the
// basis would have called it identical.
func TestValidationRereadsLiveWrittenSince(t *testing.T) {
	t.Parallel() // long: beside the package's other long tests
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		d := newDemo(t, e)
		day := fixtures.Start.AddDate(0, 0, 3) // outside the scope, carried over from live
		lit, err := e.Dialect().Literal(tsql.Date(day))
		if err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		r := d.newRunner(t, e, backfill.WithProgress(func(p backfill.Progress) {
			if p.Done < p.Total {
				return
			}
			once.Do(func() { // built, not validated yet: the pipeline's write
				q := "INSERT INTO orders__v1 SELECT * FROM orders__v1 WHERE order_date = " + lit + " LIMIT 1"
				if err := e.Exec(ctx, q); err != nil {
					t.Errorf("the pipeline's write: %v", err)
				}
			})
		}))
		done := runToEnd(t, ctx, r, "fix_dedup_bug", backfill.RunOptions{Actor: "ann"})
		var v backfill.Validation
		if err := json.Unmarshal(done.Validation, &v); err != nil || len(v.Tables) == 0 || v.Tables[0].Table != "orders" {
			t.Fatalf("validation %s: %v", done.Validation, err)
		}
		saved, err := reconcile.NewStore(d.ledger).Get(ctx, v.Tables[0].DiffID)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(saved.Fingerprints, ","); got != "new" {
			t.Errorf("orders: validation used the fingerprints of %q, want only the new version's", got)
		}
		label := day.Format("2006-01-02")
		found := false
		for _, p := range saved.Partitions {
			if p.Partition != label {
				continue
			}
			found = true
			if p.Unchanged() || p.OldCount != p.NewCount+1 || p.ConfirmedBy != "" {
				t.Errorf("orders %s, one row more in live than carried: %+v", label, p)
			}
		}
		if !found {
			t.Errorf("orders: no partition %s in the validation's diff", label)
		}
	})
}

// TestCatchUpCarriesAndValidatesAgain: a pipeline writes a row into a day outside the scope
// while the run builds, so the validation finds that day differs from live and fails. A
// catch-up carries the day into the new version and validates again, which now passes; with
// nothing written since, a second catch-up is refused. The catch-up is asked while the run's
// goroutine still tells its listener (a notice being drafted) about the end the status reads
// already: it waits for that goroutine, not refuses as if the run were still building.
func TestCatchUpCarriesAndValidatesAgain(t *testing.T) {
	t.Parallel() // long: beside the package's other long tests
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		d := newDemo(t, e)
		lit, err := e.Dialect().Literal(tsql.Date(fixtures.Start.AddDate(0, 0, 3)))
		if err != nil {
			t.Fatal(err)
		}
		var once, told sync.Once
		drafting := make(chan struct{})
		svc := &backfill.Service{Runner: d.newRunner(t, e, backfill.WithListener(runChanged(func(_ context.Context, run *backfill.Run) {
			if run.State == backfill.RunValidationFailed {
				told.Do(func() { <-drafting })
			}
		})), backfill.WithProgress(func(p backfill.Progress) {
			if p.Done == p.Total {
				once.Do(func() { // built, not validated yet: the pipeline's write
					q := "INSERT INTO orders__v1 (order_id, order_date, ordered_at, customer_id, region, amount) SELECT order_id + 1000000000, " +
						"order_date, ordered_at, customer_id, region, amount FROM orders__v1 WHERE order_date = " + lit + " LIMIT 1"
					if err := e.Exec(ctx, q); err != nil {
						t.Errorf("the pipeline's write: %v", err)
					}
				})
			}
		}))}
		defer svc.Close()
		if _, err := svc.Start(ctx, "fix_dedup_bug", "ann", 0, nil); err != nil {
			t.Fatal(err)
		}
		if st := awaitStopped(t, svc, "fix_dedup_bug", ""); st.State != backfill.RunValidationFailed {
			t.Fatalf("with a day outside the scope written since the carry: %s (%v), want validation-failed", st.State, st.ValidationFailures)
		}
		time.AfterFunc(200*time.Millisecond, func() { close(drafting) }) // the notice is drafted
		if _, err := svc.CatchUp(ctx, "fix_dedup_bug", "ann"); err != nil {
			t.Fatalf("catch-up of a day outside the scope: %v", err)
		}
		if st := awaitStopped(t, svc, "fix_dedup_bug", backfill.RunValidationFailed); st.State != backfill.RunValidated {
			t.Errorf("after the catch-up: %s (%v), want validated", st.State, st.ValidationFailures)
		}
		svc.Close()
		n := func(rel string) int64 {
			res, err := e.Query(ctx, "SELECT count(*) FROM "+rel+" WHERE order_date = "+lit)
			if err != nil {
				t.Fatal(err)
			}
			return tsql.AsInt64(res.Rows[0][0])
		}
		if live, built := n("orders__v1"), n("orders__v2"); live != built {
			t.Errorf("the written day: %d rows live, %d in v2 after the catch-up", live, built)
		}
		// Already caught up is a state, not bad input: a conflict (409, exit 1).
		if _, err := svc.CatchUp(ctx, "fix_dedup_bug", "ann"); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "Nothing to catch up") {
			t.Errorf("a second catch-up with nothing written since: %v, want a conflict", err)
		}
	})
}
