package server

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// writeQuery is the query parameters each write route takes: the one place that says so. A
// write given one it does not take is refused (checkWriteQuery) instead of being carried out
// without it: a dry run or a run with ?frm=2026-07-10 covered the file's whole scope. A write
// route not listed takes none (its fields come in its body).
var writeQuery = map[string][]string{
	// The table a write names is in the path; its target may be ?target= on every table write.
	"POST /tables/:table/swap":            {"target"},
	"POST /tables/:table/rollback":        {"target"},
	"POST /tables/:table/adopt":           {"target"},
	"POST /tables/:table/catch-up":        {"target"},
	"POST /tables/:table/retire":          {"target"},
	"POST /api/v1/tables/:table/swap":     {"target"},
	"POST /api/v1/tables/:table/rollback": {"target"},
	"POST /api/v1/tables/:table/retire":   {"target"},
	"POST /api/v1/tables/:table/adopt":    {"target"},
	"POST /api/v1/tables/:table/catch-up": {"target"},
	"POST /api/v1/query":                  {"target"},
	// Where to go after logging in, as GET /login takes it.
	"POST /login": {"next"},
}

// backfillActionQuery is writeQuery of POST /api/v1/backfills/:name/:action, by action: a scope
// replaces the file's on a dry run and a run only (a resume builds what its run planned).
var backfillActionQuery = map[string][]string{
	"dry-run": {"from", "to"},
	"run":     {"from", "to", "sample", "allow_full_rewrite", "new_version", "catch_up"},
	"resume":  nil,
	"cancel":  nil,
	"window":  {"window"},
}

const backfillActionRoute = "POST /api/v1/backfills/:name/:action"

// checkWriteQuery refuses, before its handler runs, a write whose query has a parameter the
// route does not take, or one of them twice (a handler reads the first only), with a 400
// naming it. Reads are left alone: their filters are checked where they are read.
func (s *Server) checkWriteQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		key := req.Method + " " + c.Path()
		if safeMethod(req.Method) || !s.routes[key] || req.URL.RawQuery == "" {
			return next(c)
		}
		known, ok := writeQuery[key]
		if key == backfillActionRoute {
			if known, ok = backfillActionQuery[c.Param("action")]; !ok {
				return next(c) // an action that does not exist: the handler's 404 says so
			}
		}
		if err := queryRefusal(c.QueryParams(), known); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, err.Error())
		}
		return next(c)
	}
}

// queryRefusal is the cause of refusing query q of a route that takes the parameters known, or
// nil when q is one it takes.
func queryRefusal(q map[string][]string, known []string) error {
	takes := "it takes no query parameters"
	if len(known) > 0 {
		ps := make([]string, len(known))
		for i, k := range known {
			ps[i] = "?" + k + "="
		}
		takes = "it takes " + strings.Join(ps, ", ")
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		switch {
		case !slices.Contains(known, k):
			return fmt.Errorf("This request does not take the query parameter %q%s: %s.", k, suggestField(k, slices.Clone(known), "parameter names"), takes)
		case len(q[k]) > 1:
			return fmt.Errorf("The query parameter %q is given %d times: give it once.", k, len(q[k]))
		}
	}
	return nil
}
