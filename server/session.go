package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// Browser sessions live in memory: a restart logs everyone out, which is a small price for
// keeping no secrets in the ledger. Each session expires sessionTTL after login.
//
// Kept by hand rather than taken from a session library (gorilla/sessions, scs): what trueup
// needs is a random id in an HttpOnly, SameSite cookie mapped to a token's name and role in
// memory, about sixty lines; those libraries bring stores, codecs and signed-cookie sessions,
// which would put the role in the browser or the ledger, and none of it is wanted here.
const (
	sessionCookie = "trueup_session"
	visitorCookie = "trueup_visitor"
	sessionTTL    = 12 * time.Hour
	maxSessions   = 10_000
)

// session is one logged-in browser.
type session struct {
	id      string // the cookie's value
	name    string
	role    Role
	expires time.Time
}

// sessions holds the logged-in browsers, keyed by the SHA-256 of their cookie.
type sessions struct {
	mu   sync.Mutex
	byID map[[sha256.Size]byte]*session
	now  func() time.Time
}

func newSessions(now func() time.Time) *sessions {
	return &sessions{byID: map[[sha256.Size]byte]*session{}, now: now}
}

// newSecret returns 32 random bytes as URL-safe text.
func newSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create starts a session. When the store is full the session closest to expiry goes, so a
// flood of logins cannot grow memory without bound (and logins are rate limited anyway).
func (st *sessions) create(name string, role Role) *session {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.now()
	var oldest [sha256.Size]byte
	var oldestAt time.Time
	for k, s := range st.byID {
		if !now.Before(s.expires) {
			delete(st.byID, k)
			continue
		}
		if oldestAt.IsZero() || s.expires.Before(oldestAt) {
			oldest, oldestAt = k, s.expires
		}
	}
	if len(st.byID) >= maxSessions {
		delete(st.byID, oldest)
	}
	s := &session{id: newSecret(), name: name, role: role, expires: now.Add(sessionTTL)}
	st.byID[sha256.Sum256([]byte(s.id))] = s
	return s
}

func (st *sessions) get(id string) (*session, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	k := sha256.Sum256([]byte(id))
	s, ok := st.byID[k]
	if !ok {
		return nil, false
	}
	if !st.now().Before(s.expires) {
		delete(st.byID, k)
		return nil, false
	}
	return s, true
}

func (st *sessions) delete(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.byID, sha256.Sum256([]byte(id)))
}

// sessionOf returns the request's live session, if its cookie names one and tokens are still
// configured for it.
func (s *Server) sessionOf(c echo.Context) (*session, bool) {
	if !s.authEnabled() {
		return nil, false
	}
	ck, err := c.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return nil, false
	}
	return s.sessions.get(ck.Value)
}

// secureRequest is true when the browser reached us over TLS, directly or through a proxy that
// says so; cookies are then marked Secure.
func secureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get(echo.HeaderXForwardedProto), "https")
}

// setCookie sets an HttpOnly, SameSite=Lax cookie for the whole site; maxAge < 0 deletes it,
// 0 makes it last as long as the browser.
func setCookie(c echo.Context, name, value string, maxAge int) {
	c.SetCookie(&http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secureRequest(c.Request()),
	})
}
