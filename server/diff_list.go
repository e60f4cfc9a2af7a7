package server

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/reconcile"
	"trueup/server/page"
)

// diffListLimit is how many stored diffs the list shows.
const diffListLimit = 100

func (s *Server) diffList(c echo.Context) ([]reconcile.Saved, error) {
	if s.opt.Diffs == nil {
		return nil, echo.NewHTTPError(http.StatusNotFound, "Diffs are not kept by this server.")
	}
	list, err := s.opt.Diffs.List(c.Request().Context(), diffListLimit)
	if list == nil {
		list = []reconcile.Saved{}
	}
	return list, err
}

// diffListShow answers GET /diffs: the stored diffs, newest first.
func (s *Server) diffListShow(c echo.Context) error {
	list, err := s.diffList(c)
	if err != nil {
		return err
	}
	d := page.DiffList{Chrome: s.chrome("Diffs", "Backfills")}
	for _, x := range list {
		d.Diffs = append(d.Diffs, page.DiffListRow{
			ID: x.ID, Href: diffHref(x.ID), At: formatTime(x.CreatedAt), Label: x.Label,
			Old: x.Old.Relation, New: x.New.Relation, Met: x.ExpectationsMet, Differs: x.Differs,
			Partitions: x.Partitions, Unexpected: x.Unexpected,
			Rows: fmt.Sprintf("+%d −%d ~%d", x.Rows.Added, x.Rows.Removed, x.Rows.Changed),
		})
	}
	return render(c, http.StatusOK, page.DiffListPage(d))
}

// apiDiffList answers GET /api/v1/diffs.
func (s *Server) apiDiffList(c echo.Context) error {
	list, err := s.diffList(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}
