package ops

import (
	"context"
	"fmt"
	"strings"

	"trueup/fault"
	"trueup/ledger"
	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/views"
)

// Diffs is what an operator does with ad hoc diffs of two relations: run one (`trueup diff`,
// POST /api/v1/diffs), read a stored one, list them. A diff that finds unexpected changes is not
// an error: its result says so (ExpectationsMet).
type Diffs interface {
	Run(ctx context.Context, req DiffRequest) (*reconcile.Result, error)
	// Get is a stored diff with every partition's samples, by its id.
	Get(ctx context.Context, id int64) (*reconcile.Result, error)
	// List is the newest limit stored diffs, newest first (at most 1000).
	List(ctx context.Context, limit int) ([]reconcile.Saved, error)
}

// DiffRequest is an ad hoc diff as `trueup diff` takes it, flag for flag: the body of
// POST /api/v1/diffs. Label (what ran it: cli, api) and Actor come from the caller.
type DiffRequest struct {
	Old       string   `json:"old"`
	New       string   `json:"new"`
	Key       []string `json:"key"`
	Partition string   `json:"partition,omitempty"`
	// Grain makes a partition of a date or timestamp column a day, hour or month of it; a
	// timestamp column is compared by day without one.
	Grain    string   `json:"grain,omitempty"`
	Measures []string `json:"measure,omitempty"`
	Ignore   []string `json:"ignore,omitempty"`
	// Columns, when given, are the only columns compared besides the key and the partition.
	Columns []string `json:"columns,omitempty"`
	// Map is OLD=NEW: the old relation's column OLD is NEW in the new one (renamed).
	Map []string `json:"map,omitempty"`
	// Where is a SQL condition both sides are filtered by, each in its own engine, as written.
	Where string `json:"where,omitempty"`
	// Tolerance is COL=X, or X alone for every float or decimal column (0.01, or 0.1%).
	Tolerance []string `json:"tolerance,omitempty"`
	// Precision is COL=P: the column is compared at P (s, ms, us, ns for timestamps, a number
	// of decimals for numbers), not at the coarser of its two declared types.
	Precision []string `json:"precision,omitempty"`
	OldTarget string   `json:"old_target,omitempty"`
	NewTarget string   `json:"new_target,omitempty"`
	// Expect is the text of an expectations file, e.g. "inside 2026-07-10..2026-07-18 rows +0..6%".
	Expect  string   `json:"expect,omitempty"`
	Only    []string `json:"only,omitempty"`
	Samples int      `json:"samples,omitempty"` // 0 to MaxDiffSamples; 0 is the default, 10
	// Rescan reads every partition of both sides, ignoring the fingerprints trueup recorded of
	// the versions it built (trueup diff --rescan).
	Rescan bool `json:"rescan,omitempty"`
	// Rows, when set, receives every differing row as it is found (trueup diff --rows); the
	// result keeps its bounded samples. Not part of the API body: a page or a notice shows
	// samples, and only a local diff streams.
	Rows  func(reconcile.RowLine) error `json:"-"`
	Label string                        `json:"-"`
	Actor string                        `json:"-"`
}

// MaxDiffSamples bounds the sample rows a diff keeps per kind per partition: a diff is saved
// whole and shown on a page, so a request must not make either as large as the relations.
const MaxDiffSamples = 1000

// Spec reads the request into a reconcile spec, engines not yet set; a bad value is invalid
// (fault), saying which.
func (r DiffRequest) Spec() (reconcile.Spec, error) {
	spec := reconcile.Spec{
		Old: reconcile.Side{Relation: r.Old, Target: r.OldTarget}, New: reconcile.Side{Relation: r.New, Target: r.NewTarget},
		Key: r.Key, Partition: r.Partition, Grain: r.Grain, Measures: r.Measures, Ignore: r.Ignore, Partitions: r.Only, Samples: r.Samples,
		Columns: r.Columns, Where: r.Where, Rows: r.Rows, Rescan: r.Rescan,
	}
	if r.Old == "" || r.New == "" || len(r.Key) == 0 {
		return spec, fault.New(fault.Invalid, "old, new and key are required")
	}
	if r.Samples < 0 || r.Samples > MaxDiffSamples {
		return spec, fault.New(fault.Invalid, "samples %d: want 0 to %d", r.Samples, MaxDiffSamples)
	}
	var err error
	if spec.Tolerance, err = byColumn("tolerance", r.Tolerance, reconcile.AnyColumn, "", reconcile.ParseTolerance); err != nil {
		return spec, err
	}
	for _, f := range r.Map {
		from, to, ok := strings.Cut(f, "=")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" || to == "" {
			return spec, fault.New(fault.Invalid, "map %s: want OLD=NEW, the old relation's column and its name in the new one", f)
		}
		if spec.Map == nil {
			spec.Map = map[string]string{}
		}
		if _, twice := spec.Map[from]; twice {
			return spec, fault.New(fault.Invalid, "map: column %q mapped twice", from)
		}
		spec.Map[from] = to
	}
	if spec.Precision, err = byColumn("precision", r.Precision, "", "want COL=P, e.g. ts=ms or amount=2", reconcile.ParsePrecision); err != nil {
		return spec, err
	}
	if strings.TrimSpace(r.Expect) != "" {
		e, err := reconcile.ParseExpectations(r.Expect)
		if err != nil {
			return spec, fault.New(fault.Invalid, "expectations: %w", err)
		}
		spec.Expect = e
	}
	return spec, nil
}

