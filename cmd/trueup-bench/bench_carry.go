package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"trueup/ledger"
	tsql "trueup/sql"
	"trueup/views"
)

// benchCarry is the swap of a table the pipeline kept writing while its new version was built:
// the live version gained one new partition and one changed one since the build. The swap
// measures the live version (one per-partition scan), carries the two partitions and repoints;
// the reference is one bare per-partition count and hash-sum scan of the live table, same run.
// Readers query the view throughout; their median latency during the swap is compared with
// theirs before it.
func benchCarry(ctx context.Context, b *env) error {
	duck, err := b.duckdbOrders(ctx, "carry", "orders_src", b.rows)
	if err != nil {
		return err
	}
	defer duck.Close()
	// A table the pipeline appended day by day: its rows are in date order, as a real one's.
	if err := duck.Exec(ctx, "CREATE TABLE orders__v1 AS SELECT * FROM orders_src ORDER BY order_date, order_id"); err != nil {
		return err
	}
	if err := duck.Exec(ctx, "DROP TABLE orders_src"); err != nil {
		return err
	}
	if err := benchCarryOn(ctx, b, duck, b.rows); err != nil {
		return fmt.Errorf("duckdb: %w", err)
	}
	if b.clickhouse != "" {
		ch, err := tsql.Open(ctx, b.clickhouse)
		if err != nil {
			return err
		}
		defer ch.Close()
		rows := b.rows // loaded through the driver, 50,000 rows a batch
		for _, t := range []string{"orders", "orders__v1", "orders__v2"} {
			ch.Exec(ctx, ch.Dialect().Drop(t, t == "orders"))
		}
		if err := loadBenchVersion(ctx, ch, "orders__v1", rows, 1); err != nil {
			return err
		}
		if err := benchCarryOn(ctx, b, ch, rows); err != nil {
			return fmt.Errorf("clickhouse: %w", err)
		}
	}
	return nil
}

func benchCarryOn(ctx context.Context, b *env, e tsql.Engine, rows int) error {
	kind := e.Info().Kind
	d := e.Dialect()
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v1"}}); err != nil {
		return err
	}
	l, err := ledger.Open(ctx, filepath.Join(b.dir, "carry-"+kind+".duckdb"))
	if err != nil {
		return err
	}
	defer l.Close()
	s := views.New("bench", e, l)
	if _, err := s.Versions(ctx, "orders"); err != nil {
		return err
	}
	// Build v2 as a run does: the basis, live's partitions outside the scope, the scope rebuilt.
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	scope := tsql.Window{Column: "order_date", Type: tsql.TypeDate, Start: day.AddDate(0, 0, 10), End: day.AddDate(0, 0, 11)}
	if err := e.CreateTableLike(ctx, "orders__v2", "orders__v1"); err != nil {
		return err
	}
	if err := s.Store().RecordBasis(ctx, e, "bench", "orders", 2, "orders__v1", "", "order_date", tsql.TypeDate, "day", []time.Time{scope.Start}); err != nil {
		return err
	}
	if err := e.CopyPartitions(ctx, "orders__v2", "orders__v1", "order_date", []tsql.Window{scope}); err != nil {
		return err
	}
	if _, err := e.ReplacePartition(ctx, "orders__v2", scope, "SELECT * FROM orders__v1"); err != nil {
		return err
	}
	rows2, sum, err := views.Fingerprint(ctx, e, "orders__v2")
	if err != nil {
		return err
	}
	if err := s.Store().Put(ctx, views.Version{Target: "bench", Table: "orders", N: 2, State: views.StateValidated, RunID: 1,
		Backfill: "bench", Rows: rows2, Checksum: sum, CreatedAt: time.Now()}); err != nil {
		return err
	}
	// What the pipeline wrote meanwhile: a new day and late rows in an old one.
	cols, err := e.Columns(ctx, "orders__v1")
	if err != nil {
		return err
	}
	if err := copyDay(ctx, e, cols, day.AddDate(0, 0, 3), day.AddDate(0, 0, 400), 0); err != nil { // the new day
		return err
	}
	if err := copyDay(ctx, e, cols, day.AddDate(0, 0, 5), day.AddDate(0, 0, 20), 100); err != nil { // late rows
		return err
	}

	bare := "SELECT order_date, count(*), " + d.HashSum(d.RowHash(cols, tsql.HashOptions{})) + " FROM orders__v1 GROUP BY order_date"
	tb, err := timed(func() error { _, err := e.Query(ctx, bare); return err })
	if err != nil {
		return err
	}

	var p views.Publish
	to, err := timed(func() error {
		var err error
		p, err = s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "bench"})
		return err
	})
	if err != nil {
		return err
	}
	report(fmt.Sprintf("swap carrying 2 partitions, %d rows, %s", rows, kind), to, tb, "≤ 1.5x")
	fmt.Printf("  carried: %s\n", p.CarriedSummary())

	// Readers query the view before and during a swap that carries the same again: rolled back,
	// the live version gains the two partitions once more.
	if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "bench"}); err != nil {
		return err
	}
	if err := copyDay(ctx, e, cols, day.AddDate(0, 0, 3), day.AddDate(0, 0, 401), 0); err != nil {
		return err
	}
	if err := copyDay(ctx, e, cols, day.AddDate(0, 0, 6), day.AddDate(0, 0, 21), 100); err != nil {
		return err
	}
	read := "SELECT count(*), sum(amount) FROM orders WHERE order_date = " + dateLit(d, day.AddDate(0, 0, 200))
	var mu sync.Mutex
	var phase atomic.Int32 // 0 before, 1 during a bare scan, 2 during the swap, 3 during a yielding bare scan
	lat := make([][]time.Duration, 4)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				if _, err := e.Query(ctx, read); err != nil {
					continue
				}
				dt := time.Since(t0)
				mu.Lock()
				lat[phase.Load()] = append(lat[phase.Load()], dt)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(max(to, 200*time.Millisecond)) // a baseline as long as the swap took
	// Beside: readers beside the one scan a swap must make, written by hand at full threads (the
	// swap's own scan yields to them: see tsql.Yielding).
	phase.Store(1)
	for t0 := time.Now(); time.Since(t0) < to; {
		if _, err := e.Query(ctx, bare); err != nil {
			return err
		}
	}
	// The floor: the same scan by hand, yielding to the readers as the swap's does.
	phase.Store(3)
	for t0 := time.Now(); time.Since(t0) < to; {
		if _, err := e.Query(tsql.Yielding(ctx), bare); err != nil {
			return err
		}
	}
	phase.Store(2)
	_, err = s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "bench"})
	phase.Store(0)
	close(stop)
	wg.Wait()
	if err != nil {
		return err
	}
	if len(lat[0]) > 0 && len(lat[1]) > 0 && len(lat[2]) > 0 {
		mb, ms1, mi := median(lat[0]), median(lat[1]), median(lat[2])
		fmt.Printf("%-40s during %9.3fms   before %9.3fms   ratio %5.2fx   (target ≤ 1.2x; %d and %d reads)\n",
			"  reader median, "+kind, ms(mi), ms(mb), float64(mi)/float64(mb), len(lat[2]), len(lat[0]))
		fmt.Printf("%-40s during %9.3fms   before %9.3fms   ratio %5.2fx   (the swap's scan by hand, not yielding)\n",
			"  reader median beside a bare scan", ms(ms1), ms(mb), float64(ms1)/float64(mb))
		if len(lat[3]) > 0 {
			my := median(lat[3])
			fmt.Printf("%-40s during %9.3fms   before %9.3fms   ratio %5.2fx   (the floor: the swap's scan by hand, yielding as the swap's)\n",
				"  reader median beside a yielding scan", ms(my), ms(mb), float64(my)/float64(mb))
		}
	}
	return nil
}

