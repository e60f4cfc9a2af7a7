package backfill

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"trueup/fault"
	"trueup/rules"
)

// Service runs backfills in the background of a long-lived process (the server): a run started
// from a page goes on after the request ends, can be cancelled from another request, and is
// stopped cleanly after its partitions in flight when the process shuts down.
type Service struct {
	Runner *Runner
	Log    *slog.Logger

	mu sync.Mutex
	// running holds every run a goroutine of this service is building, from before its build
	// starts until the goroutine has returned: a cancelled run stays here while the partitions
	// in flight end, so a resume cannot start a second build beside it.
	running map[int64]*worker
	plans   map[string]cachedPlan // backfill → its latest computed plan
	wg      sync.WaitGroup
	// files is held to read while a run is started, resumed or caught up, and to write by Reload:
	// a run starts and builds with one version of its backfill's file.
	files sync.RWMutex
}

// Reload makes set the backfills of the service, and rs the rules their validations run (nil:
// the project has none now), as a serving process does when told its files changed (SIGHUP).
// Refused (conflict) while a run of the service is building: a run reads its backfill's file as
// it goes, and would build its partitions by two versions of it.
func (s *Service) Reload(set *Set, rs *rules.Set) error {
	s.files.Lock()
	defer s.files.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if ids := slices.Sorted(maps.Keys(s.running)); len(ids) > 0 {
		return fault.New(fault.Conflict, "Run %d is being built now: backfill files are reloaded once no run is building.", ids[0])
	}
	v := s.Runner.Validator.Rules
	if v == nil && rs != nil && len(rs.Rules) > 0 {
		return fault.New(fault.Conflict, "The project had no rules when the server started: restart it for backfills to validate with rules/.")
	}
	if v != nil {
		if rs == nil {
			rs = &rules.Set{}
		}
		v.Replace(rs)
	}
	s.Runner.Planner.Set.Replace(set)
	s.plans = nil
	return nil
}

// planTTL is how long a computed plan is shown again before it is computed anew: a plan reads
// every input (and may run a rule), too much to do for every page view.
const planTTL = 30 * time.Second

type cachedPlan struct {
	plan *Plan
	at   time.Time
}

// Summary is one backfill file with its latest run, for the list page.
type Summary struct {
	Backfill *Backfill `json:"-"`
	Name     string    `json:"name"`
	Table    string    `json:"table"`
	Reason   string    `json:"reason"`
	Scope    string    `json:"scope"`
	// Tables are the tables a run of it writes: its own, then the downstream ones, transitively.
	Tables []string `json:"tables"`
	// Latest is the newest run that wrote its table with its transform: its own, or, for a
	// backfill that refreshes a downstream table, the run of the upstream backfill (Via).
	Latest *Status `json:"latest_run,omitempty"`
	Via    string  `json:"via,omitempty"`
	// LastAt is when the latest run ended, or started while it has not.
	LastAt *time.Time `json:"last_at,omitempty"`
}

