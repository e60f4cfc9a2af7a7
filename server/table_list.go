package server

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"trueup/server/page"
	"trueup/views"
)

// tableList answers GET /tables: the logical tables of every target, target by target.
func (s *Server) tableList(c echo.Context) error {
	d := page.TableList{Chrome: s.chrome("Tables", "Tables")}
	for _, t := range s.survey(c.Request().Context()) {
		tt := page.TargetTables{Name: t.Name}
		if t.Err != nil {
			tt.Error = oneLine(t.Err)
		}
		tables := append([]views.Table{}, t.Tables...)
		sortTables(tables)
		tt.Tables = tableRows(tables)
		d.Targets = append(d.Targets, tt)
	}
	return render(c, http.StatusOK, page.TableListPage(d))
}

// tableRows are logical tables as the lists show them, each opening its page.
func tableRows(tables []views.Table) []page.TableRow {
	out := make([]page.TableRow, 0, len(tables))
	for _, t := range tables {
		out = append(out, page.TableRow{Name: t.Name, Target: t.Target, Live: t.Live, Versions: t.Versions, Rows: t.Rows,
			Href: "/tables/" + url.PathEscape(t.Name) + "?target=" + url.QueryEscape(t.Target)})
	}
	return out
}
