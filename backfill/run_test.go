package backfill_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/backfill"
	"trueup/fault"
	"trueup/ledger"
	"trueup/ledger/ledgertest"
	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// Starting, cancelling and resuming runs from the server (backfill.Service), and how a run
// keeps to its pace: one build per run, stops that stop, hours that hold.
func TestRunsAreSerialisedAndStop(t *testing.T) {
	t.Parallel() // long: beside the package's other long tests
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		d := newDemo(t, e)
		twoDays := &backfill.Scope{From: day("2026-07-10"), To: day("2026-07-11")}

		t.Run("double_clicked_run_builds_once", func(t *testing.T) {
			svc := &backfill.Service{Runner: d.newRunner(t, e)}
			defer svc.Close()
			go1 := make(chan struct{})
			errs := make([]error, 2)
			runs := make([]*backfill.Run, 2)
			var wg sync.WaitGroup
			for i, actor := range []string{"ann", "bob"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-go1
					runs[i], errs[i] = svc.Start(ctx, "fix_dedup_bug", actor, 0, nil)
				}()
			}
			close(go1)
			wg.Wait()
			won := 0
			for i, err := range errs {
				switch {
				case err == nil:
					won = i
				case !errors.Is(err, fault.ErrConflict):
					t.Fatalf("start %d: %v, want a conflict", i, err)
				}
			}
			if (errs[0] == nil) == (errs[1] == nil) {
				t.Fatalf("two starts at once: errors %v and %v, want exactly one to start", errs[0], errs[1])
			}
			if !strings.Contains(errs[1-won].Error(), "orders has run") {
				t.Errorf("the loser is not told which run holds the table: %v", errs[1-won])
			}
			st := awaitStopped(t, svc, "fix_dedup_bug", "")
			if st.RunID != runs[won].ID || st.Version != "v2" || st.State != backfill.RunValidated {
				t.Errorf("latest run %d %s building %s, want run %d validated building v2", st.RunID, st.State, st.Version, runs[won].ID)
			}
			var n int
			d.ledger.DB().QueryRowContext(ctx, "SELECT count(*) FROM backfill_runs").Scan(&n)
			if n != 1 {
				t.Errorf("%d runs recorded, want 1", n)
			}
			if _, err := e.Columns(ctx, "orders__v3"); err == nil {
				t.Error("a second version orders__v3 was built")
			}
		})

		t.Run("resume_right_after_cancel_waits_for_the_stop", func(t *testing.T) {
			g := &gateEngine{Engine: e, prefix: "orders__", entered: make(chan struct{}, 64), release: make(chan struct{})}
			svc := &backfill.Service{Runner: d.newRunner(t, g)}
			defer svc.Close()
			run, err := svc.Start(ctx, "fix_dedup_bug", "ann", 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-g.entered:
			case <-time.After(30 * time.Second):
				t.Fatal("no partition started")
			}
			if _, err := svc.Cancel(ctx, "fix_dedup_bug", "ann"); err != nil {
				t.Fatal(err)
			}
			// The partitions in flight are still being written: a resume now would be a second
			// build of the same run beside them.
			if _, err := svc.Resume(ctx, "fix_dedup_bug", "ann"); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "being built now") {
				t.Errorf("resume while the cancelled run still writes: %v, want a conflict", err)
			}
			close(g.release)
			st := awaitStopped(t, svc, "fix_dedup_bug", "")
			if st.RunID != run.ID || st.State != backfill.RunCancelled || st.PartitionsDone == 0 {
				t.Errorf("after cancel: run %d %s with %d done", st.RunID, st.State, st.PartitionsDone)
			}
			svc.Close() // the stopped worker has returned
			if _, err := svc.Resume(ctx, "fix_dedup_bug", "ann"); err != nil {
				t.Fatalf("resume once stopped: %v", err)
			}
			if st = awaitStopped(t, svc, "fix_dedup_bug", backfill.RunCancelled); st.State != backfill.RunValidated {
				t.Errorf("resumed run: %s", st.State)
			}
			if g.maxInFlight > 2 {
				t.Errorf("%d partitions of orders written at once, the file allows 2: two builds ran together", g.maxInFlight)
			}
			if dup := duplicateKeys(t, e, "orders__"+st.Version); dup != 0 {
				t.Errorf("%d duplicate order ids in %s", dup, st.Version)
			}
		})

		t.Run("cancel_while_a_sample_validates", func(t *testing.T) {
			gd := &gateDiffs{DiffStore: reconcile.NewStore(d.ledger), entered: make(chan struct{}, 8), release: make(chan struct{})}
			svc := &backfill.Service{Runner: d.runnerSaving(t, e, gd)}
			defer svc.Close()
			run, err := svc.Start(ctx, "fix_dedup_bug", "ann", 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-gd.entered:
			case <-time.After(60 * time.Second):
				t.Fatal("the sample was not validated")
			}
			type result struct {
				run *backfill.Run
				err error
			}
			res := make(chan result, 1)
			go func() {
				r, err := svc.Cancel(ctx, "fix_dedup_bug", "bob")
				res <- result{r, err}
			}()
			// the cancel has reached the run (its status says so) while the sample validates
			for st, err := svc.Status(ctx, "fix_dedup_bug"); err != nil || st.CancelAskedBy != "bob"; st, err = svc.Status(ctx, "fix_dedup_bug") {
				select {
				case r := <-res:
					t.Fatalf("the cancel returned while the run validates: %+v %v", r.run, r.err)
				case <-time.After(5 * time.Millisecond):
				}
			}
			close(gd.release)
			r := <-res
			if r.err != nil || r.run.ID != run.ID || r.run.State != backfill.RunCancelled {
				t.Fatalf("cancel while the sample validates: %+v, %v; want run %d cancelled", r.run, r.err, run.ID)
			}
			if st := awaitStopped(t, svc, "fix_dedup_bug", ""); st.State != backfill.RunCancelled || st.CancelAskedBy != "" {
				t.Errorf("after the cancel: %s (cancel asked by %q), want cancelled", st.State, st.CancelAskedBy)
			}
			svc.Close()
			// resumed, it builds the rest and validates; a run that has ended has nothing to cancel
			gd.release = make(chan struct{})
			if _, err := svc.Resume(ctx, "fix_dedup_bug", "ann"); err != nil {
				t.Fatal(err)
			}
			<-gd.entered
			close(gd.release)
			if st := awaitStopped(t, svc, "fix_dedup_bug", backfill.RunCancelled); st.State != backfill.RunValidated {
				t.Fatalf("resumed run: %s", st.State)
			}
			svc.Close()
			if _, err := svc.Cancel(ctx, "fix_dedup_bug", "bob"); !errors.Is(err, fault.ErrConflict) {
				t.Errorf("cancel of a validated run: %v, want a conflict: nothing to cancel", err)
			}
		})

		t.Run("stop_ends_the_throttle_pause", func(t *testing.T) {
			base, _ := d.runner.Planner.Set.Get("fix_dedup_bug")
			slow := *base
			slow.Name, slow.Concurrency, slow.Throttle = "slow", 1, 10*time.Minute
			stop := make(chan struct{})
			var once sync.Once
			r := d.newRunner(t, e, backfill.WithProgress(func(backfill.Progress) { once.Do(func() { close(stop) }) }))
			r.Planner.Set.Replace(backfill.NewSet(append(r.Planner.Set.All(), &slow)...))
			run, err := r.Start(ctx, "slow", backfill.RunOptions{Scope: twoDays})
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				run *backfill.Run
				err error
			}
			done := make(chan result, 1)
			go func() {
				got, err := r.Execute(ctx, run.ID, backfill.ExecOptions{Stop: stop})
				done <- result{got, err}
			}()
			select {
			case res := <-done:
				if res.err != nil || res.run.State != backfill.RunCancelled {
					t.Fatalf("stopped during the throttle: %v %v", res.run, res.err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the run still waits out its 10m throttle after it was stopped")
			}
			st, _ := r.Store.StatusOf(ctx, run.ID, d.ledger.Now())
			if st.PartitionsDone != 1 {
				t.Errorf("%d partitions done, want the 1 before the pause", st.PartitionsDone)
			}
		})

		t.Run("window_is_checked_when_a_worker_takes_the_partition", func(t *testing.T) {
			base, _ := d.runner.Planner.Set.Get("fix_dedup_bug")
			night := *base
			night.Name, night.Concurrency = "night", 1
			night.Window = &backfill.HourWindow{Start: 22 * 60, End: 6 * 60}
			var mu sync.Mutex
			now := time.Date(2026, 11, 30, 5, 10, 0, 0, time.UTC)
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			// Each partition of orders takes an hour on the clock: the first starts at 05:10,
			// inside the window, and ends at 06:10, outside it.
			slow := &hourEngine{Engine: e, prefix: "orders__", now: clock, advance: func() { mu.Lock(); now = now.Add(time.Hour); mu.Unlock() }}
			r := d.newRunner(t, slow, backfill.WithClock(clock,
				func(_ context.Context, d time.Duration) error { mu.Lock(); now = now.Add(d); mu.Unlock(); return nil }))
			r.Planner.Set.Replace(backfill.NewSet(append(r.Planner.Set.All(), &night)...))
			// Two partitions: the second is handed out at 05:10 and taken by the worker at 06:10.
			run, err := r.Start(ctx, "night", backfill.RunOptions{Scope: twoDays})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Execute(ctx, run.ID, backfill.ExecOptions{}); err != nil {
				t.Fatal(err)
			}
			want := []string{"05:10", "22:00"}
			if got := slow.startedAt(); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("partitions of orders started at %v, want %v: all inside 22:00-06:00", got, want)
			}
		})
	})
}