// byColumn reads flags of the form COL=X (what names them in errors) into a map by COL, each X
// read by parse; nil when there are none. X alone is for column bare, or with bare "" refused,
// want saying how to write it.
func byColumn[T any](what string, flags []string, bare, want string, parse func(string) (T, error)) (map[string]T, error) {
	var out map[string]T
	for _, f := range flags {
		col, x, ok := strings.Cut(f, "=")
		if !ok {
			col, x = bare, f
		}
		if bare == "" && strings.TrimSpace(col) == "" {
			return nil, fault.New(fault.Invalid, "%s %s: %s", what, f, want)
		}
		v, err := parse(x)
		if err != nil {
			return nil, fault.New(fault.Invalid, "%s %s: %w", what, f, err)
		}
		if out == nil {
			out = map[string]T{}
		}
		out[strings.TrimSpace(col)] = v
	}
	return out, nil
}

// DiffStore keeps diffs (reconcile.Store).
type DiffStore interface {
	Get(ctx context.Context, id int64) (*reconcile.Result, error)
	List(ctx context.Context, limit int) ([]reconcile.Saved, error)
	Save(ctx context.Context, r *reconcile.Result, label, actor string) (int64, error)
}

// DiffTargets opens the engine of a diff's side by the target the request names ("" for the
// default) and says the target's name as it is saved and shown (without credentials).
type DiffTargets func(ctx context.Context, target string) (tsql.Engine, string, error)

// Target is a named engine.
type Target struct {
	Name   string
	Engine tsql.Engine
}

// NamedTargets are the DiffTargets of a server: only the targets it was configured with, "" for
// def (or the only one); any other name or URL is not found, as the server opens no other.
func NamedTargets(targets []Target, def string) DiffTargets {
	return func(_ context.Context, name string) (tsql.Engine, string, error) {
		if name == "" {
			name = def
		}
		var names []string
		for _, t := range targets {
			if t.Name == name {
				return t.Engine, t.Name, nil
			}
			names = append(names, t.Name)
		}
		if name == "" && len(targets) == 1 {
			return targets[0].Engine, targets[0].Name, nil
		}
		return nil, "", fault.New(fault.NotFound, "There is no target %q on this server (it has %s; it opens no other).", name, strings.Join(names, ", "))
	}
}

// DiffOption configures NewDiffs.
type DiffOption func(*localDiffs)

// WithFingerprints lets a diff of versions trueup built use the fingerprints it recorded of them
// in l, while the engine says nothing wrote to them since (views.Store.Fingerprints): their
// matching partitions are not read. Without it every partition is read.
func WithFingerprints(l *ledger.Ledger) DiffOption {
	return func(d *localDiffs) { d.marks = &views.Store{L: l} }
}

// NewDiffs is Diffs over a diff store, opening sides through targets.
func NewDiffs(store DiffStore, targets DiffTargets, opts ...DiffOption) Diffs {
	d := &localDiffs{store: store, targets: targets}
	for _, o := range opts {
		o(d)
	}
	return d
}

type localDiffs struct {
	store   DiffStore
	targets DiffTargets
	marks   *views.Store // nil: no fingerprints
}

// fingerprints are side's recorded fingerprints when it names a version trueup built and still
// trusts, else nil.
func (d *localDiffs) fingerprints(ctx context.Context, side reconcile.Side) (*reconcile.Fingerprints, error) {
	table, n, ok := views.ParseVersion(side.Relation)
	if d.marks == nil || !ok {
		return nil, nil
	}
	m, trusted, err := d.marks.Fingerprints(ctx, side.Engine, side.Target, table, n)
	if err != nil || !trusted {
		return nil, err
	}
	parts, err := m.Starts()
	if err != nil {
		return nil, err
	}
	return &reconcile.Fingerprints{Column: m.Column, Grain: m.Grain, Parts: parts}, nil
}

func (d *localDiffs) Run(ctx context.Context, req DiffRequest) (*reconcile.Result, error) {
	spec, err := req.Spec()
	if err != nil {
		return nil, err
	}
	if d.targets == nil {
		return nil, fault.New(fault.NotFound, "There is no target %q here.", req.OldTarget)
	}
	if spec.Old.Engine, spec.Old.Target, err = d.targets(ctx, req.OldTarget); err != nil {
		return nil, err
	}
	if spec.New.Engine, spec.New.Target, err = d.targets(ctx, req.NewTarget); err != nil {
		return nil, err
	}
	if !spec.Rescan {
		if spec.Old.Fingerprints, err = d.fingerprints(ctx, spec.Old); err != nil {
			return nil, err
		}
		if spec.New.Fingerprints, err = d.fingerprints(ctx, spec.New); err != nil {
			return nil, err
		}
	}
	res, err := reconcile.Diff(ctx, spec)
	if err != nil { // one that cannot run as asked is invalid and says why
		return nil, fmt.Errorf("diff: %w", err)
	}
	if _, err := d.store.Save(ctx, res, req.Label, req.Actor); err != nil {
		return nil, err
	}
	return res, nil
}

func (d *localDiffs) Get(ctx context.Context, id int64) (*reconcile.Result, error) {
	if id <= 0 {
		return nil, fault.New(fault.NotFound, "There is no diff %d.", id)
	}
	return d.store.Get(ctx, id)
}

func (d *localDiffs) List(ctx context.Context, limit int) ([]reconcile.Saved, error) {
	list, err := d.store.List(ctx, limit)
	if list == nil && err == nil {
		list = []reconcile.Saved{}
	}
	return list, err
}
