package views_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"trueup/fault"

	"path/filepath"
	"runtime"
	"trueup/ledger"
	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
	"weak"
)

// TestReadersUnderSwap: 8 readers query the live views in a loop while 50 swap/rollback cycles
// run; every read succeeds and returns exactly one version's full fingerprint.
func TestReadersUnderSwap(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		warehouse(t, e, 2000)
		s := views.New("w", e, ledgertest.Open(t))
		if _, err := s.Versions(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		record(t, s, "orders", 2, views.StateValidated, 7)
		record(t, s, "daily_revenue", 2, views.StateValidated, 7)

		// What each version of each table reads as: "count/checksum".
		valid := map[string]map[string]string{}
		queries := map[string]string{}
		for _, table := range []string{"orders", "daily_revenue"} {
			valid[table] = map[string]string{}
			for _, n := range []int{1, 2} {
				res, err := e.Query(ctx, fingerprintSQL(t, e, views.Physical(table, n)))
				if err != nil {
					t.Fatal(err)
				}
				valid[table][fmt.Sprintf("%d/%v", tsql.AsInt64(res.Rows[0][0]), res.Rows[0][1])] = fmt.Sprintf("v%d", n)
			}
			queries[table] = fingerprintSQL(t, e, table)
		}

		stop := make(chan struct{})
		var reads, readErrs, wrong atomic.Int64
		seen := sync.Map{}
		var wg sync.WaitGroup
		for r := range 8 {
			wg.Go(func() {
				tables := []string{"orders", "daily_revenue"}
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					table := tables[(r+i)%2]
					res, err := e.Query(ctx, queries[table])
					reads.Add(1)
					if err != nil {
						if readErrs.Add(1) <= 3 {
							t.Errorf("reader %d: %s: %v", r, table, err)
						}
						continue
					}
					got := fmt.Sprintf("%d/%v", tsql.AsInt64(res.Rows[0][0]), res.Rows[0][1])
					v, ok := valid[table][got]
					if !ok {
						if wrong.Add(1) <= 3 {
							t.Errorf("reader %d: %s read %s, which is no version's fingerprint", r, table, got)
						}
						continue
					}
					seen.Store(table+" "+v, true)
				}
			})
		}
		for i := range 50 {
			if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "bench"}); err != nil {
				t.Fatalf("cycle %d: swap: %v", i, err)
			}
			if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "bench"}); err != nil {
				t.Fatalf("cycle %d: rollback: %v", i, err)
			}
		}
		close(stop)
		wg.Wait()
		t.Logf("%d reads, %d errors, %d wrong", reads.Load(), readErrs.Load(), wrong.Load())
		if readErrs.Load() != 0 || wrong.Load() != 0 {
			t.Errorf("%d read errors and %d reads of no version among %d reads", readErrs.Load(), wrong.Load(), reads.Load())
		}
		for _, k := range []string{"orders v1", "orders v2", "daily_revenue v1", "daily_revenue v2"} {
			if _, ok := seen.Load(k); !ok {
				t.Errorf("no reader ever saw %s", k)
			}
		}
	})
}

// fingerprintSQL counts a relation's rows and sums the engine's fast row hash: a full checksum
// that is cheap enough to run in a tight loop.
func fingerprintSQL(t *testing.T, e tsql.Engine, relation string) string {
	cols, err := e.Columns(context.Background(), relation)
	if err != nil {
		t.Fatal(err)
	}
	d := e.Dialect()
	return "SELECT count(*), " + d.HashSum(d.RowHash(cols, tsql.HashOptions{})) + " FROM " + d.QuoteRelation(relation)
}

