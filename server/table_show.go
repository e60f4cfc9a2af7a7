package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"trueup/server/page"
	"trueup/views"
)

// publishesPerPage is how many swaps and rollbacks a page of a table's history shows.
const publishesPerPage = 20

// tableShow answers GET /tables/{table}: the versions page, its history a page at a time.
func (s *Server) tableShow(c echo.Context) error {
	table := c.Param("table")
	_, svc, err := s.tableService(c, table)
	if err != nil {
		return err
	}
	w, err := pageWindow(c, publishesPerPage, publishesPerPage)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	l, err := svc.VersionsWithHistory(ctx, table, w.Offset+w.Limit+1)
	if err != nil {
		return tableError(err)
	}
	more := len(l.History) > w.Offset+w.Limit
	l.History = slice(l.History, w)
	d := s.versionsView(l)
	d.Pager = pager(c, w, more)
	if id, err := strconv.ParseInt(c.QueryParam("done"), 10, 64); err == nil && id > 0 {
		if p, err := svc.GetPublish(ctx, id); err == nil {
			verb := "Swapped"
			if p.Kind == views.KindRollback {
				verb = "Rolled back"
			}
			d.Flash = fmt.Sprintf("%s (#%d, %d ms): %s.", verb, p.ID, p.Duration().Milliseconds(), p.Summary())
			for _, w := range p.Warnings {
				d.Flash += " " + w
			}
		}
	}
	return render(c, http.StatusOK, page.TableVersionsPage(d))
}

// tableListRedirect answers GET /tables: the dashboard lists the logical tables.
func (s *Server) tableListRedirect(c echo.Context) error {
	return c.Redirect(http.StatusFound, "/#tables-heading")
}

// apiTableShow answers GET /api/v1/tables/{table}: the versions and ?limit= publishes of the
// history from ?offset= (20 by default, at most 1000; a Link header names the next).
func (s *Server) apiTableShow(c echo.Context) error {
	table := c.Param("table")
	_, svc, err := s.tableService(c, table)
	if err != nil {
		return err
	}
	w, err := pageWindow(c, publishesPerPage, 1000)
	if err != nil {
		return err
	}
	l, err := svc.VersionsWithHistory(c.Request().Context(), table, w.Offset+w.Limit+1)
	if err != nil {
		return tableError(err)
	}
	nextLink(c, w, len(l.History) > w.Offset+w.Limit)
	l.History = slice(l.History, w)
	return c.JSON(http.StatusOK, l.JSON())
}
