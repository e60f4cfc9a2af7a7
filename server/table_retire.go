package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/ops"
)

// apiTableRetire answers POST /api/v1/tables/{table}/retire: drop an old version (never the
// live one or the rollback target), then the table's versions as GET /api/v1/tables/{table}
// gives them. `trueup versions TABLE --retire vN` through a server.
func (s *Server) apiTableRetire(c echo.Context, t ops.Tables) error {
	var req ops.RetireRequest
	if err := bindBody(c, &req, `a retire request {"version": "v1", "reason": "…"}`); err != nil {
		return err
	}
	if req.Version == "" { // a field the request needs: a 400, as a swap without "to"
		return echo.NewHTTPError(http.StatusBadRequest, `Say which version to retire: {"version": "v1"}.`)
	}
	req.Subject = s.tableWrite(c, req.Target)
	l, err := t.Retire(c.Request().Context(), req)
	return answer(c, l, err)
}
