package backfill

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"trueup/fault"
	"trueup/ledger"
	tsql "trueup/sql"
	"trueup/views"
)

// Runner builds new versions for backfills in one target.
type Runner struct {
	Planner   Planner
	Store     Store
	Versions  views.Store
	Validator Validator

	clock    func() time.Time                                 // nil: the wall clock
	pause    func(ctx context.Context, d time.Duration) error // nil: a timer
	progress []func(Progress)
	listener Listener

	mu       sync.Mutex // serialises checkpoint writes
	starting sync.Mutex // one Start at a time reserves a table and its version numbers
}

// Listener hears about a run when it is created and when its validation ends, passed or not:
// cmd/trueup drafts the run's change notice and refreshes it from what it hears. It runs in the
// call that made the change; what it does with a failure of its own is its business.
type Listener interface {
	RunChanged(ctx context.Context, run *Run)
}

// Interruptions, when the Listener implements it too, hears who cancelled a run and who resumed
// one: the run's change notice is withdrawn while the run is off and drafted again when it is
// back. by is "" for a run stopped because the process shut down.
type Interruptions interface {
	RunCancelled(ctx context.Context, run *Run, by string)
	RunResumed(ctx context.Context, run *Run, by string)
}

// Option configures NewRunner.
type Option func(*Runner)

// WithListener tells l about every run when it is created and when its validation ends.
func WithListener(l Listener) Option { return func(r *Runner) { r.listener = l } }

// WithProgress tells fn about every partition as it starts and ends. Given more than once, each
// fn hears, in the order given.
func WithProgress(fn func(Progress)) Option {
	return func(r *Runner) { r.progress = append(r.progress, fn) }
}

// WithClock replaces the wall clock and the pauses of throttles and windows, for tests.
func WithClock(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(r *Runner) { r.clock, r.pause = now, sleep }
}

