package views

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"strings"

	"trueup/fault"
	"trueup/ledger"
	tsql "trueup/sql"
)

// Kinds of publish that adopt a plain table and undo that.
const (
	KindAdopt   = "adopt"   // table became a view over table__v1, which holds its rows
	KindUnadopt = "unadopt" // table__v1 went back under table's name
)

// AdoptRequest asks to turn a plain table into a logical table: the table becomes its first
// version and a view of its name reads it, so readers go on querying the name unchanged.
type AdoptRequest struct {
	Table string
	// Partition, when set, is the column backfills of the table will rebuild by: it must
	// exist and hold dates or timestamps. Grain is theirs (day, hour, month).
	Partition string
	Grain     string
	Actor     string
	Reason    string
}

// PlainTableError answers a request for the versions of a table that is a plain table, not a
// logical one yet: it is NotFound, and says how to adopt it.
type PlainTableError struct{ Table, Target string }

func (e *PlainTableError) Error() string {
	return fmt.Sprintf("%s is a plain table of target %s, not a logical table yet: run trueup adopt %s", e.Table, e.Target, e.Table)
}

// Is makes errors.Is(err, fault.ErrNotFound) true.
func (e *PlainTableError) Is(target error) bool { return target == fault.ErrNotFound }

var errNoActor = fmt.Errorf("views: an adopt needs the actor who asks for it")

// relation is what one name is in the engine.
type relation struct {
	exists, view bool
	source       string // what a view reads
	versions     []int  // the name__vN tables
}

func (s *Service) relation(ctx context.Context, table string) (relation, error) {
	rels, err := tsql.ViewCatalog(ctx, s.engine, []string{table}, []string{table + "__v"})
	if err != nil {
		return relation{}, fmt.Errorf("views: %w", err)
	}
	var r relation
	for _, e := range rels {
		if e.Name == table {
			r.exists, r.view, r.source = true, e.View, e.Source
		}
		if name, n, ok := ParseVersion(e.Name); ok && name == table && !e.View {
			r.versions = append(r.versions, n)
		}
	}
	return r, nil
}

// checkAdoptable refuses, naming the reason, a table that cannot be adopted as asked.
func (s *Service) checkAdoptable(ctx context.Context, req AdoptRequest) error {
	t := req.Table
	if name, n, ok := ParseVersion(t); ok {
		return refusef("%s is version v%d of %s, not a plain table: adopt %s", t, n, name, name)
	}
	// A name that needs quoting (order-lines, umsätze) is quoted like every identifier; one
	// with a qualifier is another schema's, which the target's views do not cover.
	if t == "" || strings.ContainsAny(t, ".\x00") {
		return refusef("%q: name a table of the target's own schema, without a qualifier (a table of another schema is in a target of its own: duckdb:PATH?schema=NAME, clickhouse://host:port/DATABASE)", t)
	}
	if req.Grain != "" && !tsql.ValidGrain(req.Grain) {
		return refusef("grain %q: want day, hour or month", req.Grain)
	}
	r, err := s.relation(ctx, t)
	if err != nil {
		return err
	}
	switch {
	case !r.exists:
		return notFoundf("there is no table %s in target %s", t, s.target)
	case r.view && strings.HasPrefix(r.source, t+"__v"):
		return conflictf("%s is a logical table already: its view reads %s", t, r.source)
	case r.view:
		return refusef("%s is a view, not a table: trueup adopts tables", t)
	case len(r.versions) > 0:
		return conflictf("%s exists already beside %s: adopting would need that name", Physical(t, r.versions[0]), t)
	}
	if req.Partition != "" {
		cols, err := s.engine.Columns(ctx, t)
		if err != nil {
			return fmt.Errorf("views: adopt %s: %w", t, err)
		}
		found := false
		for _, c := range cols {
			if c.Name == req.Partition {
				if !c.Kind.Temporal() {
					return refusef("partition column %s of %s is %s, want a date or timestamp", req.Partition, t, c.Type)
				}
				found = true
			}
		}
		if !found {
			return refusef("%s has no column %s to partition by", t, req.Partition)
		}
	}
	why, err := s.engine.AdoptRefusal(ctx, t)
	if err != nil {
		return fmt.Errorf("views: %w", err)
	}
	if why != "" {
		return refusef("cannot adopt %s: %s", t, why)
	}
	return nil
}

