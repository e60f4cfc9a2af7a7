package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// csrfHeader carries the CSRF token on htmx requests (set by hx-headers on <body>); forms carry
// it in the csrf field.
const csrfHeader = "X-CSRF-Token"

// csrfToken returns the CSRF token bound to the request's browser: to its session when logged
// in, else to its visitor cookie, which a page load without one sets. The token is an HMAC
// under a key that lives only in this process, so it cannot be guessed from the cookie, and a
// token taken from one browser is useless in another. Bearer-token requests get none: they
// carry no cookie a forged request could ride on.
func (s *Server) csrfToken(c echo.Context, id identity) string {
	var binding string
	switch {
	case id.Via == "token":
		return ""
	case id.Via == "session":
		binding = "session:" + id.Session.id
	default:
		if ck, err := c.Cookie(visitorCookie); err == nil && len(ck.Value) >= 32 && len(ck.Value) <= 64 {
			binding = "visitor:" + ck.Value
		} else if pageLoad(c.Request()) {
			v := newSecret()
			setCookie(c, visitorCookie, v, 0)
			binding = "visitor:" + v
		} else {
			return ""
		}
	}
	mac := hmac.New(sha256.New, s.csrfKey)
	mac.Write([]byte(binding))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// pageLoad is a GET for a page a person may go on to post a form from.
func pageLoad(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	p := r.URL.Path
	for _, prefix := range []string{"/api/", "/static/"} {
		if strings.HasPrefix(p, prefix) {
			return false
		}
	}
	switch p {
	case "/healthz", "/readyz", "/metrics", "/notices.atom":
		return false
	}
	return !strings.HasSuffix(p, "/notices.atom") // a table's feed

}

// browserRequest is true when a request may have been sent by a browser on someone's behalf:
// it carries one of our cookies, or the Origin or Sec-Fetch-Site header every current browser
// sends with a POST. A request with none of these carries no ambient credential to abuse.
func browserRequest(r *http.Request) bool {
	if r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != "" {
		return true
	}
	for _, name := range []string{sessionCookie, visitorCookie} {
		if _, err := r.Cookie(name); err == nil {
			return true
		}
	}
	return false
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// checkCSRF refuses a browser write that does not carry the CSRF token of its session (or
// visitor cookie), and any write a browser sends from another origin. API clients that
// authenticate with a bearer token are exempt: no cookie is involved.
func (s *Server) checkCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if safeMethod(req.Method) {
			return next(c)
		}
		id := requestIdentity(c)
		if id.Via == "token" {
			return next(c)
		}
		if err := s.crossOrigin.Check(req); err != nil {
			return echo.NewHTTPError(http.StatusForbidden, "A page on another site tried to send this request; trueup refused it.")
		}
		if !browserRequest(req) {
			return next(c)
		}
		want := s.csrfToken(c, id)
		got := req.Header.Get(csrfHeader)
		if got == "" {
			got = c.FormValue("csrf")
		}
		if want == "" || got == "" || !hmac.Equal([]byte(got), []byte(want)) {
			return echo.NewHTTPError(http.StatusForbidden,
				"This form has expired or did not come from trueup (its CSRF token is missing or wrong). Reload the page and try again.")
		}
		return next(c)
	}
}
