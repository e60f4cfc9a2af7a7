package backfill_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trueup/backfill"
	"trueup/ledger"
	"trueup/monitor"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestScheduledPipeline: a backfill file with a schedule: header is the pipeline under trueup
// serve. It does not run at start-up when it never ran before; at its slot it computes its
// schedule_partitions newest partitions into the live version; after a restart that missed two
// slots it runs once, straight away, and then waits for the next.
func TestScheduledPipeline(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := t.Context()
		d := newDemo(t, e)
		file := filepath.Join(d.dir, "backfills", "fix_dedup_bug.sql")
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, append([]byte("-- schedule: 0 * * * *\n-- schedule_partitions: 2\n"), body...), 0o644); err != nil {
			t.Fatal(err)
		}
		for i, day := range map[int]string{5: "2026-09-01", 2: "2026-09-02"} {
			q := fmt.Sprintf(`INSERT INTO orders_raw SELECT event_id + %[1]d, order_id + %[1]d, CAST('%[2]s' AS DATE), ordered_at, customer_id, region, amount, 0
				FROM orders_raw WHERE order_date = CAST('2026-08-31' AS DATE) ORDER BY event_id LIMIT %[3]d`, 1_000_000_000+100*i, day, i)
			if err := e.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		newOrders := func() int64 {
			t.Helper()
			res, err := e.Query(ctx, "SELECT count(*) FROM orders WHERE order_id >= 1000000000")
			if err != nil {
				t.Fatal(err)
			}
			return tsql.AsInt64(res.Rows[0][0])
		}

		// schedule runs the scheduler on clock until stopped; its runs arrive on the channel.
		schedule := func(clock *monitor.FakeClock, l *demo) (chan backfill.ScheduledRun, func()) {
			runs := make(chan backfill.ScheduledRun, 4)
			done := make(chan error, 1)
			c, cancel := context.WithCancel(ctx)
			go func() { done <- l.runner.RunSchedules(c, clock, func(r backfill.ScheduledRun) { runs <- r }) }()
			return runs, func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}
		}
		await := func(runs chan backfill.ScheduledRun) backfill.ScheduledRun {
			t.Helper()
			select {
			case r := <-runs:
				return r
			case <-time.After(2 * time.Minute):
				t.Fatal("no scheduled run")
				return backfill.ScheduledRun{}
			}
		}

		clock := monitor.NewFakeClock(time.Date(2026, 9, 2, 0, 30, 0, 0, time.UTC))
		l := d.withLedger(t, ledger.WithClock(clock.Now))
		runs, stop := schedule(clock, l)
		if !clock.BlockUntil(1, time.Minute) {
			t.Fatal("the scheduler does not wait for its slot")
		}
		if len(runs) != 0 || newOrders() != 0 {
			t.Fatal("a schedule never run before ran at start-up")
		}
		clock.Set(time.Date(2026, 9, 2, 1, 0, 0, 0, time.UTC))
		r := await(runs)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if got := strings.Join(r.Run.Windows, " "); got != "2026-09-01 2026-09-02" || r.Run.Actor != backfill.ScheduleActor {
			t.Errorf("the 01:00 slot ran windows %q as %q, want the two newest days as schedule", got, r.Run.Actor)
		}
		if n := newOrders(); n != 7 {
			t.Errorf("readers see %d of the 7 new orders after the scheduled run", n)
		}
		stop()

		// Down from 01:00 until 03:30: the 02:00 and 03:00 slots were missed; one run, as the
		// newest of them, makes up for both.
		clock = monitor.NewFakeClock(time.Date(2026, 9, 2, 3, 30, 0, 0, time.UTC))
		l2 := *l
		l2.runner = l.newRunner(t, e)
		runs, stop = schedule(clock, &l2)
		defer stop()
		if r := await(runs); r.Err != nil || !r.Slot.Equal(time.Date(2026, 9, 2, 3, 0, 0, 0, time.UTC)) {
			t.Errorf("after the restart: slot %v, err %v; want the missed 03:00 slot", r.Slot, r.Err)
		}
		if !clock.BlockUntil(1, time.Minute) {
			t.Fatal("the scheduler does not wait for its next slot after the make-up run")
		}
		if len(runs) != 0 {
			t.Errorf("%d more runs for missed slots, want one in all", len(runs))
		}
	})
}
