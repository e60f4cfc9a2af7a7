package backfill

import (
	"context"
	"time"

	tsql "trueup/sql"
)

// A backfill file with a schedule: header is also the pipeline that keeps its table current:
// `trueup serve` runs its transform at each slot, as `trueup run NAME` would, for the
// schedule_partitions newest partitions (default 1: the one holding the slot; 2 also recomputes
// the one before, for late rows). Each scheduled run is a pipeline run like any other
// (checkpointed, in the audit log, continued after a kill); the newest one recorded as by
// ScheduleActor is the backfill's last slot, so slots missed while trueup was down run once
// when it is back, as the newest of them (its partitions), and a schedule never run before
// starts at its next slot.

// ScheduleActor is who a scheduled pipeline run is recorded as.
const ScheduleActor = "schedule"

// Clock is the scheduler's time source (monitor's clocks are one).
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// ScheduledRun is what one slot of a scheduled backfill did: its run, or why it failed.
type ScheduledRun struct {
	Backfill string
	Slot     time.Time
	Run      *WindowRun
	Err      error
}

// RunSchedules runs the scheduled backfills of the runner's target at their slots until ctx
// ends, one at a time; each outcome is handed to onRun (nil: dropped). It returns at once when
// no backfill of the target has a schedule.
func (r *Runner) RunSchedules(ctx context.Context, clock Clock, onRun func(ScheduledRun)) error {
	var scheduled []*Backfill
	for _, b := range r.Planner.Set.All() {
		if b.Schedule != nil && r.ownTarget(b) {
			scheduled = append(scheduled, b)
		}
	}
	if len(scheduled) == 0 {
		return nil
	}
	next := make(map[string]time.Time, len(scheduled))
	for _, b := range scheduled {
		last := clock.Now().UTC()
		p, ok, err := r.Store.newestPipeline(ctx, b.Name, r.Planner.Target, ScheduleActor)
		if err != nil {
			return err
		}
		if ok {
			last = p.Started
		}
		next[b.Name] = b.Schedule.Next(last)
	}
	for {
		now := clock.Now().UTC()
		var due *Backfill
		for _, b := range scheduled {
			if due == nil || next[b.Name].Before(next[due.Name]) {
				due = b
			}
		}
		if slot := next[due.Name]; slot.After(now) {
			select {
			case <-ctx.Done():
				return nil
			case <-clock.After(slot.Sub(now)):
				continue
			}
		}
		// Slots missed while trueup was down run once, as the newest of them.
		slot := next[due.Name]
		for n := due.Schedule.Next(slot); !n.After(now); n = due.Schedule.Next(n) {
			slot = n
		}
		wr, err := r.RunWindows(ctx, due.Name, scheduledWindows(due, slot), ScheduleActor)
		if ctx.Err() != nil {
			return nil
		}
		// A slot missed more than once runs once: the next is after now.
		after := clock.Now().UTC()
		if slot.After(after) {
			after = slot
		}
		next[due.Name] = due.Schedule.Next(after)
		if onRun != nil {
			onRun(ScheduledRun{Backfill: due.Name, Slot: slot, Run: wr, Err: err})
		}
	}
}

// ownTarget reports whether b runs on the runner's target.
func (r *Runner) ownTarget(b *Backfill) bool {
	return b.Target == "" || b.Target == r.Planner.Target
}

// scheduledWindows is the --window of b's run at slot: its SchedulePartitions newest partitions.
func scheduledWindows(b *Backfill, slot time.Time) string {
	to := tsql.TruncGrain(slot, b.Grain)
	from := to
	for i := 1; i < b.SchedulePartitions; i++ {
		from = tsql.TruncGrain(from.Add(-time.Nanosecond), b.Grain)
	}
	return formatPartition(from, b.Grain) + ".." + formatPartition(to, b.Grain)
}
