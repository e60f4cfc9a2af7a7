package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/config"
	"trueup/server/page"
)

// Role is what a token may do. Each role may do everything the ones below it may.
type Role int

// The roles, weakest first. rolePublic marks routes anyone may use, logged in or not.
const (
	rolePublic Role = iota
	roleViewer
	roleOperator
	roleApprover
)

func (r Role) String() string {
	switch r {
	case roleViewer:
		return config.RoleViewer
	case roleOperator:
		return config.RoleOperator
	case roleApprover:
		return config.RoleApprover
	}
	return "public"
}

func parseRole(s string) Role {
	switch s {
	case config.RoleViewer:
		return roleViewer
	case config.RoleOperator:
		return roleOperator
	case config.RoleApprover:
		return roleApprover
	}
	return rolePublic
}

// identity is who a request acts as.
type identity struct {
	Name string // "" for an anonymous visitor
	Role Role   // rolePublic for an anonymous visitor
	// Via says how the request proved it: "token" (Authorization: Bearer), "session" (the
	// browser's cookie), "local" (no tokens configured) or "" (anonymous).
	Via     string
	Session *session // the browser session, when Via is "session"
}

func (id identity) anonymous() bool { return id.Role == rolePublic }

// tokenEntry is a configured token: its hash and who it names.
type tokenEntry struct {
	name string
	role Role
	sum  [sha256.Size]byte
}

func newTokens(ts []config.Token) []tokenEntry {
	out := make([]tokenEntry, 0, len(ts))
	for _, t := range ts {
		e := tokenEntry{name: t.Name, role: parseRole(t.Role)}
		b, err := hex.DecodeString(t.SHA256)
		if err != nil || len(b) != sha256.Size || e.role == rolePublic {
			continue // config.Parse refuses these; a hand-built Options gets no door left open
		}
		copy(e.sum[:], b)
		out = append(out, e)
	}
	return out
}

// lookupToken finds the token whose hash is the hash of presented. Every configured hash is
// compared, in constant time, so the answer takes as long whichever token matches, or none.
func (s *Server) lookupToken(presented string) (tokenEntry, bool) {
	sum := sha256.Sum256([]byte(presented))
	var found tokenEntry
	ok := 0
	for _, t := range s.tokens {
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			found, ok = t, 1
		}
	}
	return found, ok == 1
}

// authEnabled is true when tokens are configured: visitors must then prove who they are.
func (s *Server) authEnabled() bool { return len(s.tokens) > 0 }

const keyIdentity = "trueup.identity"

// actor is who a request acts as, for the audit log: the token's name, or the local operator
// while no tokens are configured.
func (s *Server) actor(c echo.Context) string {
	if id, ok := c.Get(keyIdentity).(identity); ok && id.Name != "" {
		return id.Name
	}
	if s.authEnabled() {
		return "anonymous" // only public routes get this far without a name
	}
	return localActor
}

func requestIdentity(c echo.Context) identity {
	id, _ := c.Get(keyIdentity).(identity)
	return id
}

// bearer returns the token of an Authorization: Bearer header, and whether there was one.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get(echo.HeaderAuthorization)
	if h == "" {
		return "", false
	}
	scheme, tok, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", true // some other scheme: a credential we cannot accept
	}
	return strings.TrimSpace(tok), true
}

// authenticate works out who the request acts as and puts it, and the visitor the pages show,
// in the context. A bearer token that does not match is refused here, whatever the route: a
// client that sends a wrong credential should hear so rather than be served as anonymous.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		var id identity
		if tok, ok := bearer(req); ok {
			t, found := s.lookupToken(tok)
			if !found {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="trueup"`)
				return echo.NewHTTPError(http.StatusUnauthorized, "That API token is not valid.")
			}
			id = identity{Name: t.name, Role: t.role, Via: "token"}
		} else if sess, ok := s.sessionOf(c); ok {
			id = identity{Name: sess.name, Role: sess.role, Via: "session", Session: sess}
		} else if !s.authEnabled() {
			id = identity{Name: localActor, Role: roleApprover, Via: "local"}
		}
		c.Set(keyIdentity, id)
		if id.Via == "token" || id.Via == "session" {
			// What a proven visitor is served is theirs (drafts, the audit log, write buttons,
			// a CSRF token): no cache keeps it. A handler whose answer is the same for everyone
			// (the static assets) says so itself.
			c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
		}
		// Handlers that name the actor from this header (the versions pages) get the proven
		// name, never one a client typed. Without tokens the header is left as it came: every
		// visitor is the same local operator anyway.
		if s.authEnabled() {
			req.Header.Set(actorHeader, s.actor(c))
		}
		v := page.Visitor{Login: s.authEnabled(), CSRF: s.csrfToken(c, id), Needs: writeRoleName}
		if !id.anonymous() && id.Via != "local" {
			v.Name, v.Role = id.Name, id.Role.String()
		} else if id.Via == "local" {
			v.Role = id.Role.String()
		}
		c.SetRequest(req.WithContext(page.WithVisitor(req.Context(), v)))
		return next(c)
	}
}

// loopbackHost refuses, while no tokens are configured, a request whose Host is not a
// loopback name: the server listens on loopback only then, and a page on another site that
// resolves its own name to 127.0.0.1 (DNS rebinding) must not reach it.
func (s *Server) loopbackHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.authEnabled() {
			return next(c)
		}
		host := c.Request().Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		ip := net.ParseIP(host)
		if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
			return echo.NewHTTPError(http.StatusMisdirectedRequest,
				"No API tokens are configured, so trueup answers only requests addressed to 127.0.0.1 or localhost.")
		}
		return next(c)
	}
}
