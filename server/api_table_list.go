package server

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/views"
)

// tableJSON is one logical table in the API.
type tableJSON struct {
	Name     string   `json:"name"`
	Target   string   `json:"target"`
	Live     string   `json:"live"`
	Versions []string `json:"versions"`
	Rows     int64    `json:"rows"`
}

// apiTableList answers GET /api/v1/tables?limit=&offset= with the logical tables of every target
// (100 by default, at most 1000; a Link header names the next window). When a target
// cannot answer it fails with 503 naming the target, rather than return a list that silently
// lacks that target's tables.
func (s *Server) apiTableList(c echo.Context) error {
	w, err := pageWindow(c, 100, 1000)
	if err != nil {
		return err
	}
	var tables []views.Table
	var failed []string
	for _, t := range s.survey(c.Request().Context()) {
		if t.Err != nil {
			failed = append(failed, "target "+t.Name+": "+oneLine(t.Err))
			continue
		}
		tables = append(tables, t.Tables...)
	}
	if len(failed) > 0 {
		return echo.NewHTTPError(http.StatusServiceUnavailable, strings.Join(failed, "; "))
	}
	sortTables(tables)
	nextLink(c, w, len(tables) > w.Offset+w.Limit)
	out := make([]tableJSON, 0, len(tables))
	for _, t := range slice(tables, w) {
		out = append(out, tableJSON{
			Name:     t.Name,
			Target:   t.Target,
			Live:     t.Live,
			Versions: append([]string{}, t.Versions...),
			Rows:     t.Rows,
		})
	}
	return c.JSON(http.StatusOK, out)
}
