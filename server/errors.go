package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"trueup/fault"

	"github.com/labstack/echo/v4"

	"trueup/server/page"
)

// panicError is a handler panic turned into an error, with the stack for the log.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// recoverErrors turns what a handler returns, or panics with, into a response right away, so
// the middleware outside it (request log, metrics) sees the status that was actually sent.
func (s *Server) recoverErrors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				err = &panicError{value: r, stack: debug.Stack()}
			}
			if err != nil {
				s.handleError(err, c)
				err = nil
			}
		}()
		return next(c)
	}
}

// apiError is the JSON body of a failed /api/ request. Failed is true when a check or a
// validation refused the request (the swap gate): the CLI then exits 1, as it does locally,
// where other refusals exit 2.
type apiError struct {
	Error     string `json:"error"`
	Kind      string `json:"kind,omitempty"` // the error's kind (fault): not found, invalid, conflict, refused, failed
	Failed    bool   `json:"failed,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// errCheckFailed marks a refusal caused by a failed check or validation (see apiError.Failed).
var errCheckFailed = errors.New("a check or validation failed")

// checkFailed is a refusal with status code caused by a failed check or validation.
func checkFailed(code int, msg string, cause error) *echo.HTTPError {
	return echo.NewHTTPError(code, msg).SetInternal(fmt.Errorf("%w: %w", errCheckFailed, cause))
}

// handleError is the one place a failed request is logged and answered: server errors are
// logged once, here; the client gets a page (or JSON under /api/) that says what happened
// without internal details. An *echo.HTTPError carries a message meant for the client.
func (s *Server) handleError(err error, c echo.Context) {
	req := c.Request()
	id := requestID(c)
	status := http.StatusInternalServerError
	heading := "Something went wrong"
	msg := "trueup hit an error answering this request. It has been logged; quote the request ID when you report it."
	var he *echo.HTTPError
	kind := fault.Of(err)
	switch {
	case errors.As(err, &he):
		status = he.Code
		heading, msg = describe(he, req)
		if he.Internal != nil {
			kind = fault.Of(he.Internal)
		}
		if kind == fault.None {
			kind = kindOfStatus(he.Code)
		}
	case kind != fault.None:
		status = statusOf(kind)
		heading, msg = headingOf(status), fault.Message(err)
	}

	if status >= 500 {
		attrs := []any{"method", req.Method}
		for _, a := range routeAttrs(c) {
			attrs = append(attrs, a)
		}
		attrs = append(attrs, "status", status, "request_id", id, "err", err)
		var pe *panicError
		if errors.As(err, &pe) {
			attrs = append(attrs, "stack", string(pe.stack))
		}
		level := slog.LevelError
		if he != nil {
			level = slog.LevelWarn // a failure the handler foresaw, e.g. an unreachable target
		}
		s.log.Log(req.Context(), level, "request failed", attrs...)
	}
	if c.Response().Committed {
		return // too late to change the answer; the log line above is all we can do
	}

	if strings.HasPrefix(req.URL.Path, "/api/") {
		body := apiError{Error: msg, Kind: kind.String(), Failed: kind == fault.Failed || errors.Is(err, errCheckFailed), RequestID: id}
		if werr := c.JSON(status, body); werr != nil {
			s.log.Debug("write error response", "request_id", id, "err", werr)
		}
		return
	}
	p := page.Error{
		Chrome:    s.chrome(heading, ""),
		Status:    status,
		Heading:   heading,
		Message:   msg,
		RequestID: id,
	}
	if err := render(c, status, page.ErrorPage(p)); err != nil {
		s.log.Error("render error page", "request_id", id, "err", err)
		c.String(status, msg)
	}
}

// statusOf is the one place an error's kind (fault) becomes an HTTP status.
func statusOf(k fault.Kind) int {
	switch k {
	case fault.NotFound:
		return http.StatusNotFound
	case fault.Conflict:
		return http.StatusConflict
	case fault.Refused:
		return http.StatusForbidden
	case fault.Invalid, fault.Failed:
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}

// kindOfStatus is the kind a client reads in an answer the server gave as a bare status.
func kindOfStatus(code int) fault.Kind {
	switch {
	case code == http.StatusNotFound:
		return fault.NotFound
	case code == http.StatusConflict:
		return fault.Conflict
	case code >= 400 && code < 500 && code != http.StatusUnauthorized && code != http.StatusForbidden && code != http.StatusTooManyRequests:
		return fault.Invalid
	}
	return fault.None
}

// backToPage answers a GET of an action's address with the page it is taken from: the path
// without its last step, the query (the target) kept.
func backToPage(c echo.Context) error {
	u := *c.Request().URL
	u.Path, u.RawPath = path.Dir(u.Path), ""
	return c.Redirect(http.StatusSeeOther, u.RequestURI())
}

// headingOf is an error page's heading for a status, in words an operator reads (not the
// status's reason phrase, "Unprocessable Entity"); the message below it says what to do.
func headingOf(code int) string {
	switch code {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return "Not done: check what was asked"
	case http.StatusConflict:
		return "Not done: not in this state"
	case http.StatusForbidden:
		return "Not allowed"
	case http.StatusUnauthorized:
		return "Sign in first"
	}
	return http.StatusText(code)
}

// describe returns the heading and message for an HTTPError, replacing echo's bare status texts
// with sentences a reader can act on.
func describe(he *echo.HTTPError, req *http.Request) (heading, msg string) {
	heading = headingOf(he.Code)
	msg = fmt.Sprint(he.Message)
	if msg != http.StatusText(he.Code) && msg != "" {
		return heading, msg
	}
	switch he.Code {
	case http.StatusNotFound:
		return "Page not found", "There is nothing at " + req.URL.Path + "."
	case http.StatusMethodNotAllowed:
		return heading, req.URL.Path + " does not accept " + req.Method + " requests."
	}
	return heading, heading + "."
}
