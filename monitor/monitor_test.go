package monitor

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/fault"
	"trueup/ledger"
	"trueup/ledger/ledgertest"
	"trueup/rules"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

type fixture struct {
	engine  tsql.Engine
	ledger  *ledger.Ledger
	store   *rules.Store
	set     *rules.Set
	targets rules.TargetMap
}

// newFixture builds a table of amounts and rules over it: no_negative runs hourly, once_a_day
// at 06:00, adhoc has no schedule.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	e := sqltest.DuckDB(t)
	if err := e.CreateTable(ctx, "amounts", []tsql.Column{{Name: "v", Kind: tsql.TypeInt}}, "", nil); err != nil {
		t.Fatal(err)
	}
	if err := e.Insert(ctx, "amounts", []string{"v"}, [][]any{{int64(1)}, {int64(2)}}); err != nil {
		t.Fatal(err)
	}
	l := ledgertest.Open(t)
	targets := rules.TargetMap{Default: "w", Engines: map[string]tsql.Engine{"w": e}}
	fsys := fstest.MapFS{
		"no_negative.sql": {Data: []byte("-- kind: custom\n-- schedule: 0 * * * *\nSELECT v FROM amounts WHERE v < 0\n")},
		"once_a_day.sql":  {Data: []byte("-- kind: custom\n-- schedule: 0 6 * * *\nSELECT v FROM amounts WHERE v > 100\n")},
		"adhoc.sql":       {Data: []byte("-- kind: custom\nSELECT v FROM amounts WHERE v = 0\n")},
	}
	set, err := rules.Load(ctx, fsys, "rules", targets)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{engine: e, ledger: l, store: rules.NewStore(l), set: set, targets: targets}
}

func at(hhmm string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", "2026-07-10 "+hhmm)
	if err != nil {
		panic(err)
	}
	return t
}

// started runs a monitor until the test ends and returns a channel of its recorded runs.
func (f *fixture) started(t *testing.T, clock *FakeClock, runner Runner, opts ...Option) (*Monitor, chan *rules.Run) {
	t.Helper()
	runs := make(chan *rules.Run, 16)
	if runner == nil {
		runner = rules.NewRunner(f.targets, rules.WithClock(clock.Now))
	}
	opts = append([]Option{WithClock(clock), WithOnRun(func(run *rules.Run, _ []rules.Alert) { runs <- run })}, opts...)
	m := New(f.set.Rules, runner, f.store, NewLedgerSlots(f.ledger), opts...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("monitor: %v", err)
		}
	})
	if !clock.BlockUntil(1, 5*time.Second) {
		t.Fatal("the monitor never waited for its next slot")
	}
	return m, runs
}

// tick moves the clock to hhmm and returns the names of the rules of the run it starts, or
// nil when nothing runs: the monitor is waiting for its next slot again with no run going.
func tick(t *testing.T, m *Monitor, clock *FakeClock, runs chan *rules.Run, hhmm string) []string {
	t.Helper()
	waits := clock.Waits()
	woke := clock.Set(at(hhmm))
	deadline := time.After(10 * time.Second)
	for {
		select {
		case run := <-runs:
			var names []string
			for _, r := range run.Results {
				names = append(names, r.Rule+"="+string(r.Status))
			}
			if !clock.BlockUntil(1, 5*time.Second) {
				t.Fatal("the monitor did not wait again after the run")
			}
			// the run hands over its results just before it stops counting as running: wait for
			// that, or the next slot would find it still going and skip
			for settle := time.Now().Add(5 * time.Second); m.busy(); time.Sleep(time.Millisecond) {
				if time.Now().After(settle) {
					t.Fatal("a run never finished")
				}
			}
			return names
		case <-deadline:
			t.Fatalf("at %s the monitor neither ran nor settled", hhmm)
		case <-time.After(20 * time.Millisecond):
			// the monitor starts due runs before it waits again, and a run hands over its
			// results before it stops counting as running
			if (woke == 0 || clock.Waits() > waits) && !m.busy() && len(runs) == 0 {
				return nil
			}
		}
	}
}

