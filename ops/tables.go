package ops

import (
	"context"
	"fmt"
	"slices"

	"trueup/fault"
	tsql "trueup/sql"
	"trueup/views"
)

// Tables is what an operator does with logical tables: list their versions, publish one (swap),
// take a swap back (rollback), retire an old version. Plan* answer what the write would do and
// change nothing (the CLI's --dry-run, the API's dry_run, the pages' confirmation step).
type Tables interface {
	Versions(ctx context.Context, req VersionsRequest) (views.ListingJSON, error)
	PlanSwap(ctx context.Context, req PublishRequest) (views.Plan, error)
	Swap(ctx context.Context, req PublishRequest) (views.Publish, error)
	PlanRollback(ctx context.Context, req PublishRequest) (views.Plan, error)
	Rollback(ctx context.Context, req PublishRequest) (views.Publish, error)
	Retire(ctx context.Context, req RetireRequest) (views.ListingJSON, error)
	// Publish is one done or attempted swap or rollback of a table, by its number.
	Publish(ctx context.Context, req PublishLookup) (views.Publish, error)
	// Adopt turns a plain table into a logical table (its rows become v1 under a view of its
	// name), or with Undo reverses that while v1 is the only version.
	Adopt(ctx context.Context, req AdoptRequest) (views.Publish, error)
	// WriteTarget is the physical table writers of a logical table insert into now: its live
	// version (a view takes no inserts).
	WriteTarget(ctx context.Context, req VersionsRequest) (WriteTarget, error)
	// Stale lists the versions of a table written after they stopped being live: rows readers
	// do not see (a writer that kept writing the old version after a swap).
	Stale(ctx context.Context, req VersionsRequest) ([]views.StaleVersion, error)
	// Days lists the partitions readers of a table see now, oldest first (views.Service.Days).
	Days(ctx context.Context, req VersionsRequest) ([]string, error)
	// CatchUp carries what Stale lists (outside the backfills' scopes) into the live version.
	CatchUp(ctx context.Context, req CatchUpRequest) (views.CatchUpResult, error)
}

// Subject is what every write to a logical table names: the target (empty: the default one),
// the table and who is asking. Only Target is in a request's body; Table comes from the path and
// Actor from who is asking, never from the body.
type Subject struct {
	Target string `json:"target" form:"target"`
	Table  string `json:"-" form:"-"`
	Actor  string `json:"-" form:"-"`
}

// CatchUpRequest is the body of POST /api/v1/tables/{table}/catch-up. DryRun answers what it
// would carry and what not, in the same shape, changing nothing. Acknowledge carries nothing:
// it records that the partitions a catch-up does not carry were dealt with (views.Acknowledge),
// with Reason in the audit log.
type CatchUpRequest struct {
	Subject
	DryRun      bool   `json:"dry_run" form:"dry_run"`
	Acknowledge bool   `json:"acknowledge" form:"acknowledge"`
	Reason      string `json:"reason" form:"reason"`
}

// WriteTarget is the answer of GET /api/v1/tables/{table}/write-target.
type WriteTarget struct {
	Target      string `json:"target"`
	Table       string `json:"table"`
	Version     string `json:"version"`
	WriteTarget string `json:"write_target"`
}

// AdoptRequest is the body of POST /api/v1/tables/{table}/adopt. Partition and Grain, when
// given, are checked against the table (the column exists and holds dates or timestamps) and
// recorded with the adopt.
type AdoptRequest struct {
	Subject
	Partition string `json:"partition" form:"partition"`
	Grain     string `json:"grain" form:"grain"`
	Reason    string `json:"reason" form:"reason"`
	Undo      bool   `json:"undo" form:"undo"`
}

// VersionsRequest names a table and, optionally, its target; History asks for that many of its
// latest swaps and rollbacks too (0: the service's default).
type VersionsRequest struct {
	Target  string
	Table   string
	History int
}

// PublishRequest is the body of POST /api/v1/tables/{table}/swap and …/rollback. Undoes
// (rollback) and From (swap: the version each table moves from, {"orders": "v1"}) are what the
// caller confirmed; without them the request does what it asks as things stand.
type PublishRequest struct {
	Subject
	To       string            `json:"to" form:"to"`
	Reason   string            `json:"reason" form:"reason"`
	Override string            `json:"override" form:"override"`
	DryRun   bool              `json:"dry_run" form:"dry_run"`
	Undoes   int64             `json:"undoes" form:"undoes"`
	From     map[string]string `json:"from" form:"-"`
}

// RetireRequest is the body of POST /api/v1/tables/{table}/retire.
type RetireRequest struct {
	Subject
	Version string `json:"version" form:"version"`
	Reason  string `json:"reason" form:"reason"`
}

// PublishLookup names a swap or rollback of a table by its number.
type PublishLookup struct {
	Target string
	Table  string
	ID     int64
}

// TableServices is the views service of each target, by target name.
type TableServices map[string]*views.Service

