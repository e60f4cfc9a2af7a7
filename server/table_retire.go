package server

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/fault"
	"trueup/ops"
	"trueup/server/page"
	"trueup/views"
)

// tableRetire answers POST /tables/{table}/retire, a version's Retire button on the versions
// page. Retiring drops the version's table for good, so without confirm=yes and a reason it shows
// what will be dropped and asks why, as withdrawing a notice does (the reason is required here,
// though the API and the CLI keep it optional: the audit log is all that is left of the version).
// Confirmed, it retires as the API does; a refusal in the state of the table (the live version,
// the rollback target, a version holding rows readers never saw) is shown on the confirmation
// with the API's words, 409, the reason kept.
func (s *Server) tableRetire(c echo.Context, t ops.Tables) error {
	ctx := c.Request().Context()
	req := ops.RetireRequest{Subject: s.tableWrite(c, requestTarget(c)), Version: strings.TrimSpace(c.FormValue("version")),
		Reason: strings.TrimSpace(c.FormValue("reason"))}
	if req.Version == "" {
		return echo.NewHTTPError(http.StatusBadRequest, "Say which version to retire (version=vN).")
	}
	n, err := views.ParseVersionArg(req.Table, req.Version)
	if err != nil {
		return err
	}
	j, err := t.Versions(ctx, ops.VersionsRequest{Target: req.Target, Table: req.Table})
	if err != nil {
		return err
	}
	l := j.Listing()
	d := page.TableRetire{Chrome: s.chrome("Retire: "+req.Table+" "+views.VersionName(n), "Tables"), Table: req.Table, Target: j.Target,
		Version: views.VersionName(n), Physical: views.Physical(req.Table, n), Reason: req.Reason,
		Action: "/tables/" + url.PathEscape(req.Table) + "/retire", CancelURL: tableHref(req.Table, j.Target)}
	found := false
	for _, v := range l.Versions {
		if v.N == n {
			found, d.State, d.Rows, d.BuiltBy, d.Backfill = true, v.State, v.Rows, v.BuiltBy, v.Backfill
		}
	}
	if !found {
		return fault.New(fault.NotFound, "%s has no version v%d in target %s", req.Table, n, j.Target)
	}
	if c.FormValue("confirm") != "yes" {
		return render(c, http.StatusOK, page.TableRetirePage(d))
	}
	if req.Reason == "" {
		d.Error = "Say why the version is retired: the audit log keeps the reason."
		return render(c, http.StatusUnprocessableEntity, page.TableRetirePage(d))
	}
	req.Target = j.Target
	_, err = t.Retire(ctx, req)
	if fault.Of(err) == fault.Conflict {
		d.Error = fault.Message(err)
		return render(c, http.StatusConflict, page.TableRetirePage(d))
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, tableHref(req.Table, j.Target)+"&retired="+url.QueryEscape(d.Version))
}

// apiTableRetire answers POST /api/v1/tables/{table}/retire: drop an old version (never the
// live one or the rollback target), then the table's versions as GET /api/v1/tables/{table}
// gives them. `trueup versions TABLE --retire vN` through a server.
func (s *Server) apiTableRetire(c echo.Context, t ops.Tables) error {
	var req ops.RetireRequest
	if err := bindBody(c, &req, `a retire request {"version": "v1", "reason": "…"}`); err != nil {
		return err
	}
	if req.Version == "" { // a field the request needs: a 400, as a swap without "to"
		return echo.NewHTTPError(http.StatusBadRequest, `Say which version to retire: {"version": "v1"}.`)
	}
	req.Subject = s.tableWrite(c, req.Target)
	l, err := t.Retire(c.Request().Context(), req)
	return answer(c, l, err)
}