// TestScheduledRuleAlertsOncePerChange: an hourly rule runs on each slot; alerts are raised
// when it goes pass→fail and fail→pass, not on every failing run.
func TestScheduledRuleAlertsOncePerChange(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	clock := NewFakeClock(at("05:30"))
	m, runs := f.started(t, clock, nil)

	steps := []struct {
		hhmm   string
		before func()
		want   []string
	}{
		{"05:59", nil, nil},
		{"06:00", nil, []string{"no_negative=pass", "once_a_day=pass"}}, // rules due together run together
		{"07:00", func() { f.engine.Insert(ctx, "amounts", []string{"v"}, [][]any{{int64(-5)}}) }, []string{"no_negative=fail"}},
		{"08:00", nil, []string{"no_negative=fail"}},
		{"08:30", nil, nil},
		{"09:00", func() { f.engine.Exec(ctx, "DELETE FROM amounts WHERE v < 0") }, []string{"no_negative=pass"}},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		if got := tick(t, m, clock, runs, s.hhmm); cmp.Diff(s.want, got) != "" {
			t.Fatalf("at %s ran %v, want %v", s.hhmm, got, s.want)
		}
	}
	alerts, err := f.store.Alerts(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range alerts {
		got = append(got, a.At.Format("15:04")+" "+a.Rule+" "+string(a.From)+"→"+string(a.To))
	}
	want := []string{"09:00 no_negative fail→pass", "07:00 no_negative pass→fail"} // newest first
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("alerts (-want +got):\n%s", diff)
	}
	hist, _ := f.store.History(ctx, "no_negative", 0)
	if len(hist) != 4 {
		t.Errorf("no_negative has %d results, want 4", len(hist))
	}
}

// alertHook is a WithAlerts hook that records the alerts it accepts and refuses while told to.
type alertHook struct {
	mu       sync.Mutex
	accepted []string
	refuse   bool
	refused  int
}

func (h *alertHook) send(_ context.Context, a rules.Alert) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refuse {
		h.refused++
		return errors.New("outbox unavailable")
	}
	h.accepted = append(h.accepted, a.At.Format("15:04")+" "+a.Rule+" "+string(a.From)+"→"+string(a.To))
	return nil
}

func (h *alertHook) set(refuse bool) (accepted []string, refused int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	accepted, refused = h.accepted, h.refused
	h.accepted, h.refused, h.refuse = nil, 0, refuse
	return accepted, refused
}

// TestAlertsHandedOnOncePerChange: the WithAlerts hook gets each state change once: one that
// `trueup check` recorded while the monitor was not running at start-up, the monitor's own
// after their run, and one the hook refused again after the next run, not again after that.
func TestAlertsHandedOnOncePerChange(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	clock := NewFakeClock(at("05:30"))
	runner := rules.NewRunner(f.targets, rules.WithClock(clock.Now))
	var noNegative []*rules.Rule
	for _, r := range f.set.Rules {
		if r.Name == "no_negative" {
			noNegative = append(noNegative, r)
		}
	}
	// `trueup check` runs no_negative twice before serve starts: pass, then fail
	for _, before := range []func(){nil, func() { f.engine.Insert(ctx, "amounts", []string{"v"}, [][]any{{int64(-5)}}) }} {
		if before != nil {
			before()
		}
		run := runner.Run(ctx, noNegative)
		run.Trigger = rules.TriggerCLI
		if _, err := f.store.SaveRun(ctx, run, "cli"); err != nil {
			t.Fatal(err)
		}
	}
	hook := &alertHook{}
	m, runs := f.started(t, clock, runner, WithAlerts(hook.send))
	if got, _ := hook.set(false); cmp.Diff([]string{"05:30 no_negative pass→fail"}, got) != "" {
		t.Errorf("handed on at start-up: %v, want the alert check recorded", got)
	}

	steps := []struct {
		hhmm    string
		before  func()
		refuse  bool // the hook refuses from this run on
		want    []string
		refused int
	}{
		{"06:00", nil, false, nil, 0}, // still failing: no change, nothing to hand on
		{"07:00", func() { f.engine.Exec(ctx, "DELETE FROM amounts WHERE v < 0") }, false, []string{"07:00 no_negative fail→pass"}, 0},
		{"08:00", func() { f.engine.Insert(ctx, "amounts", []string{"v"}, [][]any{{int64(-1)}}) }, true, nil, 1},
		{"09:00", nil, false, []string{"08:00 no_negative pass→fail"}, 0}, // the refused one, once
		{"10:00", nil, false, nil, 0},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		hook.set(s.refuse)
		tick(t, m, clock, runs, s.hhmm)
		got, refused := hook.set(false)
		if diff := cmp.Diff(s.want, got); diff != "" || refused != s.refused {
			t.Errorf("at %s handed on (-want +got):\n%s; refused %d times, want %d", s.hhmm, diff, refused, s.refused)
		}
	}
	alerts, err := f.store.Alerts(ctx, "", 0)
	if err != nil || len(alerts) != 3 {
		t.Fatalf("alerts %+v, %v", alerts, err)
	}
	for _, a := range alerts {
		if a.DeliveredAt.IsZero() {
			t.Errorf("alert %d (%s→%s) is not recorded as delivered", a.ID, a.From, a.To)
		}
	}
}