// pick is the service of target; with no target named, the default one's, else the only one's.
func (ts TableServices) pick(target, def string) (*views.Service, error) {
	if target == "" {
		target = def
		if _, ok := ts[target]; !ok && len(ts) == 1 {
			for n := range ts {
				target = n
			}
		}
	}
	s, ok := ts[target]
	if !ok {
		return nil, fault.New(fault.NotFound, "There is no target %q.", target)
	}
	return s, nil
}

// PlanPublish is what a swap or rollback (kind: views.KindSwap, views.KindRollback) would do.
func PlanPublish(ctx context.Context, t Tables, kind string, req PublishRequest) (views.Plan, error) {
	if err := req.only(kind); err != nil {
		return views.Plan{}, err
	}
	if kind == views.KindSwap {
		return t.PlanSwap(ctx, req)
	}
	return t.PlanRollback(ctx, req)
}

// PublishNow carries out a swap or rollback (kind) as req asks.
func PublishNow(ctx context.Context, t Tables, kind string, req PublishRequest) (views.Publish, error) {
	if err := req.only(kind); err != nil {
		return views.Publish{}, err
	}
	if kind == views.KindSwap {
		return t.Swap(ctx, req)
	}
	return t.Rollback(ctx, req)
}

// only refuses the fields of a publish request that the other kind takes: a rollback given a
// version (to) is not quietly the rollback of whatever swap is in effect, nor a swap given undoes
// a swap that takes nothing back.
func (req PublishRequest) only(kind string) error {
	switch {
	case kind == views.KindRollback && req.To != "":
		return fault.New(fault.Invalid, "A rollback takes no to: it goes back to the version the swap in effect replaced (to make another version live, swap to it).")
	case kind == views.KindRollback && req.Override != "":
		return fault.New(fault.Invalid, "A rollback takes no override: it is not gated by a validation.")
	case kind == views.KindSwap && req.Undoes != 0:
		return fault.New(fault.Invalid, "A swap takes no undoes: that names the swap a rollback takes back.")
	case req.Undoes < 0:
		return fault.New(fault.Invalid, "undoes %d: want the number of the swap the rollback takes back.", req.Undoes)
	}
	return nil
}

// NewTables is Tables over the views services of a project's targets. A request that names no
// target goes to the default one when it has the table, else to the only target, else to the
// first target, in name order, that has it.
func NewTables(services TableServices, defaultTarget string) Tables {
	return &tables{services: services, def: defaultTarget}
}

type tables struct {
	services TableServices
	def      string
}

