// Package monitor runs rules on their cron schedules: one run at a time per rule, a missed
// slot run once after a restart, results and state changes kept through the rules store, and
// alerts handed on only when a rule's status changes. It also runs a rule on demand.
//
// Alerts are handed on from the ledger, not from the run that raised them: at start-up and
// after every run the monitor hands on every recorded alert not handed on yet, so one raised by
// `trueup check` (or left over by a crash) goes out as surely as one raised by a schedule.
package monitor

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"trueup/fault"

	"trueup/rules"
)

// Busy is the error of a rule that is already running: a fault.Conflict, saying when to try
// again. A rule the monitor does not know is rules.NotFound.
func Busy(name string) error {
	return fault.New(fault.Conflict, "Rule %s is already running; try again when it has finished.", name)
}

// Runner evaluates rules and says what SQL they compile to (rules.Runner).
type Runner interface {
	Run(ctx context.Context, rs []*rules.Rule) *rules.Run
	Plan(rs []*rules.Rule) *rules.Plan
}

// Recorder keeps runs, judges state changes, holds alerts until they are handed on and
// answers for the history (rules.Store).
type Recorder interface {
	SaveRun(ctx context.Context, run *rules.Run, actor string) ([]rules.Alert, error)
	SendAlerts(ctx context.Context, send func(context.Context, rules.Alert) error) (int, error)
	Latest(ctx context.Context) (map[string]rules.Result, error)
	History(ctx context.Context, rule string, limit int) ([]rules.Result, error)
	Alerts(ctx context.Context, rule string, limit int) ([]rules.Alert, error)
}

// Monitor schedules and runs rules.
type Monitor struct {
	rules  []*rules.Rule
	byName map[string]*rules.Rule
	runner Runner
	store  Recorder
	slots  SlotStore
	clock  Clock
	log    *slog.Logger
	onRun  func(run *rules.Run, alerts []rules.Alert)
	send   func(ctx context.Context, a rules.Alert) error
	// trigger is what a run on demand (RunNow, RunSelected) is recorded as
	trigger string
	// builtIn are the kinds of the runner's own results (WithBuiltIn)
	builtIn []rules.Kind

	wake   chan struct{} // a replaced rule set: recompute the next slot
	slotMu sync.Mutex    // one reader-writer of the slot store at a time: start and Replace

	mu      sync.Mutex // guards rules and byName too, which Replace swaps
	running map[string]bool
	// finished is closed, and replaced, whenever a run ends: a run on demand waits on it, up to
	// busyWait, for the rules it names that are running.
	finished chan struct{}
	busyWait time.Duration
	next     map[string]time.Time // next slot per scheduled rule
	last     map[string]rules.Result
	loaded   bool // Load has read the last results and slots
	wg       sync.WaitGroup
}

// Option configures a Monitor.
type Option func(*Monitor)

// WithClock replaces the wall clock, for tests.
func WithClock(c Clock) Option { return func(m *Monitor) { m.clock = c } }

// WithLogger logs runs and alerts.
func WithLogger(l *slog.Logger) Option { return func(m *Monitor) { m.log = l } }

// WithOnRun is called after every run has been recorded.
func WithOnRun(fn func(run *rules.Run, alerts []rules.Alert)) Option {
	return func(m *Monitor) { m.onRun = fn }
}

// DefaultBusyWait is how long a run on demand waits for the rules it names that are running
// (the rerun of a table's rules after a swap): then it is Busy.
const DefaultBusyWait = time.Minute

// WithBusyWait sets how long a run on demand waits for its rules that are running; 0 refuses it
// at once (Busy).
func WithBusyWait(d time.Duration) Option { return func(m *Monitor) { m.busyWait = d } }

// WithTrigger records runs on demand (RunNow, RunSelected) with trigger t instead of
// rules.TriggerManual: `trueup check` runs its rules as rules.TriggerCLI.
func WithTrigger(t string) Option { return func(m *Monitor) { m.trigger = t } }