// TestConcurrentSwaps: while one swap of a table is under way a second one is refused with a
// conflict naming the holder; exactly one wins. The same holds for a second Service on the same
// ledger: the Services of an open ledger share their table locks.
func TestConcurrentSwaps(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		warehouse(t, e, 100)
		makeVersion(t, e, "orders", 3, 100, 3)
		l := ledgertest.Open(t)
		inside := make(chan struct{})
		release := make(chan struct{})
		var once sync.Once
		s := views.New("w", e, l, views.WithHooks(views.Hooks{AfterIntent: func(views.Publish) {
			once.Do(func() { close(inside); <-release })
		}}))
		other := views.New("w", e, l) // another service on the same ledger
		if _, err := s.Versions(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		record(t, s, "orders", 2, views.StateValidated, 7)
		record(t, s, "daily_revenue", 2, views.StateValidated, 7)
		record(t, s, "orders", 3, views.StateValidated, 0)

		results := make(chan error, 1)
		go func() {
			_, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
			results <- err
		}()
		<-inside

		var second []error
		_, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v3", Actor: "bob"})
		second = append(second, err)
		_, err = s.Rollback(ctx, views.RollbackRequest{Table: "daily_revenue", Actor: "bob"})
		second = append(second, err)
		_, err = other.Swap(ctx, views.SwapRequest{Table: "daily_revenue", To: "v2", Actor: "bob"})
		second = append(second, err)
		err = s.Retire(ctx, views.RetireRequest{Table: "orders", Version: "v3", Actor: "bob"})
		second = append(second, err)
		close(release)
		if err := <-results; err != nil {
			t.Fatalf("first swap: %v", err)
		}
		for i, err := range second {
			var ce *views.ConflictError
			switch {
			case i == 1 && err != nil && strings.Contains(err.Error(), "nothing to roll back"):
				// rollback found nothing to roll back before it looked at the lock: also safe
			case !errors.As(err, &ce) || !errors.Is(err, fault.ErrConflict):
				t.Errorf("second request %d: %v, want a conflict", i, err)
			case ce.Holder != "ann" || !strings.Contains(err.Error(), "held by ann"):
				t.Errorf("second request %d: conflict does not name ann: %v", i, err)
			}
		}
		if src := source(t, e, "orders"); src != "orders__v2" {
			t.Errorf("orders reads %s, want the winner's v2", src)
		}
		h, _ := s.History(ctx, "orders", 0)
		if len(h) != 1 || h[0].Actor != "ann" {
			t.Errorf("history: %+v", h)
		}
		// Once the winner is done the table is free again.
		if _, err := other.Swap(ctx, views.SwapRequest{Table: "orders", To: "v3", Actor: "bob"}); err != nil {
			t.Errorf("swap after the first finished: %v", err)
		}
	})
}

// TestTableLocksGoWhenUnused: a table's lock is given back when its holder is done, and the
// locks are kept on the ledger, not in the package: a closed ledger that nothing uses any more is
// not kept alive by the locks its Services took (each ledger a process opens used to stay).
func TestTableLocksGoWhenUnused(t *testing.T) {
	e := sqltest.DuckDB(t)
	warehouse(t, e, 100)
	dir := t.TempDir()
	var gone []weak.Pointer[ledger.Ledger]
	for i := range 3 {
		gone = append(gone, swapOnce(t, e, filepath.Join(dir, fmt.Sprintf("state%d.duckdb", i))))
	}
	for range 3 { // one cycle frees them; more make the test indifferent to timing
		runtime.GC()
	}
	for i, p := range gone {
		if p.Value() != nil {
			t.Errorf("ledger %d is still reachable after it was closed and dropped", i)
		}
	}
}

// swapOnce opens the ledger at path, swaps orders to v2 on it, checks the lock is held during
// the swap and given back after it, and closes the ledger: the result points at it weakly.
func swapOnce(t *testing.T, e tsql.Engine, path string) weak.Pointer[ledger.Ledger] {
	t.Helper()
	ctx := context.Background()
	// Not ledgertest: its cleanup would keep the ledger reachable until the test ends.
	l, err := ledger.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	other := views.New("w", e, l)
	var heldDuring bool
	s := views.New("w", e, l, views.WithHooks(views.Hooks{AfterIntent: func(views.Publish) {
		_, heldDuring = other.Held("orders")
	}}))
	validatedRun(t, s)
	if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"}); err != nil {
		t.Fatal(err)
	}
	if !heldDuring {
		t.Error("another Service on the ledger did not see orders held during the swap")
	}
	if h, held := other.Held("orders"); held {
		t.Errorf("orders is still held after the swap: %v", h)
	}
	if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"}); err != nil {
		t.Fatal(err)
	}
	return weak.Make(l)
}