// service finds the target of a table request.
func (t *tables) service(ctx context.Context, target, table string) (*views.Service, error) {
	if len(t.services) == 0 {
		return nil, fault.New(fault.NotFound, "Versions are not set up here: the project has no targets.")
	}
	if target != "" {
		return t.services.pick(target, t.def)
	}
	names := make([]string, 0, len(t.services))
	for n := range t.services {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 1 {
		return t.services[names[0]], nil
	}
	if s, ok := t.services[t.def]; ok {
		if _, err := s.Versions(ctx, table); err == nil {
			return s, nil
		}
	}
	for _, n := range names {
		if _, err := t.services[n].Versions(ctx, table); err == nil {
			return t.services[n], nil
		}
	}
	return nil, fault.New(fault.NotFound, "No target has a logical table %q.", table)
}

func (t *tables) Versions(ctx context.Context, req VersionsRequest) (views.ListingJSON, error) {
	s, err := t.service(ctx, req.Target, req.Table)
	if err != nil {
		return views.ListingJSON{}, err
	}
	var l views.Listing
	if req.History > 0 {
		l, err = s.VersionsWithHistory(ctx, req.Table, req.History)
	} else {
		l, err = s.Versions(ctx, req.Table)
	}
	if err != nil {
		return views.ListingJSON{}, err
	}
	return l.JSON(), nil
}

func (t *tables) PlanSwap(ctx context.Context, req PublishRequest) (views.Plan, error) {
	if req.To == "" {
		return views.Plan{}, errNoTo
	}
	s, err := t.service(ctx, req.Target, req.Table)
	if err != nil {
		return views.Plan{}, err
	}
	return s.PlanSwap(ctx, req.Table, req.To)
}

var errNoTo = fault.New(fault.Invalid, `Say which version to swap to (to, e.g. "v2").`)

func (t *tables) Swap(ctx context.Context, req PublishRequest) (views.Publish, error) {
	if req.To == "" {
		return views.Publish{}, errNoTo
	}
	s, err := t.service(ctx, req.Target, req.Table)
	if err != nil {
		return views.Publish{}, err
	}
	from, err := views.ParseFrom(req.From)
	if err != nil {
		return views.Publish{}, err
	}
	return s.Swap(ctx, views.SwapRequest{Table: req.Table, To: req.To, Actor: req.Actor, Reason: req.Reason, Override: req.Override, From: from})
}

func (t *tables) PlanRollback(ctx context.Context, req PublishRequest) (views.Plan, error) {
	s, err := t.service(ctx, req.Target, req.Table)
	if err != nil {
		return views.Plan{}, err
	}
	return s.PlanRollback(ctx, req.Table)
}

func (t *tables) Rollback(ctx context.Context, req PublishRequest) (views.Publish, error) {
	if err := req.only(views.KindRollback); err != nil {
		return views.Publish{}, err
	}
	s, err := t.service(ctx, req.Target, req.Table)
	if err != nil {
		return views.Publish{}, err
	}
	return s.Rollback(ctx, views.RollbackRequest{Table: req.Table, Actor: req.Actor, Reason: req.Reason, Undoes: req.Undoes})
}

func (t *tables) Retire(ctx context.Context, req RetireRequest) (views.ListingJSON, error) {
	if req.Version == "" {
		return views.ListingJSON{}, fault.New(fault.Invalid, `Say which version to retire (version, e.g. "v1").`)
	}
	s, err := t.service(ctx, req.Target, req.Table)
	if err != nil {
		return views.ListingJSON{}, err
	}
	if err := s.Retire(ctx, views.RetireRequest{Table: req.Table, Version: req.Version, Actor: req.Actor, Reason: req.Reason}); err != nil {
		return views.ListingJSON{}, err
	}
	l, err := s.Versions(ctx, req.Table)
	if err != nil {
		return views.ListingJSON{}, fmt.Errorf("retired %s %s, then: %w", req.Table, req.Version, err)
	}
	return l.JSON(), nil
}

func (t *tables) Publish(ctx context.Context, req PublishLookup) (views.Publish, error) {
	s, err := t.service(ctx, req.Target, req.Table)
	if err != nil {
		return views.Publish{}, err
	}
	return s.GetPublish(ctx, req.ID)
}

// Adopt goes to the named target, else the default one, else the only one: the table is not a
// logical table yet, so no target can be found by it.
func (t *tables) Adopt(ctx context.Context, req AdoptRequest) (views.Publish, error) {
	s, err := t.services.pick(req.Target, t.def)
	if err != nil {
		return views.Publish{}, err
	}
	r := views.AdoptRequest{Table: req.Table, Partition: req.Partition, Grain: req.Grain, Actor: req.Actor, Reason: req.Reason}
	if req.Undo {
		return s.Unadopt(ctx, r)
	}
	return s.Adopt(ctx, r)
}

func (t *tables) WriteTarget(ctx context.Context, req VersionsRequest) (WriteTarget, error) {
	s, err := t.service(ctx, req.Target, req.Table)
	if err != nil {
		return WriteTarget{}, err
	}
	n, err := s.WriteTarget(ctx, req.Table)
	if err != nil {
		return WriteTarget{}, err
	}
	if n == 0 {
		return WriteTarget{}, fault.New(fault.Conflict, "%s has no live version (its view does not exist): nothing to write to until one is published", req.Table)
	}
	return writeTargetOf(s.Target(), req.Table, n), nil
}

func writeTargetOf(target, table string, n int) WriteTarget {
	return WriteTarget{Target: target, Table: table, Version: views.VersionName(n), WriteTarget: views.Physical(table, n)}
}

// ViewWriteTarget is WriteTarget read from target's engine e alone, the ledger not opened: what
// `trueup versions T --write-target` answers while another local trueup holds the ledger.
func ViewWriteTarget(ctx context.Context, e tsql.Engine, target, table string) (WriteTarget, error) {
	n, err := views.ViewWriteTarget(ctx, e, table)
	if err != nil {
		return WriteTarget{}, err
	}
	if n == 0 {
		return WriteTarget{}, fault.New(fault.NotFound, "%s has no view in target %s: it is not a logical table, or none of its versions is live yet", table, target)
	}
	return writeTargetOf(target, table, n), nil
}

func (t *tables) Stale(ctx context.Context, req VersionsRequest) ([]views.StaleVersion, error) {
	s, err := t.service(ctx, req.Target, req.Table)
	if err != nil {
		return nil, err
	}
	out, err := s.Stale(ctx, req.Table)
	if out == nil {
		out = []views.StaleVersion{}
	}
	return out, err
}

func (t *tables) Days(ctx context.Context, req VersionsRequest) ([]string, error) {
	s, err := t.service(ctx, req.Target, req.Table)
	if err != nil {
		return nil, err
	}
	out, err := s.Days(ctx, req.Table)
	if out == nil {
		out = []string{}
	}
	return out, err
}

func (t *tables) CatchUp(ctx context.Context, req CatchUpRequest) (views.CatchUpResult, error) {
	s, err := t.service(ctx, req.Target, req.Table)
	if err != nil {
		return views.CatchUpResult{}, err
	}
	switch {
	case req.DryRun && req.Acknowledge:
		return views.CatchUpResult{}, fault.New(fault.Invalid, "catch-up: a dry run acknowledges nothing; ask for one or the other")
	case req.DryRun:
		return s.PlanCatchUp(ctx, req.Table)
	case req.Acknowledge:
		return s.Acknowledge(ctx, req.Table, req.Actor, req.Reason)
	}
	return s.CatchUp(ctx, req.Table, req.Actor)
}