// TestMissedRunOnceAfterRestart: slots missed while trueup was down run once, at start-up.
func TestMissedRunOnceAfterRestart(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	slots := NewLedgerSlots(f.ledger)
	// a first life scheduled the rules at 05:00 and ran no_negative's 06:00 slot
	slots.RecordSlot(ctx, "no_negative", "0 * * * *", at("06:00"))
	slots.RecordSlot(ctx, "once_a_day", "0 6 * * *", at("06:00"))

	// back at 10:30: 07:00, 08:00, 09:00 and 10:00 were missed
	clock := NewFakeClock(at("10:30"))
	runs := make(chan *rules.Run, 16)
	m := New(f.set.Rules, rules.NewRunner(f.targets), f.store, slots, WithClock(clock),
		WithOnRun(func(run *rules.Run, _ []rules.Alert) { runs <- run }))
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(cctx) }()
	defer func() { cancel(); <-done }()

	select {
	case run := <-runs:
		if len(run.Results) != 1 || run.Results[0].Rule != "no_negative" {
			t.Errorf("catch-up run: %+v", run.Results)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the missed slot did not run at start-up")
	}
	if !clock.BlockUntil(1, 5*time.Second) {
		t.Fatal("monitor not waiting")
	}
	select {
	case run := <-runs:
		t.Fatalf("a second catch-up run: %+v", run.Results)
	case <-time.After(200 * time.Millisecond):
	}
	last, _, _ := slots.LastSlot(ctx, "no_negative")
	if !last.Equal(at("10:00")) {
		t.Errorf("last slot %s, want 10:00", last)
	}
	for _, st := range m.Statuses() {
		if st.Rule.Name == "no_negative" && !st.Next.Equal(at("11:00")) {
			t.Errorf("next slot %s, want 11:00", st.Next)
		}
		if st.Rule.Name == "once_a_day" && !st.Next.Equal(time.Date(2026, 7, 11, 6, 0, 0, 0, time.UTC)) {
			t.Errorf("once_a_day next %s", st.Next)
		}
	}
	if hist, _ := f.store.History(ctx, "no_negative", 0); len(hist) != 1 {
		t.Errorf("%d results after the catch-up, want 1", len(hist))
	}
}

// TestNewScheduleStartsFromNow: a rule never scheduled before does not run at start-up.
func TestNewScheduleStartsFromNow(t *testing.T) {
	f := newFixture(t)
	clock := NewFakeClock(at("06:30"))
	m, runs := f.started(t, clock, nil)
	select {
	case run := <-runs:
		t.Fatalf("ran at start-up: %+v", run.Results)
	case <-time.After(200 * time.Millisecond):
	}
	if got := tick(t, m, clock, runs, "07:00"); cmp.Diff([]string{"no_negative=pass"}, got) != "" {
		t.Errorf("at 07:00 ran %v", got)
	}
}

