package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"trueup/backfill"
	"trueup/fault"
	"trueup/ops"
	"trueup/server/page"
)

// backfillDryRun answers POST /backfills/:name/dry-run: the diff of the new rows against the live
// version, nothing written to the tables. Where the server keeps diffs, each table's diff is
// kept and the browser is sent to the dry run's page (backfillDryRunShow), which a reload shows
// again and the plan links; a dry run with notes (a blocked plan) is shown at once, notes and all.
func (s *Server) backfillDryRun(c echo.Context, svc ops.Backfills) error {
	ctx := c.Request().Context()
	name := c.Param("name")
	pv, err := svc.DryRun(ctx, ops.BackfillRequest{Name: name})
	if err != nil {
		return err
	}
	d := page.DryRun{Chrome: s.chrome("Dry run of "+name, "Backfills"), Name: name, Href: backfillHref(name), OK: pv.OK, Notes: pv.Notes}
	if pv.Plan != nil {
		d.Blocked = pv.Plan.Blocked()
		for _, f := range pv.Plan.Findings {
			if f.Severity == "blocking" {
				d.Notes = append(d.Notes, "blocked: "+f.Message)
			}
		}
	}
	for _, t := range pv.Tables {
		if s.opt.Diffs != nil {
			if _, err := s.opt.Diffs.Save(ctx, t.Result, dryRunLabel(name)+t.Table, s.actor(c)); err != nil {
				return err
			}
		}
		d.Tables = append(d.Tables, previewTable(t))
	}
	if s.opt.Diffs != nil && len(d.Notes) == 0 && len(pv.Tables) > 0 {
		return c.Redirect(http.StatusSeeOther, backfillHref(name)+"/dry-run")
	}
	return render(c, http.StatusOK, page.DryRunPage(d))
}

func previewTable(t backfill.PreviewTable) page.DiffTable {
	res := t.Result
	d := page.DiffTable{Table: t.Table, Live: t.Live, New: res.New.Relation, ExpectationsMet: res.ExpectationsMet}
	if res.Expectations != "" {
		d.Expect = res.Expectations
	}
	for _, m := range res.Measures {
		d.Measures = append(d.Measures, sumOf(m))
	}
	if res.ID != 0 {
		d.Href = diffHref(res.ID)
	}
	for _, p := range res.Partitions {
		if p.Unchanged() {
			d.Unchanged++
			continue
		}
		row := page.ChangedRow{Partition: p.Partition, OldCount: p.OldCount, NewCount: p.NewCount,
			Delta: p.Delta, Pct: pct(p.PctChange), Verdict: p.Verdict}
		for _, m := range res.Measures {
			row.Measures = append(row.Measures, pct((*float64)(p.Measures[m].PctChange)))
		}
		d.Changed = append(d.Changed, row)
	}
	chartAndHeadline(&d, resultPartitions(res, t.Table))
	return d
}

// backfillRun answers POST /backfills/:name/run: start building in the background.
func (s *Server) backfillRun(c echo.Context) error {
	return s.backfillWrite(c, func(svc ops.Backfills, req ops.BackfillRequest) error {
		sample, _ := strconv.Atoi(c.FormValue("sample"))
		// The page's "Run again" asks before it builds the version after a validated one.
		_, err := svc.Run(c.Request().Context(), ops.BackfillRunRequest{Name: req.Name, Sample: max(sample, 0), Actor: req.Actor,
			NewVersion: c.FormValue("new_version") == "true"})
		return err
	})
}

// backfillResume answers POST /backfills/:name/resume.
func (s *Server) backfillResume(c echo.Context) error {
	return s.backfillWrite(c, func(svc ops.Backfills, req ops.BackfillRequest) error {
		_, err := svc.Resume(c.Request().Context(), req)
		return err
	})
}

// backfillCancel answers POST /backfills/:name/cancel.
func (s *Server) backfillCancel(c echo.Context) error {
	return s.backfillWrite(c, func(svc ops.Backfills, req ops.BackfillRequest) error {
		_, err := svc.Cancel(c.Request().Context(), req)
		return err
	})
}

// backfillWrite carries out a form's action on the backfill named in the path, as the signed-in
// operator, and takes the browser back to the backfill's page.
func (s *Server) backfillWrite(c echo.Context, fn func(ops.Backfills, ops.BackfillRequest) error) error {
	svc, err := s.backfills()
	if err != nil {
		return err
	}
	name := c.Param("name")
	if err := fn(svc, ops.BackfillRequest{Name: name, Actor: s.actor(c)}); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, backfillHref(name))
}

// apiBackfillAction answers POST /api/v1/backfills/:name/{dry-run,run,resume,cancel,window}.
func (s *Server) apiBackfillAction(c echo.Context, svc ops.Backfills) error {
	ctx := c.Request().Context()
	scope, err := apiScope(c)
	if err != nil {
		return err
	}
	req := ops.BackfillRequest{Name: c.Param("name"), Scope: scope, Actor: s.actor(c)}
	switch c.Param("action") {
	case "dry-run":
		pv, err := svc.DryRun(ctx, req)
		return answer(c, pv, err)
	case "run":
		sample := 0
		if v := c.QueryParam("sample"); v != "" {
			if sample, err = strconv.Atoi(v); err != nil || sample < 0 {
				return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("?sample=%q: want a number of partitions, 0 or more.", v))
			}
		}
		full := false
		if v := c.QueryParam("allow_full_rewrite"); v != "" {
			if full, err = strconv.ParseBool(v); err != nil {
				return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("?allow_full_rewrite=%q: want true or false.", v))
			}
		}
		newVersion, catchUp := false, false
		for name, v := range map[string]*bool{"new_version": &newVersion, "catch_up": &catchUp} {
			if q := c.QueryParam(name); q != "" {
				if *v, err = strconv.ParseBool(q); err != nil {
					return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("?%s=%q: want true or false.", name, q))
				}
			}
		}
		run, err := svc.Run(ctx, ops.BackfillRunRequest{Name: req.Name, Sample: sample, Scope: scope, Actor: req.Actor,
			AllowFullRewrite: full, NewVersion: newVersion, CatchUp: catchUp})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusAccepted, run)
	case "resume":
		run, err := svc.Resume(ctx, req)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusAccepted, run)
	case "window":
		wr, err := svc.RunWindows(ctx, ops.WindowRequest{Name: req.Name, Window: c.QueryParam("window"), Actor: req.Actor})
		return answer(c, wr, err)
	case "cancel":
		run, err := svc.Cancel(ctx, req)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusAccepted, run)
	}
	return echo.NewHTTPError(http.StatusNotFound, "unknown action")
}

// apiScope reads the from and to query parameters (YYYY-MM-DD) that replace a backfill's scope,
// as --from and --to do on the command line. A bad one is a 400, as any bad query parameter.
func apiScope(c echo.Context) (*backfill.Scope, error) {
	scope, err := backfill.ParseScope(c.QueryParam("from"), c.QueryParam("to"))
	if err != nil {
		return nil, echo.NewHTTPError(http.StatusBadRequest, fault.Message(err)).SetInternal(err)
	}
	return scope, nil
}
