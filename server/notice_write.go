package server

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/fault"
	"trueup/notices"
)

// noticeAnnounce answers POST /notices/{id}/announce: it sends the draft to its subscribers and
// takes the browser back to the notice. Announcing twice is a 409 and sends nothing.
func (s *Server) noticeAnnounce(c echo.Context) error {
	return s.noticeWrite(c, "announce", func(svc NoticeService, id int64) error {
		_, err := svc.Announce(c.Request().Context(), id, s.actor(c))
		return err
	})
}

// noticeWithdraw answers POST /notices/{id}/withdraw with the form's reason.
func (s *Server) noticeWithdraw(c echo.Context) error {
	return s.noticeWrite(c, "withdraw", func(svc NoticeService, id int64) error {
		_, err := svc.Withdraw(c.Request().Context(), id, s.actor(c), c.FormValue("reason"))
		return err
	})
}

// noticeEdit answers POST /notices/{id}/edit with the form's title and body (a new revision) or
// its planned_swap (when the change is planned to go live): the page has a form for each.
func (s *Server) noticeEdit(c echo.Context) error {
	e := noticeEditJSON{Title: c.FormValue("title"), Body: c.FormValue("body"), PlannedSwap: c.FormValue("planned_swap")}
	action := "edit"
	if e.Title == "" && e.Body == "" && e.PlannedSwap != "" {
		action = "plan"
	}
	return s.noticeWrite(c, action, func(svc NoticeService, id int64) error {
		_, err := editNotice(c.Request().Context(), svc, id, s.actor(c), e)
		return err
	})
}

// editNotice edits a draft's text when e has one, then its planned time when e has one, so a
// text that says the time is not set is not saved over the one the plan wrote.
func editNotice(ctx context.Context, svc NoticeService, id int64, actor string, e noticeEditJSON) (notices.Notice, error) {
	var n notices.Notice
	var err error
	if e.Title != "" || e.Body != "" || e.PlannedSwap == "" {
		if n, err = svc.Edit(ctx, id, actor, e.Title, e.Body); err != nil {
			return n, err
		}
	}
	if e.PlannedSwap != "" {
		at, err := notices.ParsePlannedSwap(e.PlannedSwap)
		if err != nil {
			// a time that does not parse is the request's syntax: a 400, as a bad query is
			return n, echo.NewHTTPError(http.StatusBadRequest, fault.Message(err)).SetInternal(err)
		}
		return svc.PlanSwap(ctx, id, actor, at)
	}
	return n, nil
}

func (s *Server) noticeWrite(c echo.Context, action string, fn func(NoticeService, int64) error) error {
	svc, err := s.notices()
	if err != nil {
		return err
	}
	id, err := noticeID(c)
	if err != nil {
		return err
	}
	if err := fn(svc, id); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, noticeHref(id)+"?done="+action)
}