// blockingRunner holds every run until released.
type blockingRunner struct {
	inner   Runner
	started chan string
	release chan struct{}
}

func (b *blockingRunner) Run(ctx context.Context, rs []*rules.Rule) *rules.Run {
	b.started <- rs[0].Name
	<-b.release
	return b.inner.Run(ctx, rs)
}

func (b *blockingRunner) Plan(rs []*rules.Rule) *rules.Plan { return b.inner.Plan(rs) }

// TestNoOverlap: while a rule runs, run-now refuses as busy (a conflict: with no wait, see
// TestRunOnDemandWaitsForTheRunningRule) and its next slot is skipped.
func TestNoOverlap(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	clock := NewFakeClock(at("06:30"))
	br := &blockingRunner{inner: rules.NewRunner(f.targets), started: make(chan string, 4), release: make(chan struct{})}
	m, runs := f.started(t, clock, br, WithBusyWait(0))

	clock.Set(at("07:00"))
	if name := <-br.started; name != "no_negative" {
		t.Fatalf("started %s", name)
	}
	if _, err := m.RunNow(ctx, "no_negative", "tester"); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("run now during a run: %v, want a conflict", err)
	}
	if !clock.BlockUntil(1, 5*time.Second) {
		t.Fatal("monitor not waiting")
	}
	clock.Set(at("08:00")) // the 07:00 run is still going: this slot is skipped
	select {
	case name := <-br.started:
		t.Fatalf("%s started while its previous run was going", name)
	case <-time.After(200 * time.Millisecond):
	}
	close(br.release)
	<-runs
	if hist, _ := f.store.History(ctx, "no_negative", 0); len(hist) != 1 {
		t.Errorf("%d runs recorded, want 1", len(hist))
	}
}

func TestRunNow(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	m := New(f.set.Rules, rules.NewRunner(f.targets), f.store, NewLedgerSlots(f.ledger))
	run, err := m.RunNow(ctx, "adhoc", "ann")
	if err != nil {
		t.Fatal(err)
	}
	if run.ID == 0 || run.Trigger != "manual" || run.Results[0].Status != rules.StatusPass {
		t.Errorf("run %d trigger %s status %s", run.ID, run.Trigger, run.Results[0].Status)
	}
	audit, err := f.ledger.AuditLog(ctx, ledger.AuditFilter{Action: "rule.run"})
	if err != nil || len(audit) != 1 || audit[0].Actor != "ann" || audit[0].Target != "adhoc" || audit[0].Outcome != ledger.OutcomeOK {
		t.Errorf("audit of run now: %+v, %v", audit, err)
	}
	if _, err := m.RunNow(ctx, "nope", "ann"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown rule: %v", err)
	}
	st := m.Statuses()
	if st[0].Rule.Name != "adhoc" || st[0].Last == nil || st[0].Last.RunID != run.ID || !st[0].Next.IsZero() {
		t.Errorf("status of adhoc after run now: %+v", st[0])
	}
	var b strings.Builder
	for _, s := range st {
		b.WriteString(s.Rule.Name + " ")
	}
	if b.String() != "adhoc no_negative once_a_day " {
		t.Errorf("statuses in order %q", b.String())
	}
}

