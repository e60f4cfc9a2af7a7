package server

import (
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
)

// maxBody is the largest request body the server reads: forms and small JSON documents.
const maxBody = 1 << 20

// contentSecurityPolicy allows only what the server itself serves: its embedded scripts and
// stylesheets, no inline script or style, no plugins, no framing, forms posting only here.
// Inline SVG charts are markup, not resources, and their presentation attributes are not
// styles, so they need nothing more.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// secure sets the security headers on every response and bounds the request body.
func (s *Server) secure(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		// Acknowledgement links carry a secret in their path: never send it to another site.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		req := c.Request()
		tooLarge := echo.NewHTTPError(http.StatusRequestEntityTooLarge, "The request body is larger than 1 MiB.")
		if req.ContentLength > maxBody {
			return tooLarge
		}
		if req.Body == nil {
			return next(c)
		}
		body := &boundedBody{ReadCloser: http.MaxBytesReader(c.Response(), req.Body, maxBody)}
		req.Body = body
		err := next(c)
		if err != nil && body.over {
			// A body sent without its length reaches the limit while the handler reads it: the
			// handler then sees bad JSON or a form without its fields, but the cause is the size.
			return tooLarge.SetInternal(err)
		}
		return err
	}
}

// boundedBody is a request body read through http.MaxBytesReader that remembers whether the
// reader hit the limit.
type boundedBody struct {
	io.ReadCloser
	over bool
}

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		b.over = true
	}
	return n, err
}
