package main

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"trueup/ledger"
	tsql "trueup/sql"
	"trueup/views"
)

// viewsReaders is how many readers query the live view while swaps run.
const viewsReaders = 8

// viewsCycles is how many swap + rollback pairs each measurement runs: 200 latencies, so that
// the p99 is not simply the slowest one.
const viewsCycles = 100

// viewsBurst is how many swap + rollback pairs run back to back while readers read.
const viewsBurst = 10

// benchViews measures trueup's swap (intent, one atomic repoint of two views, outcome) with and
// without 8 concurrent readers, against the bare engine's repoint, and how much the swaps slow
// the readers down, on each engine.
func benchViews(ctx context.Context, b *env) error {
	rows := min(max(b.rows/100, 10_000), 200_000)
	duck, err := b.duckdb(ctx, "views")
	if err != nil {
		return err
	}
	defer duck.Close()
	engines := []tsql.Engine{duck}
	if b.clickhouse != "" {
		ch, err := tsql.Open(ctx, b.clickhouse)
		if err != nil {
			return err
		}
		defer ch.Close()
		engines = append(engines, ch)
	}
	for _, e := range engines {
		if err := benchViewsOn(ctx, b, e, rows); err != nil {
			return fmt.Errorf("%s: %w", e.Info().Kind, err)
		}
	}
	return nil
}

var viewsBenchCols = []tsql.Column{
	{Name: "order_id", Kind: tsql.TypeInt},
	{Name: "order_date", Kind: tsql.TypeDate},
	{Name: "region", Kind: tsql.TypeString},
	{Name: "amount", Kind: tsql.TypeInt},
}

// viewsTables are the logical tables of the publish: an upstream and one downstream table.
var viewsTables = []string{"bench_orders", "bench_daily"}

