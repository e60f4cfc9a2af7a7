package server

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

const keyRequestID = "trueup.request_id"

// logRequests logs one line per request: method, route, status, duration and a request ID that
// is also sent back in X-Request-Id and shown on error pages. Probes and scrapes are logged at
// debug level so they do not drown the rest. The query string is left out: it may carry tokens;
// so is a path's secret parameter (see routeAttrs).
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
		attrs := append([]slog.Attr{slog.String("method", req.Method)}, routeAttrs(c)...)
		s.log.LogAttrs(req.Context(), level, "request", append(attrs,
			slog.Int("status", c.Response().Status),
			slog.Duration("duration", time.Since(start)),
			slog.String("request_id", id),
		)...)
		return nil
	}
}

// routeAttrs names what a request asked for, for the log, without its secrets: the route's
// pattern as path (/notices/:id/ack/:token) and the values of its parameters as param.NAME,
// except secret ones. The path itself is not logged: an acknowledgement link's path is the
// recipient's token. A request no route matched is logged by its path, cut before any
// acknowledgement token.
func routeAttrs(c echo.Context) []slog.Attr {
	route := c.Path()
	if route == "" || route == "/*" {
		p, _, _ := strings.Cut(c.Request().URL.Path, "/ack/")
		return []slog.Attr{slog.String("path", p)}
	}
	attrs := []slog.Attr{slog.String("path", route)}
	var params []any
	for i, name := range c.ParamNames() {
		if !secretParam(name) && i < len(c.ParamValues()) {
			params = append(params, slog.String(name, c.ParamValues()[i]))
		}
	}
	if len(params) > 0 {
		attrs = append(attrs, slog.Group("param", params...))
	}
	return attrs
}

// secretParam reports whether a route parameter is a credential: the token of an
// acknowledgement link.
func secretParam(name string) bool { return name == "token" }

func newRequestID() string {
	b := make([]byte, 8)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}

func requestID(c echo.Context) string {
	id, _ := c.Get(keyRequestID).(string)
	return id
}
