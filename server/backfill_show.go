package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/backfill"
	"trueup/fault"
	"trueup/ops"
	"trueup/server/page"
	"trueup/views"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// backfillShow answers GET /backfills/:name: the computed plan and the latest run.
func (s *Server) backfillShow(c echo.Context, svc ops.Backfills) error {
	ctx := c.Request().Context()
	name := c.Param("name")
	p, err := svc.Plan(ctx, ops.BackfillRequest{Name: name, Actor: s.actor(c)})
	if errors.Is(err, fault.ErrNotFound) {
		return err
	}
	d := page.BackfillShow{Chrome: s.chrome("Backfill "+name, "Backfills"), Name: name, Href: backfillHref(name)}
	if err != nil {
		d.Error = err.Error()
	} else {
		fillPlan(&d, p)
	}
	st, err := svc.Status(ctx, ops.BackfillRequest{Name: name})
	switch {
	case err == nil:
		if d.Progress, err = s.progressOf(ctx, name, st); err != nil {
			return err
		}
	case errors.Is(err, fault.ErrNotFound):
		st = nil
	default:
		return err
	}
	if d.DownstreamOnly {
		if d.Refreshed, err = s.latestRefresh(ctx, svc, name); err != nil {
			return err
		}
	}
	if d.Actions, err = s.backfillActions(ctx, name, st, d.Blocked); err != nil {
		return err
	}
	if d.DryRun, err = s.dryRunLink(ctx, name); err != nil {
		return err
	}
	return render(c, http.StatusOK, page.BackfillShowPage(d))
}

func fillPlan(d *page.BackfillShow, p *backfill.Plan) {
	d.Table, d.Target, d.Live, d.Reason, d.Objective = p.Table, p.Target, p.Live, p.Reason, p.Objective
	d.Scope, d.Grain, d.Partitions, d.InputsOK = p.Scope, p.Grain, p.Partitions, p.InputsOK
	d.Write, d.Rollback, d.Notice, d.Score, d.ScoreMissing = p.Write, p.Rollback, p.Notice, p.Score, p.ScoreMissing
	d.Validation, d.Expect, d.Blocked, d.Refreshes = strings.Join(p.Validation, ", "), p.Expect, p.Blocked(), len(p.Downstream)
	d.Description, d.DownstreamOnly, d.Owner = p.Description, p.DownstreamOnly, p.Owner
	for _, up := range p.RefreshedBy {
		d.RefreshedBy = append(d.RefreshedBy, page.Link{Text: up, Href: backfillHref(up)})
	}
	d.Pace = fmt.Sprintf("%s at once, %s between partitions", page.Plural(p.Concurrency, "partition", "partitions"), p.Throttle)
	if p.Window != "" {
		d.Pace += ", only " + p.Window + " UTC"
	}
	for _, in := range p.Inputs {
		v := in.Presence(func(missing []string) string { return "no rows for " + strings.Join(missing, ", ") })
		d.Inputs = append(d.Inputs, page.KeyValue{Key: in.Relation, Value: v})
	}
	for _, t := range p.RefreshesByTable() {
		d.Downstream = append(d.Downstream, page.KeyValue{Key: t.Table, Value: page.Plural(t.Partitions, "partition", "partitions")})
	}
	for _, f := range p.Findings {
		d.Findings = append(d.Findings, page.Finding{Severity: f.Severity, Message: f.Message})
	}
	for _, l := range p.Layouts {
		d.Layouts = append(d.Layouts, page.KeyValue{Key: l.Table, Value: l.Text})
	}
}

// latestRefresh is the newest run of an upstream backfill that refreshed the table of name, a
// backfill run only as a downstream one; nil before any did.
func (s *Server) latestRefresh(ctx context.Context, svc ops.Backfills, name string) (*page.BackfillRefresh, error) {
	list, err := svc.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range list {
		if b.Name != name || b.Latest == nil || b.Via == "" {
			continue
		}
		r := &page.BackfillRefresh{RunID: b.Latest.RunID, Via: b.Via, Href: backfillHref(b.Via), State: b.Latest.State}
		for _, t := range b.Latest.Tables {
			if t.Table == b.Table {
				r.Version, r.Done, r.Total = t.Version, t.Done, t.Total
			}
		}
		if b.LastAt != nil {
			r.At = formatTime(*b.LastAt)
		}
		return r, nil
	}
	return nil, nil
}

// backfillProgress answers GET /backfills/:name/progress: the fragment htmx polls.
func (s *Server) backfillProgress(c echo.Context, svc ops.Backfills) error {
	name := c.Param("name")
	st, err := svc.Status(c.Request().Context(), ops.BackfillRequest{Name: name})
	if err != nil {
		return err
	}
	p, err := s.progressOf(c.Request().Context(), name, st)
	if err != nil {
		return err
	}
	// The plan's buttons follow the run (the plan itself is not computed again: a blocked plan's
	// Run is refused with its reason).
	a, err := s.backfillActions(c.Request().Context(), name, st, false)
	if err != nil {
		return err
	}
	a.OOB, p.Actions = true, &a
	return render(c, http.StatusOK, page.BackfillProgressFragment(*p))
}

// progressOf is the progress fragment's view of a run, with what became of the versions it
// built since: a page that still offered to publish them after a swap or a rollback misled.
func (s *Server) progressOf(ctx context.Context, name string, st *backfill.Status) (*page.BackfillProgress, error) {
	p := progressView(name, st)
	pub, err := s.runPublished(ctx, st)
	if err != nil {
		return nil, err
	}
	if pub != nil {
		p.Published, p.PublishHref = pub, ""
	}
	return p, nil
}

// backfillActions lays out the plan's buttons by the latest run (st, nil before the first):
// off while it builds or validates, and while the table has a validated version not published,
// a Run again that names the version it would build and asks first (ops refuses it unasked).
func (s *Server) backfillActions(ctx context.Context, name string, st *backfill.Status, blocked bool) (page.BackfillActions, error) {
	a := page.BackfillActions{Href: backfillHref(name), Blocked: blocked}
	if st == nil || st.Run == nil {
		return a, nil
	}
	a.Table = st.Table
	a.InFlight = st.State == backfill.RunRunning || st.State == backfill.RunValidating
	if a.InFlight || s.opt.Tables == nil {
		return a, nil
	}
	l, err := s.opt.Tables.Versions(ctx, ops.VersionsRequest{Target: st.Run.Target, Table: st.Table})
	if errors.Is(err, fault.ErrNotFound) {
		return a, nil // a target without versions set up
	}
	if err != nil {
		return a, err
	}
	next := 0
	for _, v := range l.Versions {
		if v.State == views.StateValidated {
			a.Waiting = v.Name()
		}
		next = max(next, v.N+1)
	}
	a.Next = views.VersionName(next)
	return a, nil
}

// apiBackfillShow answers GET /api/v1/backfills/:name: the plan.
func (s *Server) apiBackfillShow(c echo.Context, svc ops.Backfills) error {
	scope, err := apiScope(c)
	if err != nil {
		return err
	}
	p, err := svc.Plan(c.Request().Context(), ops.BackfillRequest{Name: c.Param("name"), Scope: scope, Actor: s.actor(c)})
	return answer(c, p, err)
}

// apiBackfillStatus answers GET /api/v1/backfills/:name/status.
func (s *Server) apiBackfillStatus(c echo.Context, svc ops.Backfills) error {
	st, err := svc.Status(c.Request().Context(), ops.BackfillRequest{Name: c.Param("name")})
	return answer(c, st, err)
}
