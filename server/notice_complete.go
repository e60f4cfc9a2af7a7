package server

import (
	"github.com/labstack/echo/v4"

	"trueup/notices"
	"trueup/ops"
)

// apiNoticeComplete answers POST /api/v1/notices/{id}/complete: an announced notice marked
// done by hand (a swap marks it on its own), with an optional note. `trueup notice complete`.
func (s *Server) apiNoticeComplete(c echo.Context) error {
	var req ops.NoticeReasonRequest
	if err := bindBody(c, &req, `a completion {"reason": "…"}`); err != nil {
		return err
	}
	return s.apiNotice(c, func(n ops.Notices, id int64) (notices.JSON, error) {
		req.ID, req.Actor = id, s.actor(c)
		return n.Complete(c.Request().Context(), req)
	})
}
