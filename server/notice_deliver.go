package server

import (
	"github.com/labstack/echo/v4"

	"trueup/ops"
)

// apiNoticeDeliver answers POST /api/v1/notices/deliver: one delivery pass over the outbox now
// (bounded by ops.DeliverTimeout), answered with how many were delivered, are to be retried and
// failed for good. `trueup notice deliver` through a server (whose worker also delivers on its
// own).
func (s *Server) apiNoticeDeliver(c echo.Context, n ops.Notices) error {
	rep, err := n.Deliver(c.Request().Context())
	return answer(c, rep, err)
}
