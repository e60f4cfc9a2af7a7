package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/fault"
	"trueup/reconcile"
	tsql "trueup/sql"
)

// apiDiffRun answers POST /api/v1/diffs: an ad hoc diff of two relations, with `trueup diff`'s
// flags as a JSON DiffRequest. The diff is stored (it gets an id and a page) and answered as
// `trueup diff --format json` prints it. Sides name the server's targets; the server opens no
// other engine, so a target URL is refused.
func (s *Server) apiDiffRun(c echo.Context) error {
	if s.opt.Diffs == nil {
		return echo.NewHTTPError(http.StatusNotFound, "Diffs are not kept by this server.")
	}
	var req DiffRequest
	if err := bindBody(c, &req, `a diff request {"old": …, "new": …, "key": […]}`); err != nil {
		return err
	}
	spec, err := req.Spec()
	if err != nil {
		// the request's own values do not parse: a 400, as a bad query is
		return echo.NewHTTPError(http.StatusBadRequest, fault.Message(err)).SetInternal(err)
	}
	if spec.Old.Engine, spec.Old.Target, err = s.target(req.OldTarget); err != nil {
		return err
	}
	if spec.New.Engine, spec.New.Target, err = s.target(req.NewTarget); err != nil {
		return err
	}
	ctx := c.Request().Context()
	res, err := reconcile.Diff(ctx, spec)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	if _, err := s.opt.Diffs.Save(ctx, res, "api", s.actor(c)); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// target finds a configured target by name; "" is the default one.
func (s *Server) target(name string) (tsql.Engine, string, error) {
	if name == "" {
		name = s.opt.DefaultTarget
	}
	var names []string
	for _, t := range s.opt.Targets {
		if t.Name == name {
			return t.Engine, t.Name, nil
		}
		names = append(names, t.Name)
	}
	if name == "" && len(s.opt.Targets) == 1 {
		return s.opt.Targets[0].Engine, s.opt.Targets[0].Name, nil
	}
	return nil, "", echo.NewHTTPError(http.StatusNotFound,
		fmt.Sprintf("There is no target %q on this server (it has %s; it opens no other).", name, strings.Join(names, ", ")))
}
