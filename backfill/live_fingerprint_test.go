package backfill_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"trueup/backfill"
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