// Adopt turns the plain table req.Table into a logical table: it becomes req.Table__v1 and a
// view of its name reads it, so readers keep querying the name. The intent is recorded first,
// so start-up recovery finishes or undoes an adopt a crash cut short (Recover). v1 is then
// recorded live with its rows and checksum, as a version trueup built would be. A table that
// cannot be adopted as asked (a view, missing, adopted already, a version, a qualified name, a
// partition column it does not have, something the rename would break) is refused
// with the reason, and nothing is changed.
func (s *Service) Adopt(ctx context.Context, req AdoptRequest) (Publish, error) {
	if req.Actor == "" {
		return Publish{}, errNoActor
	}
	h, unlock, err := s.lock([]string{req.Table}, req.Actor, KindAdopt)
	if err != nil {
		return Publish{}, err
	}
	defer unlock()
	if err := s.checkAdoptable(ctx, req); err != nil {
		return Publish{}, err
	}
	p := Publish{Kind: KindAdopt, Target: s.target, Table: req.Table, Changes: []Change{{Table: req.Table, From: 0, To: 1}},
		Actor: req.Actor, Reason: adoptReason(req)}
	return s.carryOut(ctx, h, p, func(ctx context.Context) error {
		return s.engine.AdoptTable(ctx, req.Table, Physical(req.Table, 1))
	})
}

// Unadopt reverses an adopt while v1 is the table's only version: the view is dropped and
// table__v1 goes back under the table's name, and the ledger forgets the version (adopting
// again records it afresh).
func (s *Service) Unadopt(ctx context.Context, req AdoptRequest) (Publish, error) {
	t := req.Table
	if req.Actor == "" {
		return Publish{}, errNoActor
	}
	h, unlock, err := s.lock([]string{t}, req.Actor, KindUnadopt)
	if err != nil {
		return Publish{}, err
	}
	defer unlock()
	r, err := s.relation(ctx, t)
	if err != nil {
		return Publish{}, err
	}
	switch {
	case r.exists && r.view && r.source != Physical(t, 1) && len(r.versions) > 1:
		return Publish{}, conflictf("%s reads %s and has the version tables %s: an adopt can be undone only while v1 is its only version",
			t, r.source, versionTables(t, r.versions))
	case !r.exists || !r.view || r.source != Physical(t, 1):
		return Publish{}, conflictf("%s is not an adopted table (a view reading %s): nothing to undo", t, Physical(t, 1))
	}
	vs, err := s.store.List(ctx, s.target, t)
	if err != nil {
		return Publish{}, err
	}
	for _, v := range vs {
		if v.N != 1 {
			return Publish{}, conflictf("%s has %s too: an adopt can be undone only while v1 is its only version", t, v.Name())
		}
	}
	if len(r.versions) != 1 {
		return Publish{}, conflictf("%s has the version tables %s: an adopt can be undone only while v1 is its only version", t, versionTables(t, r.versions))
	}
	p := Publish{Kind: KindUnadopt, Target: s.target, Table: t, Changes: []Change{{Table: t, From: 1, To: 0}},
		Actor: req.Actor, Reason: req.Reason}
	return s.carryOut(ctx, h, p, func(ctx context.Context) error {
		return s.engine.UnadoptTable(ctx, t, Physical(t, 1))
	})
}

// versionTables names table's version tables ns, e.g. "sales__v1, sales__v2".
func versionTables(table string, ns []int) string {
	names := make([]string, len(ns))
	for i, n := range ns {
		names[i] = Physical(table, n)
	}
	return strings.Join(names, ", ")
}

func adoptReason(req AdoptRequest) string {
	var b strings.Builder
	b.WriteString(req.Reason)
	if req.Partition != "" {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "partition %s", req.Partition)
		if req.Grain != "" {
			fmt.Fprintf(&b, " by %s", req.Grain)
		}
	}
	return b.String()
}

// carryOut records p's intent, runs do on the engine and records the outcome, which
// settleAdopt reads from the engine: done when the table is as p asked, failed when it is as it
// was.
func (s *Service) carryOut(ctx context.Context, h *holder, p Publish, do func(context.Context) error) (Publish, error) {
	if err := s.recordIntent(ctx, h, &p); err != nil {
		return p, err
	}
	if s.hooks.AfterIntent != nil {
		s.hooks.AfterIntent(p)
	}
	ctx = context.WithoutCancel(ctx) // the outcome must be recorded whatever happens to the request
	doErr := do(ctx)
	if s.hooks.AfterRepoint != nil {
		s.hooks.AfterRepoint(p)
	}
	settled, err := s.settleAdopt(ctx, p, doErr)
	if err != nil {
		s.keepHeld(h)
		return p, err
	}
	if doErr != nil && settled.State != PublishDone {
		return settled, fmt.Errorf("views: %s %s: %w", p.Kind, p.Table, doErr)
	}
	return settled, nil
}

