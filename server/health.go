package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// readyTimeout is how long /readyz gives each target to answer SELECT 1.
const readyTimeout = 2 * time.Second

// healthz answers GET /healthz: the process is up and serving.
func (s *Server) healthz(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.String(http.StatusOK, "ok")
}

// readyz answers GET /readyz: 200 when every target answers SELECT 1 within readyTimeout,
// otherwise 503 with one line per failing target.
func (s *Server) readyz(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	errs := make([]error, len(s.opt.Targets))
	var wg sync.WaitGroup
	for i, t := range s.opt.Targets {
		wg.Go(func() {
			if t.Engine == nil {
				errs[i] = errNotConnected
				return
			}
			ctx, cancel := context.WithTimeout(c.Request().Context(), readyTimeout)
			defer cancel()
			err := t.Engine.Ping(ctx)
			if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				err = fmt.Errorf("no answer within %s", readyTimeout)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	var b strings.Builder
	for i, err := range errs {
		if err != nil {
			fmt.Fprintf(&b, "target %s: %s\n", s.opt.Targets[i].Name, oneLine(err))
		}
	}
	if b.Len() > 0 {
		return c.String(http.StatusServiceUnavailable, b.String())
	}
	return c.String(http.StatusOK, "ok")
}
