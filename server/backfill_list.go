package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/backfill"
	"trueup/ops"
	"trueup/server/page"
)

// backfillsPerPage is how many backfills the list shows at once.
const backfillsPerPage = 50

// backfillList answers GET /backfills: every backfill with the tables it writes and its latest
// run (50 to a page) — a backfill that refreshes a downstream table, the upstream run that did —
// and runs by reason.
func (s *Server) backfillList(c echo.Context, svc ops.Backfills) error {
	w, err := pageWindow(c, backfillsPerPage, backfillsPerPage)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	list, err := svc.List(ctx)
	if err != nil {
		return err
	}
	d := page.BackfillList{Chrome: s.chrome("Backfills", "Backfills"), Pager: pager(c, w, len(list) > w.Offset+w.Limit)}
	for _, b := range slice(list, w) {
		row := page.BackfillRow{Name: b.Name, Href: backfillHref(b.Name), Table: b.Table, Reason: b.Reason, Scope: b.Scope, State: "never run"}
		counts := map[string]backfill.TableStatus{}
		if b.Latest != nil {
			row.State, row.RunID = b.Latest.State, b.Latest.RunID
			for _, t := range b.Latest.Tables {
				counts[t.Table] = t
			}
			if b.LastAt != nil {
				row.When = formatTime(*b.LastAt)
			}
			if b.Via != "" {
				row.Via, row.ViaHref = b.Via, backfillHref(b.Via)
			}
		}
		for _, t := range b.Tables {
			c, ok := counts[t]
			row.Tables = append(row.Tables, page.BackfillRowTable{Table: t, Ran: ok, Done: c.Done, Total: c.Total})
		}
		d.Backfills = append(d.Backfills, row)
	}
	history, err := svc.History(ctx)
	if err != nil {
		return err
	}
	for _, h := range history {
		d.Reasons = append(d.Reasons, page.ReasonRow{Reason: h.Reason, Runs: h.Runs, Tables: h.Tables})
	}
	return render(c, http.StatusOK, page.BackfillListPage(d))
}

// apiBackfillList answers GET /api/v1/backfills?limit=&offset= (100 by default, at most 1000;
// a Link header names the next window).
func (s *Server) apiBackfillList(c echo.Context, svc ops.Backfills) error {
	w, err := pageWindow(c, 100, 1000)
	if err != nil {
		return err
	}
	list, err := svc.List(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiWindow(c, w, list))
}

// apiBackfillHistory answers GET /api/v1/backfills/history: past runs counted by reason.
func (s *Server) apiBackfillHistory(c echo.Context, svc ops.Backfills) error {
	h, err := svc.History(c.Request().Context())
	return answer(c, h, err)
}
