package views_test

import (
	"context"
	"slices"
	"testing"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// TestDaysAreWhatReadersSee: a table's days are the partitions its view reads now, a day a
// pipeline wrote into the live version after the swap too; a day only the old version holds is
// not one; a table no backfill has measured has none.
func TestDaysAreWhatReadersSee(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		s := swappedToV2(t, e)
		write(t, e, "orders__v2", july(25), 4000, 3) // the pipeline, after the swap
		write(t, e, "orders__v1", july(28), 5000, 1) // a stale writer: readers do not see it
		days, err := s.Days(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{}
		for d := 1; d <= 20; d++ {
			want = append(want, tsql.FormatGrain(july(d), "day"))
		}
		want = append(want, "2026-07-25")
		if !slices.Equal(days, want) {
			t.Errorf("days = %v, want %v", days, want)
		}

		makeVersion(t, e, "plain", 1, 10, 0)
		pointView(t, e, "plain", 1)
		p := views.New("w", e, ledgertest.Open(t))
		if days, err := p.Days(ctx, "plain"); err != nil || days != nil {
			t.Errorf("days of a table no mark describes: %v, %v; want none", days, err)
		}
	})
}
