package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/ops"
)

// apiTableRetire answers POST /api/v1/tables/{table}/retire: drop an old version (never the
// live one or the rollback target), then the table's versions as GET /api/v1/tables/{table}
// gives them. `trueup versions TABLE --retire vN` through a server.
func (s *Server) apiTableRetire(c echo.Context) error {
	t, err := s.tables()
	if err != nil {
		return err
	}
	var req ops.RetireRequest
	if err := bindBody(c, &req, `a retire request {"version": "v1", "reason": "…"}`); err != nil {
		return err
	}
	if q := c.QueryParam("target"); q != "" {
		req.Target = q
	}
	req.Table, req.Actor = c.Param("table"), s.tableActor(c)
	l, err := t.Retire(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, l)
}
