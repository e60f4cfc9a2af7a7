package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/server/page"
)

// diffPartitionShow answers GET /diffs/{id}/partitions/{partition}: one partition's counts,
// verdict and reasons, and its sample added, removed, changed and duplicate rows.
func (s *Server) diffPartitionShow(c echo.Context) error {
	r, p, err := s.diffPartitionOf(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, page.DiffPartitionPage(s.diffPartitionView(r, p)))
}

// apiDiffPartitionShow answers GET /api/v1/diffs/{id}/partitions/{partition}.
func (s *Server) apiDiffPartitionShow(c echo.Context) error {
	_, p, err := s.diffPartitionOf(c)
	return answer(c, p, err)
}