// NewRunner returns the runner that plans with p, records its runs in s and their versions in the
// same ledger, and validates them with v. A Runner written as a literal is one without options.
func NewRunner(p Planner, s Store, v Validator, opts ...Option) *Runner {
	r := &Runner{Planner: p, Store: s, Versions: views.Store{L: s.L}, Validator: v}
	if r.Planner.Versions == nil {
		r.Planner.Versions = r.Versions // the plan names the version reserve will number
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Progress is one step of a run.
type Progress struct {
	RunID     int64
	Table     string
	Partition string
	State     string
	Rows      int64
	Done      int
	Total     int
}

// RunOptions are the choices made when a run starts.
type RunOptions struct {
	Actor  string
	Sample int    // build and validate only this many partitions, then stop for review
	Scope  *Scope // replaces the file's scope
	// AllowFullRewrite lets a run rewrite a table with no partitions larger than the
	// planner's FullRewriteRows (--allow-full-rewrite).
	AllowFullRewrite bool
}

func (r *Runner) now() time.Time {
	if r.clock != nil {
		return r.clock().UTC()
	}
	return time.Now().UTC()
}

func (r *Runner) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if r.pause != nil {
		return r.pause(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Start plans a backfill and records a new run with its versions, without building anything.
// A plan with blocking findings is refused as invalid; a table with a run in progress as a
// conflict, as is a version number another start took first (of a downstream table
// two upstream tables share). The check for a run in progress, the run and the numbers of the
// versions it builds are written in one ledger transaction, so of two starts at once (a
// double-clicked Run) exactly one gets the table and the other a conflict.
func (r *Runner) Start(ctx context.Context, name string, opt RunOptions) (*Run, error) {
	b, err := r.Planner.Set.Get(name)
	if err != nil {
		return nil, err
	}
	plan, err := r.Planner.Plan(ctx, b, opt.Scope)
	if err != nil {
		return nil, err
	}
	if plan.Blocked() {
		var msgs []string
		for _, f := range plan.Findings {
			if f.Severity == "blocking" {
				msgs = append(msgs, f.Message)
			}
		}
		return nil, fault.New(fault.Invalid, "Backfill %s is blocked: %s.", name, strings.TrimSuffix(strings.Join(msgs, "; "), "."))
	}
	if full := plan.fullRewritesRefused(); len(full) > 0 && !opt.AllowFullRewrite {
		return nil, fault.New(fault.Invalid, "Backfill %s is refused: %s, more than the %s rows a run rewrites unasked; run it allowing a full rewrite (--allow-full-rewrite; allow_full_rewrite=true in the API).",
			name, strings.Join(full, "; "), count(r.Planner.fullRewriteRows()))
	}
	if opt.Actor == "" {
		opt.Actor = "local"
	}
	run := &Run{Backfill: b.Name, Target: r.Planner.Target, Table: b.Table, Reason: b.Reason, Actor: opt.Actor,
		CodeSHA: b.CodeSHA(), Sample: opt.Sample, Plan: plan}
	tables, parts := plan.byTable(b.Table)
	if err := r.reserve(ctx, b, run, tables, parts); err != nil {
		return nil, err
	}
	created, err := r.Store.GetRun(ctx, run.ID)
	if err == nil && r.listener != nil {
		r.listener.RunChanged(ctx, created)
	}
	return created, err
}

// reserve numbers the versions run builds of tables (the upstream first) and records the run
// with them. Starts in this process take turns through it, and only through it: a start that
// drafts a notice (Changed) does so after its run is recorded, while the next start reserves.
// The ledger transaction in createRun guards against starts in other processes.
func (r *Runner) reserve(ctx context.Context, b *Backfill, run *Run, tables []string, parts map[string][]string) error {
	r.starting.Lock()
	defer r.starting.Unlock()
	if err := r.refuseActive(ctx, b.Table); err != nil {
		return err
	}
	rels, err := r.Planner.Engine.Relations(ctx)
	if err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	for _, t := range tables {
		n, err := r.Versions.NextNumber(ctx, r.Planner.Target, t, versionsIn(rels, t))
		if err != nil {
			return err
		}
		tb := b
		if t != b.Table {
			tb = r.Planner.Set.ForTable(t)
		}
		run.Tables = append(run.Tables, RunTable{Table: t, Backfill: tb.Name, Version: n, CodeSHA: tb.CodeSHA()})
	}
	if _, err := r.Store.createRun(ctx, run, parts); err != nil {
		// Another start took the table, or one of these version numbers, first.
		if cerr := r.refuseActive(context.WithoutCancel(ctx), b.Table); cerr != nil {
			return cerr
		}
		if errors.Is(err, errTableBusy) {
			return fault.New(fault.Conflict, "%s: %v.", b.Table, err)
		}
		return err
	}
	return nil
}

// refuseActive returns a conflict, naming the run, when table has a run in progress.
func (r *Runner) refuseActive(ctx context.Context, table string) error {
	active, err := r.active(ctx, table)
	if err != nil {
		return err
	}
	if active == nil {
		return nil
	}
	if active.State == RunInterrupted {
		return fault.New(fault.Conflict, "%s has run %d (%s, started by %s at %s), interrupted: the process building it (pid %d) is gone. Resume it (trueup backfill resume %s) or cancel it (trueup backfill cancel %s) before starting a new run.",
			table, active.ID, active.Backfill, active.Actor, active.CreatedAt.Format(time.RFC3339), active.OwnerPID(), active.Backfill, active.Backfill)
	}
	return fault.New(fault.Conflict, "%s has run %d (%s, started by %s at %s): resume it, or cancel it first (trueup backfill cancel %s).",
		table, active.ID, active.Backfill, active.Actor, active.CreatedAt.Format(time.RFC3339), active.Backfill)
}

// active returns a run of table that is still running, if any.
func (r *Runner) active(ctx context.Context, table string) (*Run, error) {
	var id int64
	err := r.Store.L.DB().QueryRowContext(ctx, activeRunQuery, table, RunRunning, RunValidating).Scan(&id)
	if errors.Is(err, dbsql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("backfill: runs of %s: %w", table, err)
	}
	return r.Store.GetRun(ctx, id)
}

// activeRunQuery finds the newest run of a table that is running or validating.
const activeRunQuery = `SELECT id FROM backfill_runs WHERE table_name = ? AND state IN (?, ?) ORDER BY id DESC LIMIT 1`

// ExecOptions control one pass of building.
type ExecOptions struct {
	// Stop, when closed, ends the pass after the partitions in flight: the run is cancelled.
	Stop <-chan struct{}
	// StoppedBy says who closed Stop ("": the process shutting down) and whether to cancel the
	// run: a cancel that comes while the run validates ends it cancelled, a shutdown lets the
	// validation finish.
	StoppedBy func() (by string, cancel bool)
	// Limit builds at most this many partitions of the upstream table (for --sample).
	Limit int
}

// Execute builds every partition of a run that is not done yet, table by table (upstream
// first), then validates. It is what run, resume and retry all call: a partition that was in
// flight when a process died is simply built again, which replaces it.
func (r *Runner) Execute(ctx context.Context, runID int64, opt ExecOptions) (*Run, error) {
	run, err := r.Store.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if err := r.claim(ctx, runID); err != nil {
		return nil, err
	}
	if err := r.setRun(ctx, runID, RunRunning, "", nil); err != nil {
		return nil, err
	}
	if err := r.dropStaging(ctx, run); err != nil {
		return r.fail(ctx, run, err)
	}
	limit := map[string][]string{}
	if opt.Limit > 0 {
		if limit, err = r.sampleParts(ctx, run, opt.Limit); err != nil {
			return nil, err
		}
	}
	built := map[string]string{} // logical → physical of tables this run built before
	for _, t := range run.Tables {
		b, err := r.Planner.Set.Get(t.Backfill)
		if err != nil {
			return r.fail(ctx, run, err)
		}
		if b.CodeSHA() != t.CodeSHA {
			return r.fail(ctx, run, fmt.Errorf("the transform of %s changed since run %d started (sha256 %s…, now %s…): start a new run",
				b.Path, run.ID, t.CodeSHA[:12], b.CodeSHA()[:12]))
		}
		physical := views.Physical(t.Table, t.Version)
		if !t.Prepared {
			if err := r.prepare(ctx, run, t, b, physical); err != nil {
				return r.fail(ctx, run, err)
			}
		}
		stopped, failed, err := r.buildTable(ctx, run, t, b, physical, built, limit[t.Table], opt)
		if err != nil {
			return r.fail(ctx, run, err)
		}
		if !stopped && failed == 0 && opt.Limit == 0 {
			if err := r.Versions.RecordBuilt(ctx, r.Planner.Engine, run.Target, t.Table, t.Version, b.Mode != ModeFullRebuild); err != nil {
				return r.fail(ctx, run, err)
			}
		}
		if stopped {
			by, _ := opt.stoppedBy()
			return r.stop(ctx, run, nil, by, "stopped after the partitions in flight")
		}
		if failed > 0 {
			return r.fail(ctx, run, fmt.Errorf("%d %s of %s failed: retry %s with backfill retry", failed, pluralOf("partition", failed), t.Table,
				map[bool]string{true: "it", false: "them"}[failed == 1]))
		}
		built[t.Table] = physical
	}
	return r.validate(ctx, run, opt)
}

// stoppedBy is who closed Stop and whether it was a cancel, once it is closed.
func (o ExecOptions) stoppedBy() (string, bool) {
	if o.StoppedBy == nil {
		return "", false
	}
	return o.StoppedBy()
}

// cancelledNow reports whether a cancel has closed Stop, and who it was.
func (o ExecOptions) cancelledNow() (string, bool) {
	select {
	case <-o.Stop:
		return o.stoppedBy()
	default:
		return "", false
	}
}

// stop ends a run that Stop stopped, cancelled by by, keeping the validation it has (nil: none);
// detail goes to the audit log.
func (r *Runner) stop(ctx context.Context, run *Run, v *Validation, by, detail string) (*Run, error) {
	r.setRun(ctx, run.ID, RunCancelled, "", v)
	r.audit(ctx, run, "backfill.cancel", ledger.OutcomeOK, detail)
	r.setVersions(ctx, run, views.StateCancelled, nil)
	return r.cancelled(ctx, run.ID, by)
}

// cancelled is run id as it is once cancelled by by, after its listener has heard.
func (r *Runner) cancelled(ctx context.Context, id int64, by string) (*Run, error) {
	run, err := r.Store.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if l, ok := r.listener.(Interruptions); ok {
		l.RunCancelled(ctx, run, by)
	}
	return run, nil
}

// sampleParts picks the first n upstream partitions and the downstream partitions they affect.
func (r *Runner) sampleParts(ctx context.Context, run *Run, n int) (map[string][]string, error) {
	parts, err := r.Store.Partitions(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, p := range parts {
		if p.Table == run.Table && len(out[p.Table]) < n {
			out[p.Table] = append(out[p.Table], p.Partition)
		}
	}
	for _, p := range parts {
		if p.Table != run.Table && slices.Contains(out[run.Table], p.Partition) {
			out[p.Table] = append(out[p.Table], p.Partition)
		}
	}
	return out, nil
}

// prepare creates the new version beside the live one and carries over the partitions outside
// the run's scope. It starts from scratch each time: until it is checkpointed nothing in the
// new table counts.
func (r *Runner) prepare(ctx context.Context, run *Run, t RunTable, b *Backfill, physical string) error {
	e := r.Planner.Engine
	live, err := e.ViewSource(ctx, t.Table)
	if err != nil {
		return fmt.Errorf("table %s: %w", t.Table, err)
	}
	r.mu.Lock()
	err = r.Store.clearShards(ctx, run.ID, t.Table) // the version is made anew: no shard of it is written
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if err := e.DropTable(ctx, physical); err != nil {
		return fmt.Errorf("prepare %s: %w", physical, err)
	}
	if err := e.CreateTableLike(ctx, physical, live); err != nil {
		return fmt.Errorf("prepare %s: %w", physical, err)
	}
	windows, err := r.windows(ctx, run, t, b, live)
	if err != nil {
		return err
	}
	// What live holds now, per partition, so that a swap can tell what the pipeline wrote to it
	// meanwhile and carry that too (views/carry.go).
	scope := make([]time.Time, len(windows))
	for i, w := range windows {
		scope[i] = w.Start
	}
	// Live's write mark before the measure and after the carry: unmoved, the basis is also the
	// fingerprint of the partitions carried (views.RecordBuilt). Settled, it stays as it is
	// while nothing writes to live, so that the validation can tell the basis still describes
	// live (views.LiveFingerprints).
	before, err := tsql.SettledWriteMark(ctx, e, live)
	if err != nil {
		return fmt.Errorf("prepare %s: %w", physical, err)
	}
	if len(windows) > 0 {
		if err := r.Versions.RecordBasis(ctx, e, run.Target, t.Table, t.Version, live, before, b.Partition, windows[0].Type, b.Grain, scope); err != nil {
			return fmt.Errorf("prepare %s: %w", physical, err)
		}
	}
	if b.Mode != ModeFullRebuild {
		if err := e.CopyPartitions(ctx, physical, live, b.Partition, windows); err != nil {
			return fmt.Errorf("carry over %s into %s: %w", live, physical, err)
		}
	}
	if after, err := e.WriteMark(ctx, live); err != nil {
		return fmt.Errorf("prepare %s: %w", physical, err)
	} else if len(windows) > 0 && before != "" && after == before {
		if err := r.Versions.CarriedExactly(ctx, run.Target, t.Table, t.Version); err != nil {
			return fmt.Errorf("prepare %s: %w", physical, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Store.markPrepared(ctx, run.ID, t.Table)
}

// windows turns a table's partitions in this run into engine windows.
func (r *Runner) windows(ctx context.Context, run *Run, t RunTable, b *Backfill, live string) ([]tsql.Window, error) {
	typ, err := r.partitionType(ctx, live, b.Partition)
	if err != nil {
		return nil, err
	}
	parts, err := r.Store.Partitions(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	out, _, err := tableWindows(parts, t.Table, b, typ)
	return out, err
}

// tableWindows are the engine windows of table's partitions among parts, in order, and those
// partitions.
func tableWindows(parts []PartitionState, table string, b *Backfill, typ tsql.Type) ([]tsql.Window, []PartitionState, error) {
	var out []tsql.Window
	var of []PartitionState
	for _, p := range parts {
		if p.Table != table {
			continue
		}
		start, err := ParsePartition(p.Partition, b.Grain)
		if err != nil {
			return nil, nil, err
		}
		out, of = append(out, window(b.Partition, typ, start, b.Grain)), append(of, p)
	}
	return out, of, nil
}

func (r *Runner) partitionType(ctx context.Context, rel, col string) (tsql.Type, error) {
	cols, err := r.Planner.Engine.Columns(ctx, rel)
	if err != nil {
		return 0, err
	}
	for _, c := range cols {
		if c.Name == col {
			return c.Kind, nil
		}
	}
	return 0, fmt.Errorf("%s has no column %s", rel, col)
}

func (r *Runner) fail(ctx context.Context, run *Run, cause error) (*Run, error) {
	r.setRun(context.WithoutCancel(ctx), run.ID, RunFailed, cause.Error(), nil)
	r.audit(context.WithoutCancel(ctx), run, "backfill.run", ledger.OutcomeFailed, cause.Error())
	return nil, fmt.Errorf("backfill %s: run %d: %w", run.Backfill, run.ID, cause)
}

func (r *Runner) audit(ctx context.Context, run *Run, action, outcome, detail string) {
	r.Store.L.Audit(ctx, ledger.Entry{Actor: run.Actor, Action: action, Target: run.Table,
		Params: map[string]any{"backfill": run.Backfill, "run_id": run.ID}, Outcome: outcome, Detail: detail})
}

// dropStaging drops the staging tables a process killed during a partition replace left beside
// the versions run builds (see tsql.StagingTables); only these versions', which nothing else
// writes into while this process owns the run.
func (r *Runner) dropStaging(ctx context.Context, run *Run) error {
	var dropped []string
	for _, t := range run.Tables {
		names, err := tsql.DropStagingTables(ctx, r.Planner.Engine, views.Physical(t.Table, t.Version))
		dropped = append(dropped, names...)
		if err != nil {
			return err
		}
	}
	if len(dropped) > 0 {
		r.audit(ctx, run, "backfill.tidy", ledger.OutcomeOK, "dropped staging tables left by a killed process: "+strings.Join(dropped, ", "))
	}
	return nil
}

// resumed records a run about to be built again as running and this process's, as Execute does
// first.
func (r *Runner) resumed(ctx context.Context, id int64) error {
	if err := r.claim(ctx, id); err != nil {
		return err
	}
	return r.setRun(ctx, id, RunRunning, "", nil)
}

// claim records this process as the one building the run.
func (r *Runner) claim(ctx context.Context, id int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Store.claim(ctx, id)
}

// setRun records a run's state. Ledger writes of one runner go one at a time: DuckDB refuses
// two transactions that update the same row at once (a cancel from a page while the run ends).
func (r *Runner) setRun(ctx context.Context, id int64, state, errText string, validation any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Store.setRun(ctx, id, state, errText, validation)
}

func (r *Runner) setVersions(ctx context.Context, run *Run, state string, v *Validation) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range run.Tables {
		ver, err := r.Versions.Get(ctx, run.Target, t.Table, t.Version)
		if err != nil {
			return err
		}
		ver.State = state
		if v != nil {
			for _, tv := range v.Tables {
				if tv.Table == t.Table {
					ver.Rows, ver.Checksum, ver.DiffID = tv.Rows, tv.Checksum, tv.DiffID
				}
			}
			ver.Validation = v.JSON()
		}
		if err := r.Versions.Put(ctx, ver); err != nil {
			return err
		}
	}
	return nil
}

// errStopped ends a worker when the run is asked to stop.
var errStopped = errors.New("stopped")

// catchUp carries into each table of run what live gained outside the scope since the build,
// and makes the partitions inside the scope that changed in live pending again, in every table of
// the run, with what live holds in them now as their basis, so that building the run recomputes
// them. It returns how many partitions it made pending, and in how many tables it carried.
func (r *Runner) catchUp(ctx context.Context, run *Run, actor string) (rebuild, carried int, err error) {
	e := r.Planner.Engine
	changed := map[string]bool{}
	var carriedFrom []string
	for _, t := range run.Tables {
		b, err := r.Planner.Set.Get(t.Backfill)
		if err != nil {
			return 0, 0, err
		}
		starts, cs, err := r.Versions.CatchUpBuild(ctx, e, run.Target, t.Table, t.Version)
		if err != nil {
			return 0, 0, err
		}
		for _, st := range starts {
			changed[formatPartition(st, b.Grain)] = true
		}
		if len(cs) > 0 {
			carriedFrom = append(carriedFrom, t.Table+" "+views.CarriedSummary(cs))
		}
	}
	parts, err := r.Store.Partitions(ctx, run.ID)
	if err != nil {
		return 0, 0, err
	}
	var labels []string
	for _, t := range run.Tables {
		b, err := r.Planner.Set.Get(t.Backfill)
		if err != nil {
			return 0, 0, err
		}
		var starts []time.Time
		for _, p := range parts {
			if p.Table != t.Table || !changed[p.Partition] {
				continue
			}
			if err := r.checkpoint(ctx, run.ID, t.Table, p.Partition, PartPending, 0, ""); err != nil {
				return 0, 0, err
			}
			st, err := ParsePartition(p.Partition, b.Grain)
			if err != nil {
				return 0, 0, err
			}
			starts = append(starts, st)
			labels = append(labels, t.Table+" "+p.Partition)
		}
		live, err := e.ViewSource(ctx, t.Table)
		if err != nil {
			return 0, 0, err
		}
		if err := r.Versions.RefreshBasis(ctx, e, run.Target, t.Table, t.Version, live, starts); err != nil {
			return 0, 0, err
		}
	}
	detail := "recompute what live changed inside the scope since the build: " + strings.Join(labels, ", ")
	if len(carriedFrom) > 0 {
		detail += "; carried from live: " + strings.Join(carriedFrom, "; ")
	}
	r.Store.L.Audit(ctx, ledger.Entry{Actor: actor, Action: "backfill.catch-up", Target: run.Table, Outcome: ledger.OutcomeOK,
		Params: map[string]any{"backfill": run.Backfill, "run_id": run.ID, "partitions": labels}, Detail: detail})
	return len(labels), len(carriedFrom), nil
}
