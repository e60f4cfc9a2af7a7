package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/server/page"
)

// diffShow answers GET /diffs/{id}: the stored diff with its chart of pct_change per partition,
// the partitions that differ (every one with ?all=1) and the row-level summary.
func (s *Server) diffShow(c echo.Context) error {
	r, err := s.diffOf(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, page.DiffPage(s.diffView(r, c.QueryParam("all") != "")))
}

// apiDiffShow answers GET /api/v1/diffs/{id}: the stored result as `trueup diff --format json`
// prints it, with every partition's samples.
func (s *Server) apiDiffShow(c echo.Context) error {
	r, err := s.diffOf(c)
	return answer(c, r, err)
}
