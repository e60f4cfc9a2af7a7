package backfill

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"trueup/fault"
	"trueup/ledger"
	tsql "trueup/sql"
	"trueup/views"
)

// A backfill's transform is the production job run with a past window: `trueup run NAME
// --window …` runs it as the pipeline, for the given windows, into the version that is live now
// (the write target), and into its downstream tables' live versions with theirs. Each window is
// an idempotent partition replace; while a backfill run of the same table has built (or is
// building) a version not published yet, the windows outside that run's scope are written to it
// too, and recorded in its basis, so that it is never behind the live version and its swap has
// nothing of them to carry. It runs under the tables' locks, as a swap does: on DuckDB, where
// trueup owns the warehouse file while it serves, this is how a pipeline writes while it
// serves (trueup run --server, or the server's own schedule), and no write can fall between a
// swap's carry and its repoint.

// WindowRun is what one trueup run wrote.
type WindowRun struct {
	RunID    int64         `json:"run_id"`
	Backfill string        `json:"backfill"`
	CodeSHA  string        `json:"code_sha256"`
	Windows  []string      `json:"windows"`
	Tables   []WindowTable `json:"tables"`
	Actor    string        `json:"actor"`
	At       time.Time     `json:"at"`
	Duration float64       `json:"duration_ms"`
	// Continued is the run that stopped (killed before it ended) which this one continued: its
	// windows already written were not written again. 0 when it started afresh.
	Continued int64 `json:"continued,omitempty"`
	// Skipped counts the (window, table) writes taken from the stopped run.
	Skipped int `json:"skipped,omitempty"`
}

// WindowTable is what a run wrote into one table: the live version and, when one was building,
// the version a backfill run is building.
type WindowTable struct {
	Table    string  `json:"table"`
	Live     string  `json:"live"`
	Rows     []int64 `json:"rows"`               // per window, into the live version
	Building string  `json:"building,omitempty"` // also written (outside its scope)
}

// WindowDone is the state of a Progress report for one window of a pipeline run written into
// one table and checkpointed (RunID is the pipeline run's).
const WindowDone = "window-done"

// holdWait is how long a pipeline write waits for a swap or rollback holding its tables.
const holdWait = 30 * time.Second

// ParseWindows reads --window: "latest" (the partition holding now), a partition
// (2026-09-01, 2026-09 for a month grain), or FROM..TO, inclusive.
func ParseWindows(s, grain string, now time.Time) ([]time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "latest" {
		return []time.Time{tsql.TruncGrain(now, grain)}, nil
	}
	from, to, ok := strings.Cut(s, "..")
	if !ok {
		to = from
	}
	a, err := ParsePartition(from, grain)
	if err != nil {
		return nil, fault.New(fault.Invalid, "window %q: %v (or latest, or FROM..TO)", s, err)
	}
	b, err := ParsePartition(to, grain)
	if err != nil {
		return nil, fault.New(fault.Invalid, "window %q: %v (or latest, or FROM..TO)", s, err)
	}
	if b.Before(a) {
		return nil, fault.New(fault.Invalid, "window %q: it ends before it starts", s)
	}
	out := partitionsBetween(a, b, grain)
	if len(out) > 1000 {
		return nil, fault.New(fault.Invalid, "window %q: %d partitions; a pipeline run takes at most 1000 (a backfill takes more)", s, len(out))
	}
	return out, nil
}

