package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/server/page"
	"trueup/views"
)

// dashboardShow answers GET /: every target, reachable or not, and every logical table.
func (s *Server) dashboardShow(c echo.Context) error {
	d := page.Dashboard{Chrome: s.chrome("Dashboard", "Dashboard")}
	var tables []views.Table
	for _, t := range s.survey(c.Request().Context()) {
		row := page.TargetRow{Name: t.Name, Tables: len(t.Tables)}
		if t.Engine != nil {
			info := t.Engine.Info()
			row.Kind, row.Version = info.Kind, info.Version.Text
		}
		if t.Err != nil {
			row.Error = oneLine(t.Err)
		}
		d.Targets = append(d.Targets, row)
		tables = append(tables, t.Tables...)
	}
	sortTables(tables)
	work, recent, err := s.dashboardWork(c.Request().Context(), tables)
	if err != nil {
		return err
	}
	d.Work, d.Recent = work, recent
	d.Tables = tableRows(tables)
	return render(c, http.StatusOK, page.DashboardPage(d))
}
