package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/fault"
	"trueup/notices"
	"trueup/ops"
	"trueup/server/page"
)

// noticeAnnounce answers POST /notices/{id}/announce: it sends the draft to its subscribers and
// takes the browser back to the notice. Announcing twice is a 409 and sends nothing.
func (s *Server) noticeAnnounce(c echo.Context) error {
	return s.noticeWrite(c, "announce", func(n ops.Notices, id int64) error {
		_, err := n.Announce(c.Request().Context(), ops.NoticeRequest{ID: id, Actor: s.actor(c)})
		return err
	})
}

// noticeEdit answers POST /notices/{id}/edit with the form's title and body (a new revision) or
// its planned_swap (when the change is planned to go live): the page has a form for each.
func (s *Server) noticeEdit(c echo.Context) error {
	req := ops.NoticeEditRequest{Title: c.FormValue("title"), Body: c.FormValue("body"), PlannedSwap: c.FormValue("planned_swap")}
	action := "edit"
	if req.Title == "" && req.Body == "" && req.PlannedSwap != "" {
		action = "plan"
	}
	err := s.noticeWrite(c, action, func(n ops.Notices, id int64) error {
		if err := checkPlannedSwap(req); err != nil {
			return err
		}
		req.ID, req.Actor = id, s.actor(c)
		_, err := n.Edit(c.Request().Context(), req)
		return err
	})
	status, msg, refused := refusal(err)
	if !refused {
		return err
	}
	// Refused (an empty title, a time past): the page again, with what was typed and why, so
	// nothing typed is lost.
	return s.noticeShowing(c, status, func(d *page.NoticeDetail) {
		d.Message, d.EditError = "", msg
		if action == "plan" {
			d.PlannedSwap = req.PlannedSwap
			return
		}
		d.EditTitle, d.EditBody = req.Title, req.Body
	})
}

// refusal is the status and the message of err when it is a request refused as bad input or
// for the state it found (4xx), not a failure: a form can show it beside what was typed.
func refusal(err error) (int, string, bool) {
	var he *echo.HTTPError
	switch {
	case err == nil:
		return 0, "", false
	case errors.As(err, &he) && he.Code >= 400 && he.Code < 500:
		return he.Code, fmt.Sprint(he.Message), true
	case fault.Of(err) == fault.Invalid || fault.Of(err) == fault.Conflict:
		return statusOf(fault.Of(err)), fault.Message(err), true
	}
	return 0, "", false
}

// checkPlannedSwap refuses an edit whose planned time does not parse: that is the request's
// syntax, a 400 as a bad query is (the operation would say 422).
func checkPlannedSwap(req ops.NoticeEditRequest) error {
	if req.PlannedSwap == "" {
		return nil
	}
	if _, err := notices.ParsePlannedSwap(req.PlannedSwap); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, fault.Message(err)).SetInternal(err)
	}
	return nil
}

func (s *Server) noticeWrite(c echo.Context, action string, fn func(ops.Notices, int64) error) error {
	n, id, err := s.noticesFor(c)
	if err != nil {
		return err
	}
	if err := fn(n, id); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, noticeHref(id)+"?done="+action)
}
