package backfill

import (
	"context"
	"errors"
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
	sql, err := r.Planner.pointAt(ctx, b.SQL, built)
	if err != nil {
		return false, 0, err
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
	pt, err := r.Planner.Engine.Partitioning(ctx, physical, b.Partition)
	if err != nil {
		return false, 0, err
	}
	// The partitions of one coarser partition of the table are one unit: two batches of them
	// at once would each rebuild it from rows the other is replacing.
	units := unitsOf(todo, b.Grain, pt)
	jobs := make(chan []string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed, stopped := 0, false
	var perPartition time.Duration // how long a partition takes, from the batches built so far
	workers := min(b.Concurrency, max(len(todo), 1))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range jobs {
				// The window is checked when this worker is free to build, not when the batch was
				// handed out: a partition queued at 05:59 behind a slow one must not start at 06:30.
				if err := r.ready(ctx, b, opt.Stop); err != nil {
					mu.Lock()
					stopped = true
					mu.Unlock()
					continue // left pending: a resume builds it
				}
				began := time.Now()
				rows, errs := r.buildBatch(ctx, run, t, b, physical, typ, sql, batch)
				mu.Lock()
				perPartition = time.Since(began) / time.Duration(len(batch))
				mu.Unlock()
				for i, part := range batch {
					mu.Lock()
					if errs[i] != nil {
						failed++
					} else {
						done++
					}
					d := done
					mu.Unlock()
					r.report(Progress{RunID: run.ID, Table: t.Table, Partition: part, State: stateOf(errs[i]), Rows: rows[i], Done: d, Total: total})
				}
				if errs[len(batch)-1] == nil && b.Throttle > 0 {
					r.sleepOrStop(ctx, b.Throttle, opt.Stop) // a stop ends the pause; ready sees it next
				}
			}
		}()
	}
feed:
	for len(todo) > 0 {
		var batch []string
		if units != nil {
			batch, units = units[0], units[1:] // units hold todo's partitions in its order
		} else {
			mu.Lock()
			size := batchSize(b, only, perPartition)
			mu.Unlock()
			batch = todo[:min(size, len(todo))]
		}
		todo = todo[len(batch):]
		select {
		case <-opt.Stop:
		case <-ctx.Done():
		case jobs <- batch:
			continue
		}
		mu.Lock()
		stopped = true
		mu.Unlock()
		break feed
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
	for _, fn := range r.progress {
		fn(p)
	}
}

// ready returns once a worker may build: not asked to stop, and inside the allowed hours (it
// waits for them to open). It returns errStopped when asked to stop first.
func (r *Runner) ready(ctx context.Context, b *Backfill, stop <-chan struct{}) error {
	for {
		select {
		case <-stop:
			return errStopped
		case <-ctx.Done():
			return errStopped
		default:
		}
		if b.Window == nil {
			return nil
		}
		wait := b.Window.Until(r.now())
		if wait <= 0 {
			return nil
		}
		if err := r.sleepOrStop(ctx, wait, stop); err != nil {
			return err
		}
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

// Partitions that build quickly are written several at a time, with one commit and one ledger
// checkpoint before and after: one commit per partition cost more than a small partition's rows
// (19 ms a partition over a bare CREATE TABLE AS on a 365-day rebuild). Each partition is still
// computed by the transform for its own window and written atomically. A batch is sized to take
// about batchTarget, so a cancel still stops within that long; slow partitions go one by one.
const (
	batchTarget = 500 * time.Millisecond
	maxBatch    = 32
)

// batchSize is the partitions a run writes at once, given how long one took so far (0: none
// built yet): one at a time until that is known, when the run is throttled or kept to hours,
// whose pace is the point, and when it builds chosen partitions (a sample).
func batchSize(b *Backfill, only []string, perPartition time.Duration) int {
	if b.Throttle > 0 || b.Window != nil || only != nil || perPartition <= 0 {
		return 1
	}
	return int(min(max(batchTarget/perPartition, 1), maxBatch))
}

// buildBatch replaces a batch of partitions in one transaction and checkpoints them together. If
// the batch fails, its partitions are built one by one, so one bad partition fails alone (a
// unit of one coarse partition too: one after another, each rebuilds the partition anew).
func (r *Runner) buildBatch(ctx context.Context, run *Run, t RunTable, b *Backfill, physical string,
	typ tsql.Type, sql string, parts []string) ([]int64, []error) {
	rows, errs := make([]int64, len(parts)), make([]error, len(parts))
	alone := func() ([]int64, []error) {
		for i, part := range parts {
			rows[i], errs[i] = r.buildPartition(ctx, run, t, b, physical, typ, sql, part)
		}
		return rows, errs
	}
	if len(parts) == 1 {
		return alone()
	}
	e := r.Planner.Engine
	writes := make([]tsql.PartitionWrite, len(parts))
	for i, part := range parts {
		start, err := ParsePartition(part, b.Grain)
		if err != nil {
			return alone()
		}
		w := window(b.Partition, typ, start, b.Grain)
		q, args, err := tsql.Expand(e.Dialect(), sql, w.Params())
		if err != nil {
			return alone()
		}
		writes[i] = tsql.PartitionWrite{Window: w, Query: q, Args: args}
	}
	if err := r.checkpoints(ctx, run.ID, t.Table, parts, PartRunning, nil); err != nil {
		return alone()
	}
	built, err := r.replace(ctx, run.ID, t.Table, physical, parts, writes)
	if err != nil && ctx.Err() != nil { // stopped: nothing of the batch is kept where it can be
		r.checkpoints(context.WithoutCancel(ctx), run.ID, t.Table, parts, PartFailed, nil)
		for i := range parts {
			errs[i] = fmt.Errorf("partition %s: %w", parts[i], err)
		}
		return rows, errs
	}
	if err != nil {
		return alone()
	}
	err = r.recordWritten(ctx, run, t, b, physical, typ, windowsOf(writes))
	if err == nil {
		err = r.checkpoints(ctx, run.ID, t.Table, parts, PartDone, built)
	}
	for i := range parts {
		rows[i], errs[i] = built[i], err
	}
	return rows, errs
}

// buildPartition replaces one partition of the new version with the transform's rows and
// checkpoints it only once the replace has committed.
func (r *Runner) buildPartition(ctx context.Context, run *Run, t RunTable, b *Backfill, physical string,
	typ tsql.Type, sql, part string) (int64, error) {
	e := r.Planner.Engine
	start, err := ParsePartition(part, b.Grain)
	if err != nil {
		return 0, err
	}
	w := window(b.Partition, typ, start, b.Grain)
	r.checkpoint(ctx, run.ID, t.Table, part, PartRunning, 0, "")
	q, args, err := tsql.Expand(e.Dialect(), sql, w.Params())
	var rows int64
	if err == nil {
		var got []int64
		if got, err = r.replace(ctx, run.ID, t.Table, physical, []string{part}, []tsql.PartitionWrite{{Window: w, Query: q, Args: args}}); err == nil {
			rows = got[0]
		}
	}
	if err == nil {
		err = r.recordWritten(ctx, run, t, b, physical, typ, []tsql.Window{w})
	}
	if err != nil {
		r.checkpoint(context.WithoutCancel(ctx), run.ID, t.Table, part, PartFailed, 0, err.Error())
		return 0, fmt.Errorf("partition %s: %w", part, err)
	}
	return rows, r.checkpoint(ctx, run.ID, t.Table, part, PartDone, rows, "")
}

// replace writes the partitions parts (writes, in order) into physical. On a sharded engine
// (tsql.Sharded: a cluster) each shard's write is checkpointed of its own once it is done, and
// a shard a killed or failed attempt wrote already is not written again: a resume picks up
// shard by shard. The rows are each partition's over all shards.
func (r *Runner) replace(ctx context.Context, runID int64, table, physical string, parts []string, writes []tsql.PartitionWrite) ([]int64, error) {
	e := r.Planner.Engine
	sh, ok := e.(tsql.Sharded)
	if !ok && len(writes) == 1 {
		n, err := e.ReplacePartition(ctx, physical, writes[0].Window, writes[0].Query, writes[0].Args...)
		return []int64{n}, err
	}
	if !ok {
		return e.ReplacePartitions(ctx, physical, writes)
	}
	shards, err := sh.Shards(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	done, err := r.Store.shardsDone(ctx, runID, table, parts)
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	rows := make([]int64, len(parts))
	errs := make([]error, len(shards))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for si, shard := range shards {
		var todo []string
		var ws []tsql.PartitionWrite
		for i, part := range parts {
			if n, ok := done[shard][part]; ok {
				mu.Lock()
				rows[i] += n
				mu.Unlock()
				continue
			}
			todo, ws = append(todo, part), append(ws, writes[i])
		}
		if len(ws) == 0 {
			continue
		}
		wg.Go(func() {
			got, err := sh.ReplacePartitionsOnShards(ctx, physical, ws, []int{shard})
			if err == nil {
				r.mu.Lock()
				err = r.Store.setShardDone(ctx, runID, table, shard, todo, got)
				r.mu.Unlock()
			}
			if err != nil {
				errs[si] = err
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for j, part := range todo {
				rows[slices.Index(parts, part)] += got[j]
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rows, nil
}

func (r *Runner) checkpoints(ctx context.Context, runID int64, table string, parts []string, state string, rows []int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Store.setPartitions(ctx, runID, table, parts, state, rows)
}

func (r *Runner) checkpoint(ctx context.Context, runID int64, table, part, state string, rows int64, errText string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Store.setPartition(ctx, runID, table, part, state, rows, errText)
}

// recordWritten fingerprints the partitions of ws just written into physical and records them
// (views.RecordWritten) before their checkpoints say done: a done partition's fingerprint is of
// the rows its last attempt wrote. A window left empty is recorded empty. The fingerprints are
// read back from the version in one grouped scan of just those partitions, right after the
// write, while the run is the version's only writer (neither engine returns aggregates from an
// INSERT; on ClickHouse the partitions read are the parts just attached from staging).
func (r *Runner) recordWritten(ctx context.Context, run *Run, t RunTable, b *Backfill, physical string, typ tsql.Type, ws []tsql.Window) error {
	got, err := tsql.MeasurePartitions(ctx, r.Planner.Engine, physical, b.Partition, b.Grain, ws)
	if err != nil {
		return err
	}
	for _, w := range ws {
		if _, ok := got[w.Start]; !ok {
			got[w.Start] = tsql.PartMark{Sum: "0"}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Versions.RecordWritten(ctx, run.Target, t.Table, t.Version, b.Partition, b.Grain, typ, got)
}

func windowsOf(writes []tsql.PartitionWrite) []tsql.Window {
	out := make([]tsql.Window, len(writes))
	for i, w := range writes {
		out[i] = w.Window
	}
	return out
}
