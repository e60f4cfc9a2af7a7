package ops

import (
	"context"
	"errors"

	"trueup/backfill"
	"trueup/fault"
	"trueup/views"
)

// Backfills is what an operator does with backfills: list them, plan one, preview it (dry run),
// start a run, resume or cancel the latest run, follow its status, and count past runs by
// reason. A run is built in the background of the process that holds the operations (the
// server's, or the CLI's own); who started it follows Status until the run is neither running
// nor validating. (verify recomputes the live table in the caller's process: it is the CLI's
// alone.)
type Backfills interface {
	List(ctx context.Context) ([]backfill.Summary, error)
	Plan(ctx context.Context, req BackfillRequest) (*backfill.Plan, error)
	DryRun(ctx context.Context, req BackfillRequest) (*backfill.Preview, error)
	// Run starts a run and returns once it is recorded, its build going on.
	Run(ctx context.Context, req BackfillRunRequest) (*backfill.Run, error)
	// Resume builds what is left of the latest run; it returns the run as it was.
	Resume(ctx context.Context, req BackfillRequest) (*backfill.Run, error)
	// Cancel stops the latest run after its partitions in flight.
	Cancel(ctx context.Context, req BackfillRequest) (*backfill.Run, error)
	Status(ctx context.Context, req BackfillRequest) (*backfill.Status, error)
	History(ctx context.Context) ([]backfill.ReasonCount, error)
	// RunWindows runs a backfill's transform as the pipeline: its windows into the live versions
	// (trueup run), waiting for a swap that holds its tables.
	RunWindows(ctx context.Context, req WindowRequest) (*backfill.WindowRun, error)
}

// WindowRequest is POST /api/v1/backfills/{name}/window?window=: latest (the default), a
// partition, or FROM..TO.
type WindowRequest struct {
	Name   string
	Window string
	Actor  string
}

// BackfillRequest names a backfill (the path's :name) for GET /api/v1/backfills/{name},
// …/status and POST …/dry-run, …/resume, …/cancel. Scope, when not nil, replaces the file's: the
// from and to query parameters (YYYY-MM-DD), as --from and --to do (plan and dry-run). Actor
// is who is asking, never from the request.
type BackfillRequest struct {
	Name  string
	Scope *backfill.Scope
	Actor string
}

// BackfillRunRequest is POST /api/v1/backfills/{name}/run: Sample (?sample=) builds and validates only
// that many partitions, then stops for review; Scope is ?from=&to=; AllowFullRewrite
// (?allow_full_rewrite=true) lets it rewrite a large table that has no partitions; NewVersion
// (?new_version=true, --new-version) builds a new version of a table that has a validated
// version not published yet, which a run otherwise refuses.
type BackfillRunRequest struct {
	Name             string
	Sample           int
	Scope            *backfill.Scope
	Actor            string
	AllowFullRewrite bool
	NewVersion       bool
	// CatchUp (?catch_up=true) recomputes, in the latest built run, the partitions inside its
	// scope whose live rows changed since the build, and validates it again.
	CatchUp bool
}

// NewBackfills is Backfills over a backfill service, which builds runs in the background of this
// process and stops them after their partitions in flight when it is closed.
func NewBackfills(svc *backfill.Service) Backfills { return backfills{svc} }

type backfills struct{ svc *backfill.Service }

func (b backfills) List(ctx context.Context) ([]backfill.Summary, error) { return b.svc.List(ctx) }

func (b backfills) Plan(ctx context.Context, req BackfillRequest) (*backfill.Plan, error) {
	return b.svc.Plan(ctx, req.Name, req.Actor, req.Scope)
}

func (b backfills) DryRun(ctx context.Context, req BackfillRequest) (*backfill.Preview, error) {
	return b.svc.DryRun(ctx, req.Name, req.Scope)
}

func (b backfills) Run(ctx context.Context, req BackfillRunRequest) (*backfill.Run, error) {
	if req.Sample < 0 {
		return nil, fault.New(fault.Invalid, "sample %d: want a number of partitions, 0 or more.", req.Sample)
	}
	if req.CatchUp {
		if req.Sample != 0 || req.Scope != nil || req.AllowFullRewrite || req.NewVersion {
			return nil, fault.New(fault.Invalid, "catch-up recomputes part of the latest run as it was planned: it takes no sample, scope, full rewrite or new version.")
		}
		return b.svc.CatchUp(ctx, req.Name, req.Actor)
	}
	if !req.NewVersion {
		if err := b.noneWaiting(ctx, req.Name); err != nil {
			return nil, err
		}
	}
	return b.svc.StartRun(ctx, req.Name, backfill.RunOptions{Actor: req.Actor, Sample: req.Sample, Scope: req.Scope, AllowFullRewrite: req.AllowFullRewrite})
}

// noneWaiting refuses a run of a backfill that left a validated version of its table that was
// never published (a version another backfill built does not count): a second click on Run would build the version after it, and
// draft a second notice, without anyone meaning to. Asked for (NewVersion), it is built.
func (b backfills) noneWaiting(ctx context.Context, name string) error {
	st, err := b.svc.Status(ctx, name)
	if errors.Is(err, fault.ErrNotFound) || (err == nil && st.Run == nil) {
		return nil // never run: nothing waits
	}
	if err != nil {
		return err
	}
	vs, err := b.svc.Runner.Versions.List(ctx, st.Run.Target, st.Table)
	if err != nil {
		return err
	}
	waiting, next := "", 0
	for _, v := range vs {
		if v.State == views.StateValidated && v.Backfill == name { // another backfill's is not this one's to publish
			waiting = v.Name()
		}
		next = max(next, v.N+1)
	}
	if waiting == "" {
		return nil
	}
	return fault.New(fault.Conflict, "%s %s is validated and not published yet: another run of %s would build v%d beside it and draft another notice. Swap %s in first, or ask for a new version (--new-version; new_version=true in the API).",
		st.Table, waiting, name, next, waiting)
}

func (b backfills) Resume(ctx context.Context, req BackfillRequest) (*backfill.Run, error) {
	return b.svc.Resume(ctx, req.Name, req.Actor)
}

func (b backfills) Cancel(ctx context.Context, req BackfillRequest) (*backfill.Run, error) {
	return b.svc.Cancel(ctx, req.Name, req.Actor)
}

func (b backfills) Status(ctx context.Context, req BackfillRequest) (*backfill.Status, error) {
	return b.svc.Status(ctx, req.Name)
}

func (b backfills) History(ctx context.Context) ([]backfill.ReasonCount, error) {
	return b.svc.History(ctx)
}

func (b backfills) RunWindows(ctx context.Context, req WindowRequest) (*backfill.WindowRun, error) {
	return b.svc.Runner.RunWindows(ctx, req.Name, req.Window, req.Actor)
}
