package server

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"trueup/ops"
)

// tableCatchUp answers POST /tables/{table}/catch-up, the button the versions page shows when an
// old version was written after it stopped being live: carry those rows into the live version
// and show the page again.
func (s *Server) tableCatchUp(c echo.Context, t ops.Tables) error {
	req := ops.CatchUpRequest{Subject: s.tableWrite(c, requestTarget(c))}
	r, err := t.CatchUp(c.Request().Context(), req)
	if err != nil {
		return err
	}
	n := 0
	for _, sv := range r.Carried {
		n += len(sv.Partitions)
	}
	return c.Redirect(http.StatusSeeOther, tableHref(req.Table, req.Target)+"&caught="+strconv.Itoa(n))
}

// apiTableStale answers GET /api/v1/tables/{table}/stale: the versions written after they
// stopped being live, and the partitions readers do not see.
func (s *Server) apiTableStale(c echo.Context, t ops.Tables) error {
	out, err := t.Stale(c.Request().Context(), ops.VersionsRequest{Target: c.QueryParam("target"), Table: c.Param("table")})
	return answer(c, out, err)
}

// apiTableCatchUp answers POST /api/v1/tables/{table}/catch-up: `trueup catch-up TABLE` through
// a server.
func (s *Server) apiTableCatchUp(c echo.Context, t ops.Tables) error {
	var req ops.CatchUpRequest
	if err := bindBody(c, &req, `a catch-up request {"target": "…"}`); err != nil {
		return err
	}
	req.Subject = s.tableWrite(c, req.Target)
	r, err := t.CatchUp(c.Request().Context(), req)
	return answer(c, r, err)
}
