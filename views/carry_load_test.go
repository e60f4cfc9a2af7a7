package views_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// TestWriterDuringSwaps: a writer appends a batch to the write target every 10–50 ms, resolving
// it before each batch, while 20 swap/rollback cycles run. After it stops and one final
// catch-up, every row it committed is read through the live view exactly once.
func TestWriterDuringSwaps(t *testing.T) {
	if testing.Short() {
		t.Skip("20 swap/rollback cycles under a writer")
	}
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

		stop := make(chan struct{})
		var wg sync.WaitGroup
		var committed, batches int
		var writeErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := 100000
			rng := rand.New(rand.NewPCG(1, 2))
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(10+rng.IntN(41)) * time.Millisecond):
				}
				live, err := s.WriteTarget(ctx, "orders")
				if err != nil {
					writeErr = err
					return
				}
				day := july(21 + rng.IntN(5)) // new days, and late rows in them
				if rng.IntN(4) == 0 {
					day = july(10 + rng.IntN(5)) // late rows in old days outside the scope
				}
				n := 1 + rng.IntN(5)
				rows := make([][]any, n)
				for i := range rows {
					rows[i] = []any{int64(id + i), day, "NA", int64(1)}
				}
				if err := e.Insert(ctx, views.Physical("orders", live), []string{"id", "d", "region", "amount"}, rows); err != nil {
					writeErr = err
					return
				}
				id += n
				committed += n
				batches++
			}
		}()
		carried := 0
		for cycle := 0; cycle < 20; cycle++ {
			p, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
			if err != nil {
				t.Fatalf("cycle %d: swap: %v", cycle, err)
			}
			carried += len(p.Changes[0].Carried)
			time.Sleep(20 * time.Millisecond) // let the writer land batches on the new live version
			rb, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"})
			if err != nil {
				t.Fatalf("cycle %d: rollback: %v", cycle, err)
			}
			carried += len(rb.Changes[0].Carried)
			time.Sleep(20 * time.Millisecond)
		}
		close(stop)
		wg.Wait()
		if writeErr != nil {
			t.Fatalf("writer: %v", writeErr)
		}
		res, err := s.CatchUp(ctx, "orders", "ann")
		if err != nil {
			t.Fatal(err)
		}
		caught := 0
		for _, sv := range res.Carried {
			caught += len(sv.Partitions)
		}
		seen := count(t, e, "orders", "id >= 100000")
		dup, err := e.Query(ctx, "SELECT count(*) FROM (SELECT id FROM orders WHERE id >= 100000 GROUP BY id HAVING count(*) > 1) AS d")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d rows in %d batches during 40 publishes; %d partitions carried by the publishes, %d by the final catch-up; readers see %d, %d duplicated",
			e.Info().Kind, committed, batches, carried, caught, seen, tsql.AsInt64(dup.Rows[0][0]))
		if seen != int64(committed) || tsql.AsInt64(dup.Rows[0][0]) != 0 {
			t.Errorf("readers see %d of the %d rows committed, %d of them more than once", seen, committed, tsql.AsInt64(dup.Rows[0][0]))
		}
		if n := count(t, e, "orders", "id < 100000"); n != 200 {
			t.Errorf("readers see %d of the 200 rows before the writer", n)
		}
	})
}
