package server

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"trueup/fault"
	"trueup/ops"
	"trueup/server/page"
	"trueup/views"
)

// tableAdopt answers POST /tables/{table}/adopt, the button of a plain table's page: adopt it
// (undo=yes reverses an adopt) and show its versions page; a refusal shows the page again with
// the reason.
func (s *Server) tableAdopt(c echo.Context, t ops.Tables) error {
	req := ops.AdoptRequest{Subject: s.tableWrite(c, requestTarget(c)), Partition: c.FormValue("partition"),
		Grain: c.FormValue("grain"), Reason: c.FormValue("reason"), Undo: c.FormValue("undo") == "yes"}
	p, err := t.Adopt(c.Request().Context(), req)
	if k := fault.Of(err); k == fault.Invalid || k == fault.Conflict {
		d := s.adoptView(req.Table, req.Target)
		d.Error = fault.Message(err)
		return render(c, statusOf(k), page.TableAdoptPage(d))
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, tableHref(p.Table, p.Target)+"&done="+strconv.FormatInt(p.ID, 10))
}

// apiTableAdopt answers POST /api/v1/tables/{table}/adopt: the adopt (or, with "undo": true,
// its reversal) as a publish. `trueup adopt TABLE` through a server.
func (s *Server) apiTableAdopt(c echo.Context, t ops.Tables) error {
	var req ops.AdoptRequest
	if err := bindBody(c, &req, `an adopt request {"partition": "d", "grain": "day", "reason": "…"}`); err != nil {
		return err
	}
	req.Subject = s.tableWrite(c, req.Target)
	p, err := t.Adopt(c.Request().Context(), req)
	return answer(c, p, err)
}

// plainTablePage is the page of a table that is plain, not logical yet.
func (s *Server) plainTablePage(c echo.Context, pe *views.PlainTableError) error {
	d := s.adoptView(pe.Table, pe.Target)
	if id, err := strconv.ParseInt(c.QueryParam("done"), 10, 64); err == nil && id > 0 {
		d.Flash = "The adopt was undone: " + pe.Table + " is a plain table again."
	}
	return render(c, http.StatusOK, page.TableAdoptPage(d))
}

func (s *Server) adoptView(table, target string) page.TableAdopt {
	return page.TableAdopt{Chrome: s.chrome(table, "Tables"), Table: table, Target: target,
		Action: "/tables/" + url.PathEscape(table) + "/adopt"}
}
