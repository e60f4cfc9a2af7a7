package server

import (
	"github.com/labstack/echo/v4"

	"trueup/notices"
)

// noticeCompleteJSON is the body of POST /api/v1/notices/{id}/complete.
type noticeCompleteJSON struct {
	Reason string `json:"reason" form:"reason"`
}

// apiNoticeComplete answers POST /api/v1/notices/{id}/complete: an announced notice marked
// done by hand (a swap marks it on its own), with an optional note. `trueup notice complete`.
func (s *Server) apiNoticeComplete(c echo.Context) error {
	var body noticeCompleteJSON
	if err := bindBody(c, &body, `a completion {"reason": "…"}`); err != nil {
		return err
	}
	return s.apiNotice(c, func(svc NoticeService, id int64) (notices.Notice, error) {
		return svc.MarkCompleted(c.Request().Context(), id, s.actor(c), body.Reason)
	})
}
