package backfill

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	tsql "trueup/sql"
)

// buildTable rebuilds every partition of one table that is not done, with at most
// b.Concurrency at once, honouring the throttle and the allowed hours. It returns whether it
// stopped on request and how many partitions failed.
func (r *Runner) buildTable(ctx context.Context, run *Run, t RunTable, b *Backfill, physical string,
	built map[string]string, only []string, opt ExecOptions) (bool, int, error) {
	parts, err := r.Store.Partitions(ctx, run.ID)
	if err != nil {
		return false, 0, err
	}
	typ, err := r.partitionType(ctx, physical, b.Partition)
	if err != nil {
		return false, 0, err
	}
	sql := b.SQL
	if len(built) > 0 {
		sql = tsql.RewriteTables(r.Planner.Engine.Dialect(), sql, built)
	}
	var todo []string
	total, done := 0, 0
	for _, p := range parts {
		if p.Table != t.Table {
			continue
		}
		total++
		switch {
		case p.State == PartDone:
			done++
		case only != nil && !slices.Contains(only, p.Partition):
			continue
		default:
			todo = append(todo, p.Partition)
		}
	}
	if only == nil && opt.Limit > 0 {
		return false, 0, nil // sampling: tables without sampled partitions wait
	}
	jobs := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed, stopped := 0, false
	workers := min(b.Concurrency, max(len(todo), 1))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for part := range jobs {
				rows, err := r.buildPartition(ctx, run, t, b, physical, typ, sql, part)
				mu.Lock()
				if err != nil {
					failed++
				} else {
					done++
				}
				d := done
				mu.Unlock()
				r.report(Progress{RunID: run.ID, Table: t.Table, Partition: part, State: stateOf(err), Rows: rows, Done: d, Total: total})
				if err == nil && b.Throttle > 0 {
					r.sleep(ctx, b.Throttle)
				}
			}
		}()
	}
feed:
	for _, part := range todo {
		if b.Window != nil {
			if wait := b.Window.Until(r.now()); wait > 0 {
				if err := r.sleepOrStop(ctx, wait, opt.Stop); err != nil {
					stopped = true
					break feed
				}
			}
		}
		select {
		case <-opt.Stop:
			stopped = true
			break feed
		case <-ctx.Done():
			stopped = true
			break feed
		case jobs <- part:
		}
	}
	close(jobs)
	wg.Wait()
	if ctx.Err() != nil {
		return false, failed, ctx.Err()
	}
	return stopped, failed, nil
}

func stateOf(err error) string {
	if err != nil {
		return PartFailed
	}
	return PartDone
}

func (r *Runner) report(p Progress) {
	if r.Progress != nil {
		r.Progress(p)
	}
}

// sleepOrStop waits for d, returning early with errStopped when asked to stop.
func (r *Runner) sleepOrStop(ctx context.Context, d time.Duration, stop <-chan struct{}) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-wctx.Done():
		}
	}()
	if err := r.sleep(wctx, d); err != nil {
		return errStopped
	}
	return nil
}

// buildPartition replaces one partition of the new version with the transform's rows and
// checkpoints it only once the replace has committed.
func (r *Runner) buildPartition(ctx context.Context, run *Run, t RunTable, b *Backfill, physical string,
	typ tsql.Type, sql, part string) (int64, error) {
	e := r.Planner.Engine
	start, err := parsePartition(part, b.Grain)
	if err != nil {
		return 0, err
	}
	w := window(b.Partition, typ, start, b.Grain)
	r.checkpoint(ctx, run.ID, t.Table, part, PartRunning, 0, "")
	q, args, err := tsql.Expand(e.Dialect(), sql, w.Params())
	var rows int64
	if err == nil {
		rows, err = e.ReplacePartition(ctx, physical, w, q, args...)
	}
	if err != nil {
		r.checkpoint(context.WithoutCancel(ctx), run.ID, t.Table, part, PartFailed, 0, err.Error())
		return 0, fmt.Errorf("partition %s: %w", part, err)
	}
	return rows, r.checkpoint(ctx, run.ID, t.Table, part, PartDone, rows, "")
}

func (r *Runner) checkpoint(ctx context.Context, runID int64, table, part, state string, rows int64, errText string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Store.setPartition(ctx, runID, table, part, state, rows, errText)
}
