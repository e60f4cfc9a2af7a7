package server

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/notices"
	"trueup/ops"
)

// apiNoticeList answers GET /api/v1/notices?table=&state=&limit=&offset= with the notices,
// newest first (100 by default, at most 1000; a Link header names the next window).
func (s *Server) apiNoticeList(c echo.Context, n ops.Notices) error {
	f, err := noticeFilter(c)
	if err != nil {
		return err
	}
	w, err := pageWindow(c, 100, 1000)
	if err != nil {
		return err
	}
	// one more than the window, to know whether there is a next one
	out, err := n.List(c.Request().Context(), ops.NoticeListRequest{Table: f.Table, State: f.State, Limit: w.Limit + 1, Offset: w.Offset})
	if err != nil {
		return err
	}
	nextLink(c, w, len(out) > w.Limit)
	return c.JSON(http.StatusOK, out[:min(len(out), w.Limit)])
}

// apiNoticeShow answers GET /api/v1/notices/{id} with the notice, its history and evidence.
func (s *Server) apiNoticeShow(c echo.Context) error {
	return s.apiNotice(c, func(n ops.Notices, id int64) (notices.JSON, error) {
		return n.Show(c.Request().Context(), ops.NoticeRequest{ID: id})
	})
}

// apiNoticeAnnounce answers POST /api/v1/notices/{id}/announce; 409 when it is not a draft.
func (s *Server) apiNoticeAnnounce(c echo.Context) error {
	return s.apiNotice(c, func(n ops.Notices, id int64) (notices.JSON, error) {
		return n.Announce(c.Request().Context(), ops.NoticeRequest{ID: id, Actor: s.actor(c)})
	})
}

// apiNoticeWithdraw answers POST /api/v1/notices/{id}/withdraw.
func (s *Server) apiNoticeWithdraw(c echo.Context) error {
	return s.apiNoticeReason(c, "a withdrawal", ops.Notices.Withdraw)
}

// apiNoticeReason binds a {"reason": …} body (what names it in a 400) and carries out op with
// it on the notice the path names, as the caller.
func (s *Server) apiNoticeReason(c echo.Context, what string, op func(ops.Notices, context.Context, ops.NoticeReasonRequest) (notices.JSON, error)) error {
	var req ops.NoticeReasonRequest
	if err := bindBody(c, &req, what+` {"reason": "…"}`); err != nil {
		return err
	}
	return s.apiNotice(c, func(n ops.Notices, id int64) (notices.JSON, error) {
		req.ID, req.Actor = id, s.actor(c)
		return op(n, c.Request().Context(), req)
	})
}

// apiNoticeEdit answers POST /api/v1/notices/{id}/edit: a new revision of a draft's text, or
// when its change is planned to go live.
func (s *Server) apiNoticeEdit(c echo.Context) error {
	var req ops.NoticeEditRequest
	if err := bindBody(c, &req, `a notice edit {"title": "…", "body": "…"} or {"planned_swap": "2026-08-04T09:00:00Z"}`); err != nil {
		return err
	}
	return s.apiNotice(c, func(n ops.Notices, id int64) (notices.JSON, error) {
		if err := checkPlannedSwap(req); err != nil {
			return notices.JSON{}, err
		}
		req.ID, req.Actor = id, s.actor(c)
		return n.Edit(c.Request().Context(), req)
	})
}

func (s *Server) apiNotice(c echo.Context, fn func(ops.Notices, int64) (notices.JSON, error)) error {
	n, id, err := s.noticesFor(c)
	if err != nil {
		return err
	}
	out, err := fn(n, id)
	return answer(c, out, err)
}