// RunWindows runs backfill name's transform, and its downstream tables', for windows (as
// ParseWindows reads them) into the live versions: window by window, the upstream table first,
// each window checkpointed in the ledger as it is written. When the newest run of the same
// windows with the same transform stopped before it ended (its process killed), this run
// continues it: a window it had written into the version that is still live is not written
// again.
func (r *Runner) RunWindows(ctx context.Context, name, window, actor string) (*WindowRun, error) {
	b, err := r.Planner.Set.Get(name)
	if err != nil {
		return nil, err
	}
	starts, err := ParseWindows(window, b.Grain, r.now())
	if err != nil {
		return nil, err
	}
	chain := []*Backfill{b}
	for _, d := range b.Downstream {
		if db := r.Planner.Set.ForTable(d); db != nil {
			chain = append(chain, db)
		}
	}
	tables := make([]string, len(chain))
	for i, c := range chain {
		tables[i] = c.Table
	}
	unlock, err := views.Hold(ctx, r.Store.L, r.Planner.Target, tables, actor, holdWait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	started := r.now()
	out := &WindowRun{Backfill: name, CodeSHA: b.CodeSHA(), Actor: actor, At: started.UTC()}
	for _, st := range starts {
		out.Windows = append(out.Windows, formatPartition(st, b.Grain))
	}
	stopped, ok, err := r.Store.stoppedPipeline(ctx, name, r.Planner.Target, out.CodeSHA, out.Windows)
	if err != nil {
		return nil, err
	}
	if ok {
		out.RunID, out.Continued = stopped.ID, stopped.ID
		_, err = r.Store.L.DB().ExecContext(ctx, `UPDATE pipeline_runs SET owner = ? WHERE id = ?`, thisProcess(), stopped.ID)
	} else {
		stopped = &pipelineRun{}
		out.RunID, err = r.Store.startPipeline(ctx, name, r.Planner.Target, out.CodeSHA, actor, out.Windows)
	}
	if err != nil {
		return nil, err
	}
	err = r.writeWindows(ctx, out, chain, starts, stopped.written)
	if eerr := r.Store.endPipeline(ctx, out.RunID, err); err == nil {
		err = eerr
	}
	if err != nil {
		r.Store.L.Audit(context.WithoutCancel(ctx), ledger.Entry{Actor: actor, Action: "pipeline.run", Target: b.Table, Outcome: ledger.OutcomeFailed,
			Params: map[string]any{"backfill": name, "run_id": out.RunID, "code_sha256": out.CodeSHA, "windows": out.Windows}, Detail: err.Error()})
		return nil, fmt.Errorf("run %s: %w", name, err)
	}
	out.Duration = float64(r.now().Sub(started).Microseconds()) / 1000
	var wrote []string
	for _, t := range out.Tables {
		s := t.Live
		if t.Building != "" {
			s += " and " + t.Building
		}
		wrote = append(wrote, s)
	}
	detail := fmt.Sprintf("%s for %s into %s", name, strings.Join(out.Windows, ", "), strings.Join(wrote, ", "))
	if out.Continued != 0 {
		detail += fmt.Sprintf(" (continued the stopped run %d: %d writes it had made were kept)", out.Continued, out.Skipped)
	}
	r.Store.L.Audit(ctx, ledger.Entry{Actor: actor, Action: "pipeline.run", Target: b.Table, Outcome: ledger.OutcomeOK,
		Params: map[string]any{"backfill": name, "run_id": out.RunID, "code_sha256": out.CodeSHA, "windows": out.Windows, "tables": out.Tables},
		Detail: detail})
	return out, nil
}

// writeWindows writes each window into each table of chain, in order, checkpointing each; a
// window written before (in done) into the version still live is kept.
func (r *Runner) writeWindows(ctx context.Context, out *WindowRun, chain []*Backfill, starts []time.Time, done map[string]windowWrite) error {
	targets := make([]*windowTarget, len(chain))
	for i, c := range chain {
		t, err := r.windowTarget(ctx, c)
		if err != nil {
			return err
		}
		targets[i] = t
		out.Tables = append(out.Tables, WindowTable{Table: c.Table, Live: t.live})
	}
	if err := r.windowInputs(ctx, targets, starts, out.Windows); err != nil {
		return err
	}
	for wi, st := range starts {
		window := out.Windows[wi]
		for i, t := range targets {
			wt := &out.Tables[i]
			if w, ok := done[writtenKey(window, t.b.Table)]; ok && w.Version == t.live {
				wt.Rows = append(wt.Rows, w.Rows)
				if w.Building != "" {
					wt.Building = w.Building
				}
				out.Skipped++
				continue
			}
			w, err := r.writeWindow(ctx, t, st)
			if err != nil {
				return fmt.Errorf("%s %s: %w", t.b.Table, window, err)
			}
			if err := r.Store.windowWritten(ctx, out.RunID, window, t.b.Table, w); err != nil {
				return err
			}
			wt.Rows = append(wt.Rows, w.Rows)
			if w.Building != "" {
				wt.Building = w.Building
			}
			r.report(Progress{RunID: out.RunID, Table: t.b.Table, Partition: window, State: WindowDone, Rows: w.Rows,
				Done: wi + 1, Total: len(starts)})
		}
	}
	return nil
}

// windowInputs refuses windows for which an input of a transform has no rows, as a backfill's
// plan does (Planner.checkInputs): the partition replace would empty the live partition. The
// tables the run writes before a transform are not checked: they are written first.
func (r *Runner) windowInputs(ctx context.Context, targets []*windowTarget, starts []time.Time, windows []string) error {
	p := &Plan{Partitions: windows, InputsOK: true}
	built := map[string]bool{}
	for _, t := range targets {
		tr := transform{b: t.b}
		for _, st := range starts {
			tr.windows = append(tr.windows, window(t.b.Partition, t.typ, st, t.b.Grain))
		}
		r.Planner.checkInputs(ctx, tr, p, built)
		built[t.b.Table] = true
	}
	if p.InputsOK {
		return nil
	}
	var why []string
	for _, f := range p.Findings {
		why = append(why, strings.Replace(strings.TrimSuffix(f.Message, "."), "of the scope", "of the windows", 1))
	}
	return fault.New(fault.Invalid, "%s: nothing was written, the live partitions keep their rows (a window the inputs do not hold yet would be emptied)",
		strings.Join(why, "; "))
}

// windowTarget is where a pipeline run writes one backfill's table: its live version, and the
// version a backfill run has built (or is building) with that run's scope.
type windowTarget struct {
	b        *Backfill
	live     string
	typ      tsql.Type
	building int
	scope    []time.Time
}

func (r *Runner) windowTarget(ctx context.Context, b *Backfill) (*windowTarget, error) {
	live, err := r.Planner.Engine.ViewSource(ctx, b.Table)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", b.Table, err)
	}
	typ, err := r.partitionType(ctx, live, b.Partition)
	if err != nil {
		return nil, err
	}
	building, scope, err := r.building(ctx, b.Table)
	if err != nil {
		return nil, err
	}
	return &windowTarget{b: b, live: live, typ: typ, building: building, scope: scope}, nil
}