// WithAlerts hands alerts (state changes) to the notification channels: every recorded alert
// not handed on yet, at start-up and after each run, each once it is accepted (see
// rules.Store.SendAlerts). send may be called again for an alert it accepted if trueup stopped
// before recording that, so it must drop a repeat (the notices outbox does).
func WithAlerts(send func(ctx context.Context, a rules.Alert) error) Option {
	return func(m *Monitor) { m.send = send }
}

// WithBuiltIn names the kinds of the results the runner adds of its own, beside the rules'
// (the stale-writer check, app.KindWrittenAfterLive): Latest lists them with the rules'.
func WithBuiltIn(kinds ...rules.Kind) Option {
	return func(m *Monitor) { m.builtIn = append(m.builtIn, kinds...) }
}

// New returns a monitor over a rule set. Only rules with a schedule are scheduled; any rule
// can be run with RunNow.
func New(rs []*rules.Rule, runner Runner, store Recorder, slots SlotStore, opts ...Option) *Monitor {
	m := &Monitor{
		rules: rs, byName: map[string]*rules.Rule{}, runner: runner, store: store, slots: slots,
		clock: wallClock{}, log: slog.New(slog.DiscardHandler),
		running: map[string]bool{}, next: map[string]time.Time{}, last: map[string]rules.Result{},
		wake: make(chan struct{}, 1), trigger: rules.TriggerManual, finished: make(chan struct{}), busyWait: DefaultBusyWait,
	}
	for _, r := range rs {
		m.byName[r.Name] = r
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Rules returns every rule the monitor knows, scheduled or not, in name order.
func (m *Monitor) Rules() []*rules.Rule {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sortedRules()
}

func (m *Monitor) sortedRules() []*rules.Rule {
	out := append([]*rules.Rule{}, m.rules...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Rule returns a rule by name.
func (m *Monitor) Rule(name string) (*rules.Rule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.byName[name]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("monitor: %w", rules.NotFound(name))
}

// Run schedules rules until ctx ends, then waits for the runs in flight. A rule whose slot was
// missed while trueup was down runs once, straight away; a rule never scheduled before starts
// counting from now. Alerts recorded while the monitor was not running are handed on first.
func (m *Monitor) Run(ctx context.Context) error {
	if err := m.Load(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: nothing went wrong
		}
		return err
	}
	defer m.wg.Wait()
	m.sendAlerts(ctx) // those raised while the monitor was not running: by check, or before a crash
	for {
		now := m.clock.Now()
		m.dispatch(ctx, now)
		var timer <-chan time.Time // none: wait for a reload or the end
		if wait, ok := m.untilNext(now); ok {
			timer = m.clock.After(wait)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-timer:
		case <-m.wake:
		}
	}
}

// Load reads the last results (for status and metrics) and each scheduled rule's last slot, once:
// Run does it first, and a server calls it before it answers, so that its first pages show the
// rules' statuses rather than "never run".
func (m *Monitor) Load(ctx context.Context) error {
	m.mu.Lock()
	loaded := m.loaded
	m.mu.Unlock()
	if loaded {
		return nil
	}
	latest, err := m.store.Latest(ctx)
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, res := range latest {
		if _, ok := m.byName[name]; ok {
			m.last[name] = res
		}
	}
	next, err := m.nextSlots(ctx, m.rules, now)
	if err != nil {
		return err
	}
	m.next, m.loaded = next, true
	return nil
}

// nextSlots is each scheduled rule's next slot: after its last recorded one, so a missed slot
// runs once straight away, or after now for a rule never scheduled before.
func (m *Monitor) nextSlots(ctx context.Context, rs []*rules.Rule, now time.Time) (map[string]time.Time, error) {
	m.slotMu.Lock()
	defer m.slotMu.Unlock()
	next := map[string]time.Time{}
	for _, r := range rs {
		if r.Schedule == nil {
			continue
		}
		last, ok, err := m.slots.LastSlot(ctx, r.Name)
		if err != nil {
			return nil, err
		}
		if !ok {
			// nothing was missed: remember that the rule is scheduled from now on
			if err := m.slots.RecordSlot(ctx, r.Name, r.Schedule.String(), now); err != nil {
				return nil, err
			}
			last = now
		}
		next[r.Name] = r.Schedule.Next(last)
	}
	return next, nil
}

// Replace puts a reloaded rule set in place of the current one, as `trueup serve` does when
// told to reload: added and changed schedules count from their last recorded slot (from now
// for a rule never scheduled), removed rules stop being scheduled and listed, and runs in
// flight finish with the rules they started with.
func (m *Monitor) Replace(ctx context.Context, rs []*rules.Rule) error {
	next, err := m.nextSlots(ctx, rs, m.clock.Now())
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	byName := map[string]*rules.Rule{}
	for _, r := range rs {
		byName[r.Name] = r
	}
	m.mu.Lock()
	m.rules, m.byName, m.next = rs, byName, next
	for name := range m.last {
		if _, ok := byName[name]; !ok {
			delete(m.last, name)
		}
	}
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
	return nil
}

// untilNext returns how long until the earliest next slot.
func (m *Monitor) untilNext(now time.Time) (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var first time.Time
	for _, t := range m.next {
		if !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	if first.IsZero() {
		return 0, false
	}
	return first.Sub(now), true
}

// dispatch starts one run of every rule whose slot has come and that is not running. Slots
// missed in between (downtime, a long run) collapse into the newest one: it runs once.
func (m *Monitor) dispatch(ctx context.Context, now time.Time) {
	m.mu.Lock()
	var due []*rules.Rule
	slots := map[string]time.Time{}
	for _, r := range m.rules {
		next, ok := m.next[r.Name]
		if !ok || next.IsZero() || next.After(now) {
			continue
		}
		slot := next
		for n := r.Schedule.Next(slot); !n.IsZero() && !n.After(now); n = r.Schedule.Next(n) {
			slot = n
		}
		m.next[r.Name] = r.Schedule.Next(slot)
		if m.running[r.Name] {
			m.log.Warn("scheduled run skipped: the previous run is still going", "rule", r.Name, "slot", slot)
			continue
		}
		m.running[r.Name] = true
		due = append(due, r)
		slots[r.Name] = slot
	}
	m.mu.Unlock()
	if len(due) == 0 {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		run, err := m.execute(ctx, due, rules.TriggerSchedule, "monitor")
		if err != nil {
			m.log.Error("scheduled run not recorded", "err", err)
			return // slots stay as they were: the run counts as missed
		}
		for _, r := range due {
			if err := m.slots.RecordSlot(context.WithoutCancel(ctx), r.Name, r.Schedule.String(), slots[r.Name]); err != nil {
				m.log.Error("slot not recorded", "rule", r.Name, "err", err)
			}
		}
		m.log.Info("scheduled run", "run", run.ID, "rules", len(due), "queries", run.Queries)
	}()
}

// RunNow runs one rule at once and records the run; Busy when it is already running.
func (m *Monitor) RunNow(ctx context.Context, name, actor string) (*rules.Run, error) {
	r, err := m.Rule(name)
	if err != nil {
		return nil, err
	}
	rs := []*rules.Rule{r}
	if err := m.claim(ctx, rs); err != nil {
		return nil, err
	}
	return m.execute(ctx, rs, m.trigger, actor)
}

// claim marks rs running for a run on demand, once none of them is: it waits up to busyWait for
// those that are (a `trueup check` right after a swap, whose rules the monitor reruns), then is
// Busy naming one.
func (m *Monitor) claim(ctx context.Context, rs []*rules.Rule) error {
	timer := time.NewTimer(m.busyWait)
	defer timer.Stop()
	m.mu.Lock()
	for {
		busy := ""
		for _, r := range rs {
			if m.running[r.Name] {
				busy = r.Name
				break
			}
		}
		if busy == "" {
			for _, r := range rs {
				m.running[r.Name] = true
			}
			m.mu.Unlock()
			return nil
		}
		finished := m.finished
		m.mu.Unlock()
		if m.busyWait <= 0 {
			return fmt.Errorf("monitor: %w", Busy(busy))
		}
		select {
		case <-finished:
		case <-timer.C:
			return fmt.Errorf("monitor: %w", Busy(busy))
		case <-ctx.Done():
			return ctx.Err()
		}
		m.mu.Lock()
	}
}

// execute runs rules that are marked running, records the run and hands on its alerts.
func (m *Monitor) execute(ctx context.Context, rs []*rules.Rule, trigger, actor string) (*rules.Run, error) {
	defer func() {
		m.mu.Lock()
		for _, r := range rs {
			delete(m.running, r.Name)
		}
		close(m.finished)
		m.finished = make(chan struct{})
		m.mu.Unlock()
	}()
	run := m.runner.Run(ctx, rs)
	run.Trigger = trigger
	if ctx.Err() != nil {
		return nil, ctx.Err() // interrupted, not judged: nothing to record
	}
	alerts, err := m.store.SaveRun(context.WithoutCancel(ctx), run, actor)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	for _, res := range run.Results {
		m.last[res.Rule] = res
	}
	m.mu.Unlock()
	for _, a := range alerts {
		m.log.Warn("rule alert", "rule", a.Rule, "from", a.From, "to", a.To, "message", a.Message)
	}
	m.sendAlerts(context.WithoutCancel(ctx))
	if m.onRun != nil {
		m.onRun(run, alerts)
	}
	return run, nil
}

// sendAlerts hands on every recorded alert not handed on yet. One that cannot be stays in the
// ledger and goes with the next run, or at the next start.
func (m *Monitor) sendAlerts(ctx context.Context) {
	if m.send == nil {
		return
	}
	n, err := m.store.SendAlerts(ctx, m.send)
	if err != nil {
		m.log.Error("alerts not handed on yet; they go with the next run", "handed_on", n, "err", err)
	}
}

// Plan is what a rule compiles to when it runs on its own, without running it: the SQL that
// `trueup check --explain --rule` prints.
func (m *Monitor) Plan(name string) (*rules.Plan, error) {
	r, err := m.Rule(name)
	if err != nil {
		return nil, err
	}
	return m.runner.Plan([]*rules.Rule{r}), nil
}

// History returns a rule's results, newest first.
func (m *Monitor) History(ctx context.Context, rule string, limit int) ([]rules.Result, error) {
	return m.store.History(ctx, rule, limit)
}

// Alerts returns the alerts of one rule (or of all, for ""), newest first.
func (m *Monitor) Alerts(ctx context.Context, rule string, limit int) ([]rules.Alert, error) {
	return m.store.Alerts(ctx, rule, limit)
}

// Latest is the last recorded result of every rule and of every built-in check (WithBuiltIn),
// in name order: what the ledger holds of the runs of trueup check, the schedule and run now, as
// check reported each. The result of a rule no longer in the set is left out.
func (m *Monitor) Latest(ctx context.Context) ([]rules.Result, error) {
	latest, err := m.store.Latest(ctx)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	m.mu.Lock()
	out := make([]rules.Result, 0, len(latest))
	for name, res := range latest {
		if _, ok := m.byName[name]; ok || slices.Contains(m.builtIn, res.Kind) {
			out = append(out, res)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b rules.Result) int { return strings.Compare(a.Rule, b.Rule) })
	return out, nil
}

// Status is what the monitor knows about one rule now.
type Status struct {
	Rule    *rules.Rule
	Last    *rules.Result // nil before the first run
	Next    time.Time     // zero when not scheduled
	Running bool
}

// Statuses returns every rule's status, in name order.
func (m *Monitor) Statuses() []Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Status, 0, len(m.rules))
	for _, r := range m.sortedRules() {
		s := Status{Rule: r, Next: m.next[r.Name], Running: m.running[r.Name]}
		if res, ok := m.last[r.Name]; ok {
			s.Last = &res
		}
		out = append(out, s)
	}
	return out
}
