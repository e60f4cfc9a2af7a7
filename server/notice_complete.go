package server

import (
	"github.com/labstack/echo/v4"

	"trueup/ops"
)

// apiNoticeComplete answers POST /api/v1/notices/{id}/complete: an announced notice marked
// done by hand (a swap marks it on its own), with an optional note. `trueup notice complete`.
func (s *Server) apiNoticeComplete(c echo.Context) error {
	return s.apiNoticeReason(c, "a completion", ops.Notices.Complete)
}