// writeWindow writes one window of t's transform into its live version as an idempotent
// partition replace and, outside the building run's scope, into the version it builds too.
func (r *Runner) writeWindow(ctx context.Context, t *windowTarget, st time.Time) (windowWrite, error) {
	e := r.Planner.Engine
	w := window(t.b.Partition, t.typ, st, t.b.Grain)
	q, args, err := tsql.Expand(e.Dialect(), t.b.SQL, w.Params())
	if err != nil {
		return windowWrite{}, err
	}
	// A window the transform gives no rows for, where live holds some, is refused, not emptied:
	// an input not partitioned as the table is (the input check cannot tell) has not reached
	// the window yet.
	write := []tsql.PartitionWrite{{Window: w, Query: q, Args: args, NeverEmpty: true}}
	rows, err := e.ReplacePartitions(ctx, t.live, write)
	var emptied *tsql.EmptiedError
	if errors.As(err, &emptied) {
		return windowWrite{}, fault.New(fault.Invalid, "the transform gives no rows for the window, where %s holds %d: the window was not written, the live partition keeps its rows (do its inputs hold the window yet? if it should be empty, delete its rows from %s)",
			t.live, emptied.Rows, t.live)
	}
	if err != nil {
		return windowWrite{}, err
	}
	write[0].NeverEmpty = false
	out := windowWrite{Version: t.live, Rows: rows[0]}
	if t.building == 0 || slices.ContainsFunc(t.scope, func(s time.Time) bool { return s.Equal(st) }) {
		return out, nil
	}
	out.Building = views.Physical(t.b.Table, t.building)
	if _, err := e.ReplacePartitions(ctx, out.Building, write); err != nil {
		return out, err
	}
	return out, r.Versions.RefreshBasis(ctx, e, r.Planner.Target, t.b.Table, t.building, t.live, []time.Time{st})
}

// building is the version of table a backfill run built, or is building, that is not published
// yet, and the run's scope there; 0 when there is none (or its table is not made yet).
func (r *Runner) building(ctx context.Context, table string) (int, []time.Time, error) {
	vs, err := r.Versions.List(ctx, r.Planner.Target, table)
	if err != nil {
		return 0, nil, err
	}
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i]
		switch v.State {
		case views.StateBuilding, views.StateValidated, views.StateValidationFailed:
		default:
			continue
		}
		if v.RunID == 0 {
			continue
		}
		run, err := r.Store.GetRun(ctx, v.RunID)
		if err != nil {
			return 0, nil, err
		}
		i := slices.IndexFunc(run.Tables, func(t RunTable) bool { return t.Table == table && t.Version == v.N })
		if i < 0 || !run.Tables[i].Prepared {
			return 0, nil, nil // not prepared yet: its carry-over will copy the live version as it is then
		}
		scope, ok, err := r.Versions.Scope(ctx, r.Planner.Target, table, v.N)
		if err != nil || !ok {
			return 0, nil, err
		}
		return v.N, scope, nil
	}
	return 0, nil, nil
}
