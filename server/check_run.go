package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/ops"
)

// apiCheckRun answers POST /api/v1/check: one run of the rules named (every rule when none is)
// that carry any of the tags, recorded and answered as `trueup check --format json` prints it.
// 404 for an unknown rule or when none matches, 409 when one of them is running. A run whose
// rules fail is still a 200: the results say so.
func (s *Server) apiCheckRun(c echo.Context) error {
	if s.opt.Rules == nil {
		return echo.NewHTTPError(http.StatusNotFound, "No rules are loaded on this server.")
	}
	var req ops.CheckRequest
	if err := bindBody(c, &req, `a check request {"rules": […], "tags": […]}`); err != nil {
		return err
	}
	req.Actor = s.actor(c)
	run, err := s.rules.Check(c.Request().Context(), req)
	return answer(c, run, err)
}
