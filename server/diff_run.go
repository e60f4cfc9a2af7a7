package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/fault"
	"trueup/ops"
)

// apiDiffRun answers POST /api/v1/diffs: an ad hoc diff of two relations, with `trueup diff`'s
// flags as a JSON ops.DiffRequest. The diff is stored (it gets an id and a page) and answered as
// `trueup diff --format json` prints it. Sides name the server's targets; the server opens no
// other engine, so a target URL is refused.
func (s *Server) apiDiffRun(c echo.Context) error {
	if s.diffs == nil {
		return errNoDiffs
	}
	var req ops.DiffRequest
	if err := bindBody(c, &req, `a diff request {"old": …, "new": …, "key": […]}`); err != nil {
		return err
	}
	if _, err := req.Spec(); err != nil {
		// the request's own values do not parse: a 400, as a bad query is
		return echo.NewHTTPError(http.StatusBadRequest, fault.Message(err)).SetInternal(err)
	}
	req.Label, req.Actor = "api", s.actor(c)
	res, err := s.diffs.Run(c.Request().Context(), req)
	return answer(c, res, err)
}
