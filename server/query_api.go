package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/ops"
)

// queries is the query operation, or a 404 on a server without it.
func (s *Server) queries() (ops.Queries, error) {
	if s.opt.Queries == nil {
		return nil, echo.NewHTTPError(http.StatusNotFound, "Queries are not set up on this server.")
	}
	return s.opt.Queries, nil
}

// apiQuery answers POST /api/v1/query: one read-only SELECT (or an exposure by name) with its
// logical tables at named versions or as of a time, and with compare_to_live the live answer
// beside it. `trueup query` through a server. A read: a viewer may.
func (s *Server) apiQuery(c echo.Context) error {
	var req ops.QueryRequest
	if err := bindBody(c, &req, `a query {"sql": "SELECT …", "versions": {"orders": "v1"}, "as_of": "2026-07-20T09:00:00Z", "compare_to_live": true}`); err != nil {
		return err
	}
	q, err := s.queries()
	if err != nil {
		return err
	}
	if t := c.QueryParam("target"); t != "" {
		req.Target = t
	}
	res, err := q.Query(c.Request().Context(), req)
	return answer(c, res, err)
}
