package server

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"
)

const keyRequestID = "trueup.request_id"

// logRequests logs one line per request: method, path, status, duration and a request ID that
// is also sent back in X-Request-Id and shown on error pages. Probes and scrapes are logged at
// debug level so they do not drown the rest. The query string is left out: it may carry tokens.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		id := newRequestID()
		c.Set(keyRequestID, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		if err := next(c); err != nil {
			s.handleError(err, c)
		}
		req := c.Request()
		level := slog.LevelInfo
		switch req.URL.Path {
		case "/healthz", "/readyz", "/metrics":
			level = slog.LevelDebug
		}
		s.log.LogAttrs(req.Context(), level, "request",
			slog.String("method", req.Method),
			slog.String("path", req.URL.Path),
			slog.Int("status", c.Response().Status),
			slog.Duration("duration", time.Since(start)),
			slog.String("request_id", id),
		)
		return nil
	}
}

func newRequestID() string {
	b := make([]byte, 8)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}

func requestID(c echo.Context) string {
	id, _ := c.Get(keyRequestID).(string)
	return id
}