// TestReplaceRules: a reloaded rule set takes effect without a restart: a new scheduled rule
// runs at its first slot from now, a removed one neither runs nor is listed.
func TestReplaceRules(t *testing.T) {
	f := newFixture(t)
	clock := NewFakeClock(at("06:30"))
	m, runs := f.started(t, clock, nil)
	reloaded, err := rules.Load(context.Background(), fstest.MapFS{
		"no_negative.sql": {Data: []byte("-- kind: custom\n-- schedule: 0 * * * *\nSELECT v FROM amounts WHERE v < 0\n")},
		"big_values.sql":  {Data: []byte("-- kind: custom\n-- schedule: 45 * * * *\nSELECT v FROM amounts WHERE v > 1\n")},
		"never_empty.sql": {Data: []byte("-- kind: custom\nSELECT v FROM amounts WHERE v IS NULL\n")},
	}, "rules", f.targets)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Replace(context.Background(), reloaded.Rules); err != nil {
		t.Fatal(err)
	}
	if !clock.BlockUntil(2, 5*time.Second) { // the old wait and the new one
		t.Fatal("the monitor did not pick up the new schedule")
	}
	var names []string
	for _, r := range m.Rules() {
		names = append(names, r.Name)
	}
	if diff := cmp.Diff([]string{"big_values", "never_empty", "no_negative"}, names); diff != "" {
		t.Errorf("rules after the reload (-want +got):\n%s", diff)
	}
	if _, err := m.RunNow(context.Background(), "once_a_day", "test"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("run of a removed rule: err = %v, want not found", err)
	}
	if got := tick(t, m, clock, runs, "06:45"); cmp.Diff([]string{"big_values=fail"}, got) != "" {
		t.Errorf("at 06:45 ran %v", got)
	}
	if got := tick(t, m, clock, runs, "07:00"); cmp.Diff([]string{"no_negative=pass"}, got) != "" {
		t.Errorf("at 07:00 ran %v", got)
	}
}

// busy reports whether a run is going.
func (m *Monitor) busy() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.running) > 0
}

// heldRunner runs rules once release is closed, saying when a run has started.
type heldRunner struct {
	*rules.Runner
	started, release chan struct{}
}

func (h *heldRunner) Run(ctx context.Context, rs []*rules.Rule) *rules.Run {
	h.started <- struct{}{}
	<-h.release
	return h.Runner.Run(ctx, rs)
}

// TestRunOnDemandWaitsForTheRunningRule: a check asked for while the monitor runs the same rule
// (its rerun after a swap) waits for that run and then runs, rather than answering "already
// running" (a CI's `check --format junit` got an empty file); one that waits past the bound is
// Busy, and with no wait it is Busy at once.
func TestRunOnDemandWaitsForTheRunningRule(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	held := &heldRunner{Runner: rules.NewRunner(f.targets), started: make(chan struct{}), release: make(chan struct{})}
	m := New(f.set.Rules, held, f.store, NewLedgerSlots(f.ledger))
	first := make(chan error, 1)
	go func() { _, err := m.RunNow(ctx, "adhoc", "monitor"); first <- err }()
	<-held.started
	second := make(chan *rules.Run, 1)
	go func() {
		run, err := m.RunSelected(ctx, []string{"adhoc"}, nil, "ci")
		if err != nil {
			t.Error(err)
		}
		second <- run
	}()
	close(held.release) // the first run ends; the waiting one starts and, released, ends too
	<-held.started
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if run := <-second; run == nil || len(run.Results) != 1 || run.Results[0].Status != rules.StatusPass {
		t.Errorf("the check that waited: %+v", run)
	}

	busyAtOnce := New(f.set.Rules, &heldRunner{Runner: rules.NewRunner(f.targets), started: make(chan struct{}), release: make(chan struct{})},
		f.store, NewLedgerSlots(f.ledger), WithBusyWait(0))
	busyAtOnce.running["adhoc"] = true
	if _, err := busyAtOnce.RunNow(ctx, "adhoc", "ci"); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "Rule adhoc is already running") {
		t.Errorf("with no wait: %v, want Busy", err)
	}
	bounded := New(f.set.Rules, rules.NewRunner(f.targets), f.store, NewLedgerSlots(f.ledger), WithBusyWait(time.Millisecond))
	bounded.running["adhoc"] = true
	if _, err := bounded.RunNow(ctx, "adhoc", "ci"); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("past the wait: %v, want Busy", err)
	}
}
