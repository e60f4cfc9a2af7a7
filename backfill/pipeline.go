package backfill

import (
	"context"
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
	Backfill string        `json:"backfill"`
	CodeSHA  string        `json:"code_sha256"`
	Windows  []string      `json:"windows"`
	Tables   []WindowTable `json:"tables"`
	Actor    string        `json:"actor"`
	At       time.Time     `json:"at"`
	Duration float64       `json:"duration_ms"`
}

// WindowTable is what a run wrote into one table: the live version and, when one was building,
// the version a backfill run is building.
type WindowTable struct {
	Table    string  `json:"table"`
	Live     string  `json:"live"`
	Rows     []int64 `json:"rows"`               // per window, into the live version
	Building string  `json:"building,omitempty"` // also written (outside its scope)
}

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
		return nil, fault.New(fault.Invalid, "--window %q: %v (or latest, or FROM..TO)", s, err)
	}
	b, err := ParsePartition(to, grain)
	if err != nil {
		return nil, fault.New(fault.Invalid, "--window %q: %v (or latest, or FROM..TO)", s, err)
	}
	if b.Before(a) {
		return nil, fault.New(fault.Invalid, "--window %q: it ends before it starts", s)
	}
	out := partitionsBetween(a, b, grain)
	if len(out) > 1000 {
		return nil, fault.New(fault.Invalid, "--window %q: %d partitions; a pipeline run takes at most 1000 (a backfill takes more)", s, len(out))
	}
	return out, nil
}

// RunWindows runs backfill name's transform, and its downstream tables', for windows (as
// ParseWindows reads them) into the live versions.
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
	for _, c := range chain {
		wt, err := r.runWindowsOf(ctx, c, starts)
		if err != nil {
			r.Store.L.Audit(context.WithoutCancel(ctx), ledger.Entry{Actor: actor, Action: "pipeline.run", Target: b.Table, Outcome: ledger.OutcomeFailed,
				Params: map[string]any{"backfill": name, "code_sha256": out.CodeSHA, "windows": out.Windows}, Detail: err.Error()})
			return nil, fmt.Errorf("run %s: %s: %w", name, c.Table, err)
		}
		out.Tables = append(out.Tables, wt)
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
	r.Store.L.Audit(ctx, ledger.Entry{Actor: actor, Action: "pipeline.run", Target: b.Table, Outcome: ledger.OutcomeOK,
		Params: map[string]any{"backfill": name, "code_sha256": out.CodeSHA, "windows": out.Windows, "tables": out.Tables},
		Detail: fmt.Sprintf("%s for %s into %s", name, strings.Join(out.Windows, ", "), strings.Join(wrote, ", "))})
	return out, nil
}

// runWindowsOf writes b's windows into its table's live version and the version building.
func (r *Runner) runWindowsOf(ctx context.Context, b *Backfill, starts []time.Time) (WindowTable, error) {
	e := r.Planner.Engine
	live, err := e.ViewSource(ctx, b.Table)
	if err != nil {
		return WindowTable{}, fmt.Errorf("table %s: %w", b.Table, err)
	}
	typ, err := r.partitionType(ctx, live, b.Partition)
	if err != nil {
		return WindowTable{}, err
	}
	writes := make([]tsql.PartitionWrite, len(starts))
	for i, st := range starts {
		w := window(b.Partition, typ, st, b.Grain)
		q, args, err := tsql.Expand(e.Dialect(), b.SQL, w.Params())
		if err != nil {
			return WindowTable{}, err
		}
		writes[i] = tsql.PartitionWrite{Window: w, Query: q, Args: args}
	}
	out := WindowTable{Table: b.Table, Live: live}
	if out.Rows, err = e.ReplacePartitions(ctx, live, writes); err != nil {
		return out, err
	}
	building, scope, err := r.building(ctx, b.Table)
	if err != nil || building == 0 {
		return out, err
	}
	var also []tsql.PartitionWrite
	var alsoStarts []time.Time
	for i, w := range writes {
		if !slices.ContainsFunc(scope, func(t time.Time) bool { return t.Equal(starts[i]) }) {
			also = append(also, w)
			alsoStarts = append(alsoStarts, starts[i])
		}
	}
	if len(also) == 0 {
		return out, nil
	}
	out.Building = views.Physical(b.Table, building)
	if _, err := e.ReplacePartitions(ctx, out.Building, also); err != nil {
		return out, err
	}
	return out, r.Versions.RefreshBasis(ctx, e, r.Planner.Target, b.Table, building, live, alsoStarts)
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