// settleAdopt reads what an adopt or its undo left in the engine and records it: done (v1
// recorded live after an adopt, the versions forgotten after an undo), failed or abandoned when
// the table is as it was (cause says why, nil after a crash), or — a name missing, the moment a
// crash on ClickHouse 18.16 can leave — finished now.
func (s *Service) settleAdopt(ctx context.Context, p Publish, cause error) (Publish, error) {
	t := p.Table
	r, err := s.relation(ctx, t)
	if err != nil {
		return p, err
	}
	hasV1 := len(r.versions) == 1 && r.versions[0] == 1
	adopted := r.exists && r.view && r.source == Physical(t, 1)
	plain := r.exists && !r.view && len(r.versions) == 0
	undone := func(detail string) {
		p.State, p.Detail = PublishFailed, detail
		if cause == nil {
			p.State = PublishAbandoned
		}
	}
	switch {
	case p.Kind == KindAdopt && adopted:
		err = s.engine.FinishAdopt(ctx, t, Physical(t, 1))
		p.State = PublishDone
	case p.Kind == KindUnadopt && plain:
		p.State = PublishDone
	case p.Kind == KindAdopt && !r.exists && hasV1:
		err = s.engine.RepointViews(ctx, []tsql.ViewPoint{{View: t, Table: Physical(t, 1)}})
		p.State, p.Detail = PublishDone, "the view was missing after the rename; it was created now"
	case p.Kind == KindUnadopt && !r.exists && hasV1:
		err = s.engine.UnadoptTable(ctx, t, Physical(t, 1))
		p.State, p.Detail = PublishDone, "the view was dropped and the rename not made; it was made now"
	case p.Kind == KindAdopt && plain, p.Kind == KindUnadopt && adopted:
		undone(fmt.Sprintf("%s is as it was", t))
	default:
		undone(fmt.Sprintf("the engine has %s as %+v; the ledger follows it", t, r))
	}
	if err != nil {
		return p, fmt.Errorf("views: %s %s #%d: finishing it failed (%v): it stays recorded as an intent until a restart lets recovery settle it", p.Kind, t, p.ID, err)
	}
	if cause != nil && p.State != PublishDone {
		p.Detail = cause.Error()
	}
	var v Version
	if p.State == PublishDone && p.Kind == KindAdopt {
		rows, sum, err := Fingerprint(ctx, s.engine, Physical(t, 1))
		if err != nil {
			return p, err
		}
		v = Version{Target: s.target, Table: t, N: 1, State: StateLive, BuiltBy: p.Actor, Rows: rows, Checksum: sum}
	}
	p.FinishedAt = s.ledger.Now()
	err = s.ledger.Tx(ctx, func(tx *dbsql.Tx) error {
		if err := s.writeOutcome(ctx, tx, &p, false); err != nil {
			return err
		}
		// no listener hears of an adopt (tell): nothing is left to tell after a crash either
		if _, err := tx.ExecContext(ctx, `UPDATE swaps SET notified_at = ? WHERE id = ?`, s.ledger.Now(), p.ID); err != nil {
			return err
		}
		if p.State == PublishDone {
			// adopting again after an undo records v1 afresh: the ledger keeps no version of a
			// plain table
			if _, err := tx.ExecContext(ctx, `DELETE FROM versions WHERE target = ? AND table_name = ?`, s.target, t); err != nil {
				return err
			}
			if p.Kind == KindAdopt {
				if err := s.store.Add(ctx, tx, v); err != nil {
					return err
				}
			}
		}
		outcome := ledger.OutcomeFailed
		if p.State == PublishDone {
			outcome = ledger.OutcomeOK
		}
		e := s.auditEntry(p, outcome, nil)
		e.Action = "table." + p.Kind
		if v.N != 0 {
			e.Params["rows"], e.Params["checksum"] = v.Rows, v.Checksum
		}
		_, err := s.ledger.AuditTx(ctx, tx, e)
		return err
	})
	if err != nil {
		return p, fmt.Errorf("views: record outcome of %s #%d (start-up recovery will settle it): %w", p.Kind, p.ID, err)
	}
	if s.hooks.AfterOutcome != nil {
		s.hooks.AfterOutcome(p)
	}
	return p, nil
}
