package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/notices"
)

// noticeURL is the link to a notice as messages carry it.
func noticeURL(svc NoticeService, id int64) string { return svc.PublicURL() + noticeHref(id) }

// apiNoticeList answers GET /api/v1/notices?table=&state=&limit=&offset= with the notices,
// newest first (100 by default, at most 1000; a Link header names the next window).
func (s *Server) apiNoticeList(c echo.Context) error {
	svc, err := s.notices()
	if err != nil {
		return err
	}
	f, err := noticeFilter(c)
	if err != nil {
		return err
	}
	w, err := pageWindow(c, 100, 1000)
	if err != nil {
		return err
	}
	ns, err := svc.List(c.Request().Context(), f)
	if err != nil {
		return err
	}
	nextLink(c, w, len(ns) > w.Offset+w.Limit)
	ns = slice(ns, w)
	out := make([]notices.JSON, 0, len(ns))
	for _, n := range ns {
		out = append(out, notices.ToJSON(n, noticeURL(svc, n.ID), false))
	}
	return c.JSON(http.StatusOK, out)
}

// apiNoticeShow answers GET /api/v1/notices/{id} with the notice, its history and evidence.
func (s *Server) apiNoticeShow(c echo.Context) error {
	return s.apiNotice(c, func(svc NoticeService, id int64) (notices.Notice, error) {
		return svc.Get(c.Request().Context(), id)
	})
}

// apiNoticeAnnounce answers POST /api/v1/notices/{id}/announce; 409 when it is not a draft.
func (s *Server) apiNoticeAnnounce(c echo.Context) error {
	if err := bindNoBody(c); err != nil {
		return err
	}
	return s.apiNotice(c, func(svc NoticeService, id int64) (notices.Notice, error) {
		return svc.Announce(c.Request().Context(), id, s.actor(c))
	})
}

// noticeWithdrawJSON is the body of POST /api/v1/notices/{id}/withdraw.
type noticeWithdrawJSON struct {
	Reason string `json:"reason" form:"reason"`
}

// apiNoticeWithdraw answers POST /api/v1/notices/{id}/withdraw.
func (s *Server) apiNoticeWithdraw(c echo.Context) error {
	var body noticeWithdrawJSON
	if err := bindBody(c, &body, `a withdrawal {"reason": "…"}`); err != nil {
		return err
	}
	return s.apiNotice(c, func(svc NoticeService, id int64) (notices.Notice, error) {
		return svc.Withdraw(c.Request().Context(), id, s.actor(c), body.Reason)
	})
}

// noticeEditJSON is the body of POST /api/v1/notices/{id}/edit: a draft's new title and body,
// its planned_swap (2026-08-04T09:00:00Z, or 2026-08-04 09:00 in UTC), or both.
type noticeEditJSON struct {
	Title       string `json:"title" form:"title"`
	Body        string `json:"body" form:"body"`
	PlannedSwap string `json:"planned_swap" form:"planned_swap"`
}

// apiNoticeEdit answers POST /api/v1/notices/{id}/edit: a new revision of a draft's text, or
// when its change is planned to go live.
func (s *Server) apiNoticeEdit(c echo.Context) error {
	var body noticeEditJSON
	if err := bindBody(c, &body, `a notice edit {"title": "…", "body": "…"} or {"planned_swap": "2026-08-04T09:00:00Z"}`); err != nil {
		return err
	}
	return s.apiNotice(c, func(svc NoticeService, id int64) (notices.Notice, error) {
		return editNotice(c.Request().Context(), svc, id, s.actor(c), body)
	})
}

func (s *Server) apiNotice(c echo.Context, fn func(NoticeService, int64) (notices.Notice, error)) error {
	svc, err := s.notices()
	if err != nil {
		return err
	}
	id, err := noticeID(c)
	if err != nil {
		return err
	}
	n, err := fn(svc, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, notices.ToJSON(n, noticeURL(svc, n.ID), true))
}