// copyDay appends the rows of day from to orders__v1 as rows of day to (all of them, or the first
// n), with new order ids: the pipeline's writes.
func copyDay(ctx context.Context, e tsql.Engine, cols []tsql.Column, from, to time.Time, n int) error {
	d := e.Dialect()
	list := ""
	for i, c := range cols {
		if i > 0 {
			list += ", "
		}
		switch c.Name {
		case "order_id":
			list += d.Quote(c.Name) + " + 1000000000"
		case "order_date":
			list += dateLit(d, to)
		default:
			list += d.Quote(c.Name)
		}
	}
	q := "INSERT INTO orders__v1 SELECT " + list + " FROM orders__v1 WHERE order_date = " + dateLit(d, from)
	if n > 0 {
		q += fmt.Sprintf(" ORDER BY order_id LIMIT %d", n)
	}
	return e.Exec(ctx, q)
}

func dateLit(d tsql.Dialect, t time.Time) string {
	s, _ := d.Literal(tsql.Date(t))
	return s
}

// benchOpenPerRequest is the cost of the road not taken for a DuckDB warehouse written while
// trueup serves it: opening the file for each request (so another process could write it in
// between) against asking the engine trueup holds open. The request is a page's typical read,
// a count of one partition of a table of b.rows/10 rows.
func benchOpenPerRequest(ctx context.Context, b *env) error {
	path := filepath.Join(b.dir, "open.duckdb")
	e, err := tsql.Create(ctx, "duckdb:"+path)
	if err != nil {
		return err
	}
	if err := makeOrders(ctx, e, "orders", max(b.rows/10, 100_000), 365); err != nil {
		return err
	}
	const read, n = "SELECT count(*) FROM orders WHERE order_date = DATE '2026-03-01'", 20
	held, err := timed(func() error {
		for range n {
			if _, err := e.Query(ctx, read); err != nil {
				return err
			}
		}
		return nil
	})
	e.Close()
	if err != nil {
		return err
	}
	opened, err := timed(func() error {
		for range n {
			o, err := tsql.Open(ctx, "duckdb:"+path)
			if err != nil {
				return err
			}
			_, err = o.Query(ctx, read)
			o.Close()
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("%-40s opened %9.3fms   held %9.3fms   ratio %5.2fx   (per request; the file opened per request vs held open)\n",
		"duckdb open per request", ms(opened/n), ms(held/n), float64(opened)/float64(held))
	return nil
}
