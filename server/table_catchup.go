package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/ops"
	"trueup/server/page"
	"trueup/views"
)

// tableCatchUp answers POST /tables/{table}/catch-up, the buttons the versions page shows when an
// old version was written after it stopped being live. Without confirm=yes it shows what the
// catch-up will carry into the live version and what it leaves (with acknowledge=yes: which
// partitions inside a backfill's scope the acknowledgement stops reporting), as a swap shows its
// changes first; confirmed, it carries (or acknowledges) and shows the versions page again.
// The confirmation posts back what it showed (shown=…): one confirmed before more rows were
// written is shown again (409) instead of carrying or acknowledging rows the operator never saw.
// The check runs before the catch-up takes the table, so rows written in that instant are still
// carried, as trueup catch-up would carry them.
func (s *Server) tableCatchUp(c echo.Context, t ops.Tables) error {
	ctx := c.Request().Context()
	req := ops.CatchUpRequest{Subject: s.tableWrite(c, requestTarget(c)), Acknowledge: c.FormValue("acknowledge") == "yes",
		Reason: strings.TrimSpace(c.FormValue("reason"))}
	plan, err := t.CatchUp(ctx, ops.CatchUpRequest{Subject: req.Subject, DryRun: true})
	if err != nil {
		return err
	}
	d := s.catchUpView(req.Table, req.Target, plan, req.Acknowledge)
	d.Reason = req.Reason
	if c.FormValue("confirm") != "yes" {
		return render(c, http.StatusOK, page.TableCatchUpPage(d))
	}
	if c.FormValue("shown") != d.Shown {
		d.Error = "This changed since you looked: what it would do now is below."
		return render(c, http.StatusConflict, page.TableCatchUpPage(d))
	}
	if req.Acknowledge && req.Reason == "" {
		// Required here though the API and the CLI keep it optional: the audit log is the only
		// place that says why rows readers never saw stopped being reported.
		d.Error = "Say how the rows were dealt with: the audit log keeps the reason."
		return render(c, http.StatusUnprocessableEntity, page.TableCatchUpPage(d))
	}
	r, err := t.CatchUp(ctx, req)
	if err != nil {
		return err
	}
	if req.Acknowledge {
		n := 0
		for _, sv := range r.Acknowledged {
			n += len(sv.InScope)
		}
		return c.Redirect(http.StatusSeeOther, tableHref(req.Table, req.Target)+"&acknowledged="+strconv.Itoa(n))
	}
	n := 0
	for _, sv := range r.Carried {
		n += len(sv.Partitions)
	}
	return c.Redirect(http.StatusSeeOther, tableHref(req.Table, req.Target)+"&caught="+strconv.Itoa(n))
}

// catchUpView builds the confirmation step of a catch-up (or, ack, an acknowledgement) from its
// dry run r.
func (s *Server) catchUpView(table, target string, r views.CatchUpResult, ack bool) page.TableCatchUp {
	title := "Catch up " + table
	if ack {
		title = "Acknowledge: " + table
	}
	d := page.TableCatchUp{Chrome: s.chrome(title, "Tables"), Table: table, Target: target, Live: views.Physical(table, r.Live),
		Acknowledge: ack, Action: "/tables/" + url.PathEscape(table) + "/catch-up", CancelURL: tableHref(table, target)}
	var shown []string
	if !ack {
		for _, sv := range r.Carried {
			row := page.CarryRow{From: views.Physical(table, sv.Version)}
			for _, c := range sv.Partitions {
				row.Partitions = append(row.Partitions, c.String())
			}
			d.Carry = append(d.Carry, row)
			shown = append(shown, fmt.Sprintf("v%d: %s", sv.Version, views.CarriedList(sv.Partitions)))
		}
	}
	for _, sv := range r.NotCarried {
		d.Left = append(d.Left, staleRow(sv))
		if ack {
			shown = append(shown, fmt.Sprintf("v%d: %s", sv.Version, views.CarriedList(sv.InScope)))
		}
	}
	d.Shown = strings.Join(shown, "; ")
	return d
}

// staleRow is one stale version as the pages show it: the line trueup catch-up --dry-run prints,
// and what to do about its partitions inside a backfill's scope.
func staleRow(sv views.StaleVersion) page.StaleRow {
	return page.StaleRow{Version: views.VersionName(sv.Version), Line: sv.String(), Todo: sv.NotCarried()}
}

// partitionsLabel names cs for a button: each, or how many when there are more than three.
func partitionsLabel(cs []views.Carried) string {
	if len(cs) > 3 {
		return page.Plural(len(cs), "partition", "partitions")
	}
	return views.CarriedList(cs)
}

// apiTableStale answers GET /api/v1/tables/{table}/stale: the versions written after they
// stopped being live, and the partitions readers do not see.
func (s *Server) apiTableStale(c echo.Context, t ops.Tables) error {
	out, err := t.Stale(c.Request().Context(), ops.VersionsRequest{Target: c.QueryParam("target"), Table: c.Param("table")})
	return answer(c, out, err)
}

// apiTableCatchUp answers POST /api/v1/tables/{table}/catch-up: `trueup catch-up TABLE` through
// a server.
func (s *Server) apiTableCatchUp(c echo.Context, t ops.Tables) error {
	var req ops.CatchUpRequest
	if err := bindBody(c, &req, `a catch-up request {"target": "…"}`); err != nil {
		return err
	}
	req.Subject = s.tableWrite(c, req.Target)
	r, err := t.CatchUp(c.Request().Context(), req)
	return answer(c, r, err)
}