func benchViewsOn(ctx context.Context, b *env, e tsql.Engine, rows int) error {
	kind := e.Info().Kind
	for _, t := range viewsTables {
		for _, n := range []int{1, 2} {
			e.DropTable(ctx, views.Physical(t, n))
			size := rows
			if t != viewsTables[0] {
				size = rows / 50
			}
			if err := loadBenchVersion(ctx, e, views.Physical(t, n), size, n); err != nil {
				return err
			}
		}
		if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: t, Table: views.Physical(t, 1)}}); err != nil {
			return err
		}
	}
	defer func() {
		for _, t := range viewsTables {
			e.Exec(context.WithoutCancel(ctx), e.Dialect().Drop(t, true))
			for _, n := range []int{1, 2} {
				e.DropTable(context.WithoutCancel(ctx), views.Physical(t, n))
			}
		}
	}()
	l, err := ledger.Open(ctx, filepath.Join(b.dir, "views-"+kind+".duckdb"))
	if err != nil {
		return err
	}
	defer l.Close()
	s := views.New("bench", e, l)
	if _, err := views.Recover(ctx, s); err != nil {
		return err
	}
	for _, t := range viewsTables {
		v, err := s.Store().Get(ctx, "bench", t, 2)
		if err != nil {
			return err
		}
		v.State, v.RunID, v.Backfill = views.StateValidated, 1, "bench"
		if err := s.Store().Put(ctx, v); err != nil {
			return err
		}
	}

	read := "SELECT region, count(*), sum(amount) FROM " + e.Dialect().QuoteRelation(viewsTables[0]) + " GROUP BY region ORDER BY region"
	valid := map[string]bool{}
	for _, n := range []int{1, 2} {
		res, err := e.Query(ctx, "SELECT region, count(*), sum(amount) FROM "+views.Physical(viewsTables[0], n)+" GROUP BY region ORDER BY region")
		if err != nil {
			return err
		}
		valid[fmt.Sprint(res.Rows)] = true
	}

	swapCycle := func(lat *[]time.Duration, n int) error {
		for range n {
			start := time.Now()
			if _, err := s.Swap(ctx, views.SwapRequest{Table: viewsTables[0], To: "v2", Actor: "bench"}); err != nil {
				return err
			}
			mid := time.Now()
			if _, err := s.Rollback(ctx, views.RollbackRequest{Table: viewsTables[0], Actor: "bench"}); err != nil {
				return err
			}
			*lat = append(*lat, mid.Sub(start), time.Since(mid))
		}
		return nil
	}
	// notedRun times n cycles of the engine's part of a swap where the engine keeps a note with
	// each view (DuckDB): the check that the views read what the ledger says, the repoint and the
	// notes, in one transaction — each preceded by plan and followed by record when not nil.
	// Alone, the floor of a swap whose record a crash cannot separate from the repoint, with no
	// second commit.
	nr, noted := e.(tsql.NotedRepointer)
	notedRun := func(lat *[]time.Duration, n int, plan, record func(v int) error) error {
		note := strings.Repeat("n", 1200) // about the size of a swap's note
		for range n {
			for _, v := range []int{2, 1} {
				points := make([]tsql.NotedPoint, len(viewsTables))
				for i, t := range viewsTables {
					points[i] = tsql.NotedPoint{ViewPoint: tsql.ViewPoint{View: t, Table: views.Physical(t, v)}, From: views.Physical(t, 3-v), Note: note}
				}
				start := time.Now()
				if plan != nil {
					if err := plan(v); err != nil {
						return err
					}
				}
				if err := nr.RepointNoted(ctx, points); err != nil {
					return err
				}
				if record != nil {
					if err := record(v); err != nil {
						return err
					}
				}
				*lat = append(*lat, time.Since(start))
			}
		}
		return nil
	}
	// writeRecord, run after a repoint with notes (notedRun), is the least a swap must write to the
	// ledger, having read nothing before: one transaction with the swap's row, the four versions'
	// states in one UPDATE and the audit entry. It runs on a ledger of its own (a scratch copy
	// of the record), so that trueup's is not disturbed. The floor of a swap whose ledger keeps the
	// record apart from the warehouse: it plans nothing and checks nothing trueup does not check
	// in the repoint already.
	var floor *ledger.Ledger
	if noted {
		if floor, err = ledger.Open(ctx, filepath.Join(b.dir, "views-floor-"+kind+".duckdb")); err != nil {
			return err
		}
		defer floor.Close()
		for _, t := range viewsTables {
			for _, n := range []int{1, 2} {
				if err := (views.Store{L: floor}).Put(ctx, views.Version{Target: "bench", Table: t, N: n, State: views.StateValidated}); err != nil {
					return err
				}
			}
		}
	}
	writeRecord := func(v int) error {
		return floor.Tx(ctx, func(tx *dbsql.Tx) error {
			now := floor.Now()
			changes := fmt.Sprintf(`[{"table":%q,"from":%d,"to":%d},{"table":%q,"from":%d,"to":%d}]`, viewsTables[0], 3-v, v, viewsTables[1], 3-v, v)
			if _, err := tx.ExecContext(ctx, `INSERT INTO swaps (target, table_name, kind, state, actor, changes, started_at, finished_at)
				VALUES (?, ?, 'swap', 'done', 'bench', ?, ?, ?)`, "bench", viewsTables[0], changes, now, now); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE versions SET state = CASE WHEN version = ? THEN 'live' ELSE 'previous' END, updated_at = ?
				WHERE target = ? AND table_name IN (?, ?) AND version IN (1, 2)`, v, now, "bench", viewsTables[0], viewsTables[1]); err != nil {
				return err
			}
			_, err := floor.AuditTx(ctx, tx, ledger.Entry{Actor: "bench", Action: "view.swap", Target: viewsTables[0],
				Params: map[string]any{"changes": changes}, Outcome: ledger.OutcomeOK, Detail: "floor"})
			return err
		})
	}
	// readPlan, run before the repoint with notes, is what a swap reads from the ledger to plan
	// and gate it, as statements by hand on the same scratch ledger: the versions of the target,
	// the lock rows a crash may have left, and the partition marks of the versions it moves (a
	// rollback also reads the swap it takes back: one statement more for trueup than here).
	// With writeRecord after it, the floor of a swap that plans from the ledger and records there.
	readPlan := func(v int) error {
		drain := func(q string, args ...any) error {
			rows, err := floor.DB().QueryContext(ctx, q, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
			}
			return rows.Err()
		}
		if err := drain(`SELECT target, table_name, version, state, built_by, created_at, updated_at, backfill, run_id,
			row_count, checksum, diff_id, CAST(coalesce(validation, 'null') AS VARCHAR), override_by, override_reason,
			coalesce(seen_live, false) FROM versions WHERE target = ?`, "bench"); err != nil {
			return err
		}
		if err := drain(`SELECT table_name, holder, kind, swap_id, since FROM view_locks WHERE target = ?`, "bench"); err != nil {
			return err
		}
		return drain(`SELECT table_name, version, mark, body, taken_at FROM version_marks
			WHERE target = ? AND ((table_name = ? AND version IN (?, ?)) OR (table_name = ? AND version IN (?, ?)))`,
			"bench", viewsTables[0], v, 3-v, viewsTables[1], v, 3-v)
	}
	bareCycle := func(lat *[]time.Duration, n int) error {
		for range n {
			for _, v := range []int{2, 1} {
				points := make([]tsql.ViewPoint, len(viewsTables))
				for i, t := range viewsTables {
					points[i] = tsql.ViewPoint{View: t, Table: views.Physical(t, v)}
				}
				start := time.Now()
				if err := e.RepointViews(ctx, points); err != nil {
					return err
				}
				*lat = append(*lat, time.Since(start))
			}
		}
		return nil
	}
	var bare, alone, loaded, bareLoaded []time.Duration
	if err := bareCycle(&bare, viewsCycles); err != nil {
		return err
	}
	if err := swapCycle(&alone, viewsCycles); err != nil {
		return err
	}

	// Readers run throughout; swaps run in bursts of viewsBurst cycles separated by quiet
	// spells as long as the burst, so that reads with and without swaps are measured under the
	// same load from everything else on the machine. A read is "during swaps" when it
	// overlapped a burst.
	type reading struct{ start, end time.Time }
	var mu sync.Mutex
	var reads []reading
	var errs, wrong atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range viewsReaders {
		wg.Go(func() {
			var mine []reading
			defer func() { mu.Lock(); reads = append(reads, mine...); mu.Unlock() }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				res, err := e.Query(ctx, read)
				mine = append(mine, reading{start, time.Now()})
				switch {
				case err != nil:
					errs.Add(1)
				case !valid[fmt.Sprint(res.Rows)]:
					wrong.Add(1)
				}
			}
		})
	}
	time.Sleep(time.Second) // let the readers settle
	// Each round: a burst of trueup's swaps, a quiet spell as long, then the references — the bare
	// repoint, and on DuckDB the repoint with notes and that with the record — for as many cycles,
	// so that every figure has as many samples under the same readers. Reads that overlap the
	// references count neither as quiet nor as during swaps.
	first := time.Now()
	var bursts, others [][2]time.Time
	var notedLoaded, recordLoaded, plannedLoaded []time.Duration
	var err2 error
	for done := 0; err2 == nil && done < viewsCycles; done += viewsBurst {
		begin := time.Now()
		err2 = swapCycle(&loaded, viewsBurst)
		bursts = append(bursts, [2]time.Time{begin, time.Now()})
		time.Sleep(time.Since(begin))
		begin = time.Now()
		if err2 == nil {
			err2 = bareCycle(&bareLoaded, viewsBurst)
		}
		if err2 == nil && noted {
			err2 = notedRun(&notedLoaded, viewsBurst, nil, nil)
		}
		if err2 == nil && noted {
			err2 = notedRun(&recordLoaded, viewsBurst, nil, writeRecord)
		}
		if err2 == nil && noted {
			err2 = notedRun(&plannedLoaded, viewsBurst, readPlan, writeRecord)
		}
		others = append(others, [2]time.Time{begin, time.Now()})
	}
	last := time.Now()
	close(stop)
	wg.Wait()
	if err2 != nil {
		return err2
	}
	overlaps := func(r reading, spans [][2]time.Time) bool {
		for _, b := range spans {
			if r.start.Before(b[1]) && r.end.After(b[0]) {
				return true
			}
		}
		return false
	}
	var quiet, busy []time.Duration
	for _, r := range reads {
		if r.start.Before(first) || r.end.After(last) || overlaps(r, others) {
			continue
		}
		if overlaps(r, bursts) {
			busy = append(busy, r.end.Sub(r.start))
		} else {
			quiet = append(quiet, r.end.Sub(r.start))
		}
	}

	fmt.Printf("%-12s %d rows in %s, publish of %d views; %d swaps+rollbacks alone, %d under %d readers in bursts of %d\n",
		kind, rows, viewsTables[0], len(viewsTables), 2*viewsCycles, 2*viewsCycles, viewsReaders, 2*viewsBurst)
	line := func(name string, ds []time.Duration, extra string) {
		fmt.Printf("  %-34s median %7.1f ms   p99 %7.1f ms   max %7.1f ms   %s\n", name, ms(median(ds)), ms(p99(ds)), ms(slices.Max(ds)), extra)
	}
	line("bare RepointViews, no readers", bare, "")
	line("trueup swap, no readers", alone, "(target p99 < 100 ms on duckdb)")
	line(fmt.Sprintf("bare RepointViews, %d readers", viewsReaders), bareLoaded, "")
	line(fmt.Sprintf("trueup swap, %d readers", viewsReaders), loaded, "(target p99 < 100 ms on duckdb)")
	ratio := func(a, b []time.Duration) string {
		return fmt.Sprintf("median %5.1fx   p99 %5.1fx", float64(median(a))/float64(median(b)), float64(p99(a))/float64(p99(b)))
	}
	fmt.Printf("  %-34s %s   (target median ≤ 3x under readers)\n", "trueup swap / bare, no readers", ratio(alone, bare))
	fmt.Printf("  %-34s %s   (target median ≤ 3x)\n", fmt.Sprintf("trueup swap / bare, %d readers", viewsReaders), ratio(loaded, bareLoaded))
	if noted {
		line(fmt.Sprintf("repoint with notes alone, %d readers", viewsReaders), notedLoaded, "(the engine's part of a swap, no ledger)")
		fmt.Printf("  %-34s %s   (the floor of a swap whose record commits with the repoint)\n", "  its ratio to bare", ratio(notedLoaded, bareLoaded))
		line(fmt.Sprintf("repoint with notes + record, %d readers", viewsReaders), recordLoaded, "(the same, then the record's one ledger transaction, nothing read)")
		fmt.Printf("  %-34s %s   (the floor of a swap whose record is kept in the ledger)\n", "  its ratio to bare", ratio(recordLoaded, bareLoaded))
		line(fmt.Sprintf("the same, planned from the ledger, %d readers", viewsReaders), plannedLoaded, "(its plan's reads first: versions, lock rows, marks)")
		fmt.Printf("  %-34s %s   (the floor of a swap that plans from the ledger and records there)\n", "  its ratio to bare", ratio(plannedLoaded, bareLoaded))
		fmt.Printf("  %-34s %s\n", "  trueup swap to it", ratio(loaded, plannedLoaded))
	}
	line("reader, between swap bursts", quiet, fmt.Sprintf("%d reads", len(quiet)))
	line("reader, during swap bursts", busy, fmt.Sprintf("%d reads; %d errors and %d wrong reads in all", len(busy), errs.Load(), wrong.Load()))
	fmt.Printf("  %-34s %.2fx (target ≤ 1.2x)\n", "reader slowdown (median)", float64(median(busy))/float64(median(quiet)))
	if errs.Load()+wrong.Load() > 0 {
		return fmt.Errorf("%d read errors and %d wrong reads", errs.Load(), wrong.Load())
	}
	return nil
}

// loadBenchVersion creates version n of a table with rows rows; version 2 differs in amounts.
func loadBenchVersion(ctx context.Context, e tsql.Engine, table string, rows, n int) error {
	if err := e.CreateTable(ctx, table, viewsBenchCols, "order_date", []string{"order_id"}); err != nil {
		return err
	}
	regions := []string{"EMEA", "NA", "APAC", "LATAM"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const chunk = 50_000
	for lo := 0; lo < rows; lo += chunk {
		batch := make([][]any, 0, min(chunk, rows-lo))
		for i := lo; i < min(rows, lo+chunk); i++ {
			amount := int64(i*7919%100_000) + int64(n-1)*int64(i%20/19)
			batch = append(batch, []any{int64(i), start.AddDate(0, 0, i%30), regions[i%4], amount})
		}
		names := []string{"order_id", "order_date", "region", "amount"}
		if err := e.Insert(ctx, table, names, batch); err != nil {
			return err
		}
	}
	return nil
}

func median(ds []time.Duration) time.Duration { return quantile(ds, 0.5) }
func p99(ds []time.Duration) time.Duration    { return quantile(ds, 0.99) }

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	// nearest rank: the smallest value with at least q of the values at or below it
	return s[max(0, int(math.Ceil(q*float64(len(s))))-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
