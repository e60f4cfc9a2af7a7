package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/reconcile"
	"trueup/server/page"
)

// diffsPerPage is how many stored diffs a page of the list shows.
const diffsPerPage = 50

// diffList reads one window of the stored diffs, newest first, and whether more follow.
func (s *Server) diffList(c echo.Context, w window) ([]reconcile.Saved, bool, error) {
	if s.diffs == nil {
		return nil, false, errNoDiffs
	}
	list, err := s.diffs.List(c.Request().Context(), w.Offset+w.Limit+1)
	if err != nil {
		return nil, false, err
	}
	more := len(list) > w.Offset+w.Limit
	if list = slice(list, w); list == nil {
		list = []reconcile.Saved{}
	}
	return list, more, nil
}

// diffListShow answers GET /diffs: the stored diffs, newest first.
func (s *Server) diffListShow(c echo.Context) error {
	w, err := pageWindow(c, diffsPerPage, diffsPerPage)
	if err != nil {
		return err
	}
	list, more, err := s.diffList(c, w)
	if err != nil {
		return err
	}
	d := page.DiffList{Chrome: s.chrome("Diffs", "Diffs"), Pager: pager(c, w, more)}
	for _, x := range list {
		d.Diffs = append(d.Diffs, page.DiffListRow{
			ID: x.ID, Href: diffHref(x.ID), At: minuteTime(x.CreatedAt), Label: x.Label,
			Old: x.Old.Relation, New: x.New.Relation, Met: x.ExpectationsMet, Differs: x.Differs,
			Partitions: x.Partitions, Unexpected: x.Unexpected,
			Rows: "+" + page.Thousands(x.Rows.Added) + " −" + page.Thousands(x.Rows.Removed) + " ~" + page.Thousands(x.Rows.Changed),
		})
	}
	return render(c, http.StatusOK, page.DiffListPage(d))
}

// apiDiffList answers GET /api/v1/diffs?limit=&offset= (100 by default, at most 1000; a Link
// header names the next window).
func (s *Server) apiDiffList(c echo.Context) error {
	w, err := pageWindow(c, 100, 1000)
	if err != nil {
		return err
	}
	list, more, err := s.diffList(c, w)
	if err != nil {
		return err
	}
	nextLink(c, w, more)
	return c.JSON(http.StatusOK, list)
}
