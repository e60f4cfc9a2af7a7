package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/views"
)

// retireRequest is the body of POST /api/v1/tables/{table}/retire.
type retireRequest struct {
	Target  string `json:"target" form:"target"`
	Version string `json:"version" form:"version"`
	Reason  string `json:"reason" form:"reason"`
}

// apiTableRetire answers POST /api/v1/tables/{table}/retire: drop an old version (never the
// live one or the rollback target), then the table's versions as GET /api/v1/tables/{table}
// gives them. `trueup versions TABLE --retire vN` through a server.
func (s *Server) apiTableRetire(c echo.Context) error {
	var req retireRequest
	if err := bindBody(c, &req, `a retire request {"version": "v1", "reason": "…"}`); err != nil {
		return err
	}
	table := c.Param("table")
	_, svc, err := s.tableServiceNamed(c, table, req.Target)
	if err != nil {
		return err
	}
	if req.Version == "" {
		return echo.NewHTTPError(http.StatusBadRequest, `Say which version to retire: {"version": "v1"}.`)
	}
	ctx := c.Request().Context()
	if err := svc.Retire(ctx, views.RetireRequest{Table: table, Version: req.Version, Actor: s.tableActor(c), Reason: req.Reason}); err != nil {
		return tableError(err)
	}
	l, err := svc.Versions(ctx, table)
	if err != nil {
		return tableError(err)
	}
	return c.JSON(http.StatusOK, l.JSON())
}