// withLedger is d with a new, empty ledger opened with opts, and a runner over it.
func (d *demo) withLedger(t *testing.T, opts ...ledger.Option) *demo {
	t.Helper()
	l := ledgertest.Open(t, opts...)
	c := *d
	c.ledger = l
	c.runner = c.newRunner(t, d.engine)
	return &c
}

// awaitStopped waits for a backfill's latest run to stop building and validating, in a state
// other than from (the state it was resumed from: a resume builds in the background).
func awaitStopped(t *testing.T, svc *backfill.Service, name, from string) *backfill.Status {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := svc.Status(context.Background(), name)
		if err == nil && st.State != backfill.RunRunning && st.State != backfill.RunValidating && st.State != from {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("run of %s: %+v, %v; still building", name, st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gateDiffs holds every save of a validation's diff until release is closed.
type gateDiffs struct {
	backfill.DiffStore
	entered chan struct{}
	release chan struct{}
}

func (g *gateDiffs) Save(ctx context.Context, r *reconcile.Result, label, actor string) (int64, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.DiffStore.Save(ctx, r, label, actor)
}

// gateEngine holds every partition write to tables starting with prefix until release is
// closed, and counts how many are in flight at once.
type gateEngine struct {
	tsql.Engine
	prefix  string
	entered chan struct{}
	release chan struct{}

	mu          sync.Mutex
	inFlight    int
	maxInFlight int
}

func (g *gateEngine) hold(table string) func() {
	if !strings.HasPrefix(table, g.prefix) {
		return func() {}
	}
	g.mu.Lock()
	g.inFlight++
	g.maxInFlight = max(g.maxInFlight, g.inFlight)
	g.mu.Unlock()
	g.entered <- struct{}{}
	<-g.release
	return func() { g.mu.Lock(); g.inFlight--; g.mu.Unlock() }
}

func (g *gateEngine) ReplacePartition(ctx context.Context, table string, w tsql.Window, q string, args ...any) (int64, error) {
	defer g.hold(table)()
	return g.Engine.ReplacePartition(ctx, table, w, q, args...)
}

func (g *gateEngine) ReplacePartitions(ctx context.Context, table string, writes []tsql.PartitionWrite) ([]int64, error) {
	defer g.hold(table)()
	return g.Engine.ReplacePartitions(ctx, table, writes)
}

// hourEngine records the clock when a partition write to a table starting with prefix begins,
// and moves the clock an hour on when it ends.
type hourEngine struct {
	tsql.Engine
	prefix  string
	now     func() time.Time
	advance func()

	mu     sync.Mutex
	starts []string
}

func (h *hourEngine) ReplacePartition(ctx context.Context, table string, w tsql.Window, q string, args ...any) (int64, error) {
	if !strings.HasPrefix(table, h.prefix) {
		return h.Engine.ReplacePartition(ctx, table, w, q, args...)
	}
	h.mu.Lock()
	h.starts = append(h.starts, h.now().Format("15:04"))
	h.mu.Unlock()
	n, err := h.Engine.ReplacePartition(ctx, table, w, q, args...)
	time.Sleep(20 * time.Millisecond) // a partition takes a while: the next one is queued meanwhile
	h.advance()
	return n, err
}

func (h *hourEngine) startedAt() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string{}, h.starts...)
}

// Two starts whose upstream tables differ but that refresh the same downstream table, in two
// processes (two runners: this one's starts do not wait for the other's): the number of the
// shared table's version goes to one of them, the other is refused as a conflict and records
// nothing. And a start's notice draft holds back no other start.
func TestRunsStartingTogether(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		base := newDemo(t, e)
		twoDays := &backfill.Scope{From: day("2026-07-10"), To: day("2026-07-11")}
		// dailyRevenue is a runner whose daily_revenue backfill can run on its own: its table
		// is the upstream one, and one of fix_dedup_bug's downstream tables.
		dailyRevenue := func(d *demo, opts ...backfill.Option) *backfill.Runner {
			r := d.newRunner(t, e, opts...)
			b, err := r.Planner.Set.Get("daily_revenue")
			if err != nil {
				t.Fatal(err)
			}
			b.Reason, b.Objective = "late-data", "Orders of 2026-07-10 and 11 arrived late; count them in those days."
			return r
		}
		// The other start takes daily_revenue v2 at the nth reading of the ledger's clock in
		// this start's reservation: the first is before its transaction begins, the second
		// inside it.
		for _, tc := range []struct {
			name string
			nth  int64
		}{
			{"number_taken_before_the_transaction", 1},
			{"number_taken_while_the_transaction_is_open", 2},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var armed atomic.Bool
				var reads atomic.Int64
				var takeFirst func()
				d := base.withLedger(t, ledger.WithClock(func() time.Time {
					if armed.Load() && reads.Add(1) == tc.nth {
						armed.Store(false)
						takeFirst()
					}
					return time.Now()
				}))
				var first *backfill.Run
				var firstErr error
				takeFirst = func() {
					first, firstErr = dailyRevenue(d).Start(ctx, "daily_revenue", backfill.RunOptions{Actor: "ann", Scope: twoDays})
				}
				armed.Store(true)
				_, err := d.runner.Start(ctx, "fix_dedup_bug", backfill.RunOptions{Actor: "bob", Scope: twoDays})
				if armed.Load() {
					t.Fatal("the other start never ran")
				}
				if firstErr != nil {
					t.Fatalf("the first start: %v", firstErr)
				}
				if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "daily_revenue__v2") {
					t.Fatalf("the second start: %v, want a conflict naming daily_revenue__v2", err)
				}
				type row struct {
					Table, Backfill string
					Version         int
					RunID           int64
				}
				var got []row
				rows, err := d.ledger.DB().QueryContext(ctx, "SELECT table_name, backfill, version, run_id FROM versions ORDER BY table_name, version")
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var r row
					if err := rows.Scan(&r.Table, &r.Backfill, &r.Version, &r.RunID); err != nil {
						t.Fatal(err)
					}
					got = append(got, r)
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				want := []row{{Table: "daily_revenue", Backfill: "daily_revenue", Version: 2, RunID: first.ID}}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("versions recorded (-want +got):\n%s", diff)
				}
				for _, table := range []string{"backfill_runs", "backfill_tables", "backfill_partitions"} {
					var n int
					if err := d.ledger.DB().QueryRowContext(ctx, "SELECT count(*) FROM "+table+" WHERE "+
						map[bool]string{true: "id", false: "run_id"}[table == "backfill_runs"]+" <> ?", first.ID).Scan(&n); err != nil {
						t.Fatal(err)
					}
					if n != 0 {
						t.Errorf("%d rows of the refused start in %s", n, table)
					}
				}
			})
		}

		t.Run("a_notice_being_drafted_holds_back_no_other_start", func(t *testing.T) {
			var r *backfill.Runner
			other := make(chan error, 1)
			r = dailyRevenue(base.withLedger(t), backfill.WithListener(runChanged(func(ctx context.Context, run *backfill.Run) {
				if run.Backfill != "fix_dedup_bug" {
					return
				}
				go func() {
					_, err := r.Start(ctx, "daily_revenue", backfill.RunOptions{Actor: "ann", Scope: twoDays})
					other <- err
				}()
				select {
				case err := <-other:
					if err != nil {
						t.Errorf("a start while fix_dedup_bug's notice is drafted: %v", err)
					}
				case <-time.After(30 * time.Second):
					t.Error("a start of daily_revenue waited for fix_dedup_bug's notice to be drafted")
				}
			})))
			if _, err := r.Start(ctx, "fix_dedup_bug", backfill.RunOptions{Actor: "bob", Scope: twoDays}); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// runChanged is a backfill.Listener made of a function.
type runChanged func(ctx context.Context, run *backfill.Run)

func (f runChanged) RunChanged(ctx context.Context, run *backfill.Run) { f(ctx, run) }
