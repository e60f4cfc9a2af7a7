package server

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/ledger"
	"trueup/server/page"
)

// loginShow answers GET /login: a form for the token (or, without tokens, why there is none).
func (s *Server) loginShow(c echo.Context) error {
	return s.renderLogin(c, http.StatusOK, localPath(c.QueryParam("next")), "")
}

func (s *Server) renderLogin(c echo.Context, status int, next, msg string) error {
	d := page.Login{Chrome: s.chrome("Log in", ""), Next: next, Error: msg, NoTokens: !s.authEnabled()}
	return render(c, status, page.LoginPage(d))
}

// loginSubmit answers POST /login: a good token starts a browser session and goes on to the
// page the visitor came for. Wrong tokens are rate limited per client address; a right one always
// gets in (login_limit.go says why).
func (s *Server) loginSubmit(c echo.Context) error {
	if !s.authEnabled() {
		return echo.NewHTTPError(http.StatusNotFound, "This server has no API tokens configured: there is nobody to log in as.")
	}
	next := localPath(c.FormValue("next"))
	t, ok := s.lookupToken(strings.TrimSpace(c.FormValue("token")))
	if blocked, wait := s.logins.blocked(c.RealIP()); blocked && !ok {
		secs := int(math.Ceil(wait.Seconds()))
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		s.log.Warn("login rate limited", "addr", c.RealIP())
		return s.renderLogin(c, http.StatusTooManyRequests, next,
			fmt.Sprintf("Too many failed logins from your address. Try again in %d s.", secs))
	}
	if !ok {
		s.logins.fail(c.RealIP())
		s.log.Warn("login refused: unknown token", "addr", c.RealIP())
		return s.renderLogin(c, http.StatusUnauthorized, next, "That token is not valid.")
	}
	// A fresh session id at every login: a cookie planted before it is worth nothing after.
	if old, ok := s.sessionOf(c); ok {
		s.sessions.delete(old.id)
	}
	sess := s.sessions.create(t.name, t.role)
	setCookie(c, sessionCookie, sess.id, int(sessionTTL.Seconds()))
	setCookie(c, visitorCookie, "", -1)
	s.audit(c, ledger.Entry{Actor: t.name, Action: "auth.login", Outcome: ledger.OutcomeOK,
		Params: map[string]any{"role": t.role.String(), "addr": c.RealIP()}})
	return c.Redirect(http.StatusSeeOther, next)
}

// logout answers POST /logout: the session ends here and in the browser.
func (s *Server) logout(c echo.Context) error {
	if sess, ok := s.sessionOf(c); ok {
		s.sessions.delete(sess.id)
		s.audit(c, ledger.Entry{Actor: sess.name, Action: "auth.logout", Outcome: ledger.OutcomeOK})
	}
	setCookie(c, sessionCookie, "", -1)
	return c.Redirect(http.StatusSeeOther, "/")
}

// audit records an entry when the server has an audit log; a failure is logged, not shown:
// the action it records has already happened.
func (s *Server) audit(c echo.Context, e ledger.Entry) {
	if s.opt.Audit == nil {
		return
	}
	if _, err := s.opt.Audit.Audit(c.Request().Context(), e); err != nil {
		s.log.Error("audit", "action", e.Action, "err", err)
	}
}

// localPath returns next when it is a path on this server, else "/": the login form must not
// send anyone to another site.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(u.Path, "/login") {
		return "/"
	}
	return next
}
