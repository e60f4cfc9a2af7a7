package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// noticeDeliverTimeout bounds the delivery pass a request makes; what is not delivered by then
// stays in the outbox for the server's worker.
const noticeDeliverTimeout = 30 * time.Second

// apiNoticeDeliver answers POST /api/v1/notices/deliver: one delivery pass over the outbox now,
// answered with how many were delivered, are to be retried and failed for good. `trueup notice
// deliver` through a server (whose worker also delivers on its own).
func (s *Server) apiNoticeDeliver(c echo.Context) error {
	if err := bindNoBody(c); err != nil {
		return err
	}
	svc, err := s.notices()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), noticeDeliverTimeout)
	defer cancel()
	rep, err := svc.Outbox().Deliver(ctx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return c.JSON(http.StatusOK, rep)
}