// List returns every backfill with the latest run that wrote with it.
func (s *Service) List(ctx context.Context) ([]Summary, error) {
	var out []Summary
	for _, b := range s.Runner.Planner.Set.All() {
		sum := Summary{Backfill: b, Name: b.Name, Table: b.Table, Reason: b.Reason, Scope: b.Scope.Format(b.Grain),
			Tables: s.Runner.Planner.Set.Writes(b)}
		run, err := s.Runner.Store.LatestRunWriting(ctx, b.Name)
		switch {
		case errors.Is(err, fault.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			if sum.Latest, err = s.Runner.Store.StatusOf(ctx, run.ID, s.Runner.now()); err != nil {
				return nil, err
			}
			if run.Backfill != b.Name {
				sum.Via = run.Backfill
			}
			at := run.CreatedAt
			if run.FinishedAt != nil {
				at = *run.FinishedAt
			}
			sum.LastAt = &at
		}
		out = append(out, sum)
	}
	return out, nil
}

// Plan returns a backfill's plan, computed and stored anew when the last one is older than
// planTTL or a run has started since. A scope replaces the file's (that plan is neither cached
// nor stored).
func (s *Service) Plan(ctx context.Context, name, actor string, scope *Scope) (*Plan, error) {
	s.files.RLock() // a plan of the file as it was is not cached past a reload
	defer s.files.RUnlock()
	b, err := s.Runner.Planner.Set.Get(name)
	if err != nil {
		return nil, err
	}
	if scope != nil {
		// Shown, not stored: a read writes nothing (runs and dry runs store the plan they follow).
		return s.Runner.Planner.Plan(ctx, b, scope)
	}
	now := s.Runner.now()
	s.mu.Lock()
	c, ok := s.plans[name]
	s.mu.Unlock()
	if ok && now.Sub(c.at) < planTTL {
		return c.plan, nil
	}
	p, err := s.Runner.Planner.Plan(ctx, b, nil)
	if err != nil {
		return nil, err
	}
	if _, err := s.Runner.Store.SavePlan(ctx, actor, p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.plans == nil {
		s.plans = map[string]cachedPlan{}
	}
	s.plans[name] = cachedPlan{plan: p, at: now}
	s.mu.Unlock()
	return p, nil
}

// forget drops a cached plan: a run changes what the next plan says.
func (s *Service) forget(name string) {
	s.mu.Lock()
	delete(s.plans, name)
	s.mu.Unlock()
}

// DryRun previews a backfill, writing nothing; a scope replaces the file's.
func (s *Service) DryRun(ctx context.Context, name string, scope *Scope) (*Preview, error) {
	return s.Runner.DryRun(ctx, name, scope)
}

// Start creates a run and builds it in the background; sample > 0 stops for review after
// that many partitions, and a scope replaces the file's.
func (s *Service) Start(ctx context.Context, name, actor string, sample int, scope *Scope) (*Run, error) {
	return s.StartRun(ctx, name, RunOptions{Actor: actor, Sample: sample, Scope: scope})
}

// StartRun is Start with every choice of RunOptions.
func (s *Service) StartRun(ctx context.Context, name string, opt RunOptions) (*Run, error) {
	s.files.RLock()
	defer s.files.RUnlock()
	run, err := s.Runner.Start(ctx, name, opt)
	if err != nil {
		return nil, err
	}
	s.forget(name)
	s.background(run.ID, opt.Sample) // false only when a resume got to the new run first: it is built once
	return run, nil
}

// Resume builds what is left of a backfill's latest run in the background, as asked by actor.
// The run reads running, and this process's, before Resume returns: who waits on its status from
// now on sees the build, not the state it was resumed from (cancelled, interrupted, …).
func (s *Service) Resume(ctx context.Context, name, actor string) (*Run, error) {
	s.files.RLock()
	defer s.files.RUnlock()
	run, err := s.latest(ctx, name)
	if err != nil {
		return nil, err
	}
	// A run that is not in the state a request needs is a conflict (409, exit 1), as every
	// "already in that state" is: the request itself was well formed.
	switch run.State {
	case RunValidated, RunValidationFailed:
		return nil, fault.New(fault.Conflict, "Run %d is %s: nothing left to build (start a new run).", run.ID, run.State)
	}
	w, ok, err := s.reserveStopped(ctx, run)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.New(fault.Conflict, "Run %d is being built now (or stopping after its partitions in flight): try again when it has stopped.", run.ID)
	}
	if err := s.Runner.resumed(ctx, run.ID); err != nil {
		s.release(run.ID)
		return nil, err
	}
	if l, ok := s.Runner.listener.(Interruptions); ok && run.State == RunCancelled {
		l.RunResumed(ctx, run, actor)
	}
	s.build(run.ID, 0, w)
	return run, nil
}

// Cancel stops a backfill's latest run after the partitions in flight, and ends the older
// runs of it that failed.
func (s *Service) Cancel(ctx context.Context, name, actor string) (*Run, error) {
	run, err := s.latest(ctx, name)
	if err != nil {
		return nil, err
	}
	// The older runs that failed go too: each left a version building that only a retry would
	// finish, which could not be retired and held adopt --undo (cancel reached the newest only).
	older, err := s.Runner.Store.failedBefore(ctx, name, run.ID)
	if err != nil {
		return nil, err
	}
	for _, id := range older {
		if _, err := s.Runner.Cancel(ctx, id, actor); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	w, ok := s.running[run.ID]
	if ok {
		w.by, w.cancelled = actor, true
		w.stop() // it stays running until its goroutine returns
	}
	s.mu.Unlock()
	if !ok {
		return s.Runner.Cancel(ctx, run.ID, actor)
	}
	// Read after the stop: a run still building marks itself cancelled after the partitions in
	// flight, however long they take. A run past its build (validating, or recording its end)
	// ends soon, and what the cancel did is known once it has: wait for it.
	if run, err = s.Runner.Store.GetRun(ctx, run.ID); err != nil || run.State == RunRunning {
		return run, err
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if run, err = s.Runner.Store.GetRun(ctx, run.ID); err != nil {
		return nil, err
	}
	if run.State == RunValidated || run.State == RunValidationFailed {
		return nil, fault.New(fault.Conflict, "Run %d ended %s before the cancel reached it: nothing to cancel.", run.ID, run.State)
	}
	return run, nil
}

// Status is a backfill's latest run's progress.
func (s *Service) Status(ctx context.Context, name string) (*Status, error) {
	run, err := s.latest(ctx, name)
	if err != nil {
		return nil, err
	}
	st, err := s.Runner.Store.StatusOf(ctx, run.ID, s.Runner.now())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if w, ok := s.running[run.ID]; ok && w.cancelled {
		st.CancelAskedBy = w.by
	}
	s.mu.Unlock()
	if b, err := s.Runner.Planner.Set.Get(name); err == nil && b.Window != nil && st.State == RunRunning {
		if wait := b.Window.Until(s.Runner.now()); wait > 0 {
			st.Waiting = fmt.Sprintf("the window %s (UTC) opens in %s", b.Window, wait.Round(time.Minute))
		}
	}
	return st, nil
}

// latest is a backfill's newest run. A name that has no runs and no file is not a backfill at
// all, and is said so; a backfill whose file went after it ran still has its runs.
func (s *Service) latest(ctx context.Context, name string) (*Run, error) {
	run, err := s.Runner.Store.LatestRun(ctx, name)
	if errors.Is(err, fault.ErrNotFound) {
		if _, gerr := s.Runner.Planner.Set.Get(name); gerr != nil {
			return nil, gerr
		}
	}
	return run, err
}

// History counts past runs by reason.
func (s *Service) History(ctx context.Context) ([]ReasonCount, error) {
	return s.Runner.Store.History(ctx)
}

// worker is one goroutine building a run, and how to ask it to stop.
type worker struct {
	stopCh chan struct{}
	once   sync.Once
	done   chan struct{} // closed once the goroutine has recorded the run's end
	// by is who asked it to stop ("": the process shutting down), and cancelled whether that
	// was a cancel; both under Service.mu.
	by        string
	cancelled bool
}

func (w *worker) stop() { w.once.Do(func() { close(w.stopCh) }) }

// background builds a run in a goroutine of its own, unless one is building it already (false).
func (s *Service) background(id int64, sample int) bool {
	w, ok := s.reserve(id)
	if ok {
		s.build(id, sample, w)
	}
	return ok
}

// reserve records that a goroutine of this service is about to build run id, unless one is
// building it already (false).
func (s *Service) reserve(id int64) (*worker, bool) {
	w := &worker{stopCh: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.running[id]; busy {
		return nil, false
	}
	if s.running == nil {
		s.running = map[int64]*worker{}
	}
	s.running[id] = w
	s.wg.Add(1)
	return w, true
}

// reserveStopped reserves run, read from the ledger as stopped (not running, not validating),
// for a goroutine of this service. The run's own goroutine may still be on its way out then: it
// records the run's end before it lets go of the run, and who read that end (status said
// validation-failed) is not refused as if it were still building. So this waits a little for a
// goroutine holding a run the ledger still reads as stopped (not for a build: another resume
// that took the run marks it running first). False when the run is taken.
func (s *Service) reserveStopped(ctx context.Context, run *Run) (*worker, bool, error) {
	if w, ok := s.reserve(run.ID); ok || run.State == RunRunning || run.State == RunValidating {
		return w, ok, nil
	}
	s.mu.Lock()
	old, busy := s.running[run.ID]
	s.mu.Unlock()
	if !busy {
		w, ok := s.reserve(run.ID)
		return w, ok, nil
	}
	now, err := s.Runner.Store.GetRun(ctx, run.ID)
	if err != nil {
		return nil, false, err
	}
	if now.State == RunRunning || now.State == RunValidating {
		return nil, false, nil
	}
	select {
	case <-old.done:
	case <-time.After(endingWait):
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	w, ok := s.reserve(run.ID)
	return w, ok, nil
}

// endingWait is how long reserveStopped waits for a goroutine that recorded its run's end to
// let go of it: the listeners told, nothing more.
const endingWait = 10 * time.Second

// release undoes a reserve whose build does not start.
func (s *Service) release(id int64) {
	s.mu.Lock()
	if w, ok := s.running[id]; ok {
		close(w.done) // a cancel waiting on it goes on
	}
	delete(s.running, id)
	s.mu.Unlock()
	s.wg.Done()
}

// build builds run id in a goroutine, as w, reserved for it.
func (s *Service) build(id int64, sample int, w *worker) {
	go func() {
		defer s.wg.Done()
		defer close(w.done)
		stoppedBy := func() (string, bool) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return w.by, w.cancelled
		}
		ctx := context.Background()
		run, err := s.Runner.Execute(ctx, id, ExecOptions{Stop: w.stopCh, StoppedBy: stoppedBy, Limit: sample})
		if err != nil && s.Log != nil {
			s.Log.Error("backfill run failed", "run_id", id, "err", err)
		}
		s.mu.Lock()
		by, cancelled := w.by, w.cancelled
		delete(s.running, id)
		s.mu.Unlock()
		// A cancel that came after the run's last look at Stop, as it stopped for review, is
		// not lost: a sampled run can still be cancelled (a cancel from now on finds no worker
		// and cancels it itself).
		if cancelled && err == nil && run.State == RunSampled {
			if _, err := s.Runner.Cancel(ctx, id, by); err != nil && s.Log != nil {
				s.Log.Error("backfill cancel failed", "run_id", id, "err", err)
			}
		}
	}()
}

// Close stops every run after its partitions in flight and waits for them: a resume picks
// them up later.
func (s *Service) Close() {
	s.mu.Lock()
	for _, w := range s.running {
		w.stop()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// CatchUp brings a backfill's latest built run up to what the live versions hold now: in every
// table of the run, the partitions outside its scope that the pipeline wrote since the build are
// carried over, and those inside the scope whose live rows changed (the pipeline wrote into the
// days being fixed: the swap refuses to overwrite them) are rebuilt in the background, and the
// run is validated again (also when only partitions outside the scope were carried: the
// validation compared them with live as it is now). It returns the run as it was; refused when
// the run is not built yet, or live did not change at all since the build.
func (s *Service) CatchUp(ctx context.Context, name, actor string) (*Run, error) {
	s.files.RLock()
	defer s.files.RUnlock()
	run, err := s.latest(ctx, name)
	if err != nil {
		return nil, err
	}
	if run.State != RunValidated && run.State != RunValidationFailed {
		return nil, fault.New(fault.Conflict, "Run %d is %s: a catch-up recomputes what changed since a built run; resume or finish it first.", run.ID, run.State)
	}
	w, ok, err := s.reserveStopped(ctx, run)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.New(fault.Conflict, "Run %d is being built now: try again when it has stopped.", run.ID)
	}
	changed, carried, err := s.Runner.catchUp(ctx, run, actor)
	if err == nil && changed == 0 && carried == 0 {
		err = fault.New(fault.Conflict, "Nothing to catch up: the live version is as it was when run %d was built, inside its scope and outside it.", run.ID)
	}
	if err == nil {
		err = s.Runner.resumed(ctx, run.ID)
	}
	if err != nil {
		s.release(run.ID)
		return nil, err
	}
	s.build(run.ID, 0, w)
	return run, nil
}
