package server

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"
)

// writeRoles is the least role each write route needs: the one place that says who may change
// what. Every POST route in routes.go must be listed (TestEveryWriteRouteHasARole fails
// otherwise); one that is not is treated as approver-only and logged at start-up.
var writeRoles = map[string]Role{
	// Anyone: logging in and out, and a notice recipient acknowledging it (the link's token
	// is the proof).
	"POST /login":                  rolePublic,
	"POST /logout":                 rolePublic,
	"POST /notices/:id/ack/:token": rolePublic,
	// Subscribing oneself, and leaving or changing by the link in a message (its token is the
	// proof): anyone. Removing someone else's subscription: an approver.
	"POST /subscriptions":                    rolePublic,
	"POST /api/v1/subscriptions":             rolePublic,
	"POST /subscriptions/unsubscribe/:token": rolePublic,
	"POST /subscriptions/manage/:token":      rolePublic,
	"POST /subscriptions/manage/:token/end":  rolePublic,
	"POST /subscriptions/:id/remove":         roleApprover,
	"POST /api/v1/subscriptions/:id/remove":  roleApprover,
	// A query reads, whatever versions it reads: a viewer may (POST only for its JSON body).
	"POST /api/v1/query":            roleViewer,
	"POST /rules/:rule/run":         roleOperator,
	"POST /api/v1/rules/:rule/run":  roleOperator,
	"POST /api/v1/check":            roleOperator,
	"POST /api/v1/diffs":            roleOperator,
	"POST /backfills/:name/dry-run": roleOperator,
	"POST /backfills/:name/run":     roleOperator,
	"POST /backfills/:name/resume":  roleOperator,
	"POST /backfills/:name/cancel":  roleOperator,
	// dry-run, run, resume and cancel: all operator.
	"POST /api/v1/backfills/:name/:action": roleOperator,
	"POST /notices/:id/edit":               roleOperator,
	"POST /api/v1/notices/:id/edit":        roleOperator,
	"POST /notices/:id/announce":           roleApprover,
	"POST /api/v1/notices/:id/announce":    roleApprover,
	"POST /notices/:id/withdraw":           roleApprover,
	"POST /api/v1/notices/:id/withdraw":    roleApprover,
	"POST /api/v1/notices/:id/complete":    roleApprover,
	"POST /api/v1/notices/deliver":         roleOperator,
	"POST /tables/:table/swap":             roleApprover,
	"POST /api/v1/tables/:table/swap":      roleApprover,
	"POST /tables/:table/rollback":         roleApprover,
	"POST /api/v1/tables/:table/rollback":  roleApprover,
	// Retiring drops a version's table: as weighty as a swap.
	"POST /tables/:table/retire":        roleApprover,
	"POST /api/v1/tables/:table/retire": roleApprover,
	// Adopting renames a table readers query: as weighty as a swap.
	"POST /tables/:table/adopt":        roleApprover,
	"POST /api/v1/tables/:table/adopt": roleApprover,
	// A catch-up writes into the live version readers query: as weighty as a swap.
	"POST /tables/:table/catch-up":        roleApprover,
	"POST /api/v1/tables/:table/catch-up": roleApprover,
}

// publicReads are the pages anyone may read without logging in: the notices people outside
// the data team are sent links to, the probes, the assets and the login page. Every other GET
// needs a viewer.
var publicReads = map[string]bool{
	"GET /notices":                true,
	"GET /notices.atom":           true,
	"GET /notices/:id":            true,
	"GET /notices/:id/ack/:token": true,
	"GET /healthz":                true,
	"GET /readyz":                 true,
	"GET /static/*":               true,
	"GET /favicon.ico":            true,
	"GET /login":                  true,
	// A table's feed, and the links mailed to a subscriber (the token is the proof).
	"GET /tables/:table/notices.atom":       true,
	"GET /subscriptions/confirm/:token":     true,
	"GET /subscriptions/manage/:token":      true,
	"GET /subscriptions/unsubscribe/:token": true,
}

// seesDrafts reports whether a request may see draft notices on the public notice pages: a
// draft is the team's work in progress, so it needs a viewer. Without tokens every visitor is
// the local operator, who does.
func seesDrafts(c echo.Context) bool { return requestIdentity(c).Role >= roleViewer }

// routeRole is the least role a matched route needs. Unmatched requests (404, 405) are public:
// they reach no handler.
func (s *Server) routeRole(method, path string) Role {
	key := method + " " + path
	if !s.routes[key] {
		return rolePublic
	}
	if method == http.MethodHead {
		key = http.MethodGet + " " + path
	}
	if safeMethod(method) {
		if publicReads[key] {
			return rolePublic
		}
		return roleViewer
	}
	return writeRole(key)
}

// writeRole is the least role the write route key ("POST /tables/:table/swap") needs: its
// entry in writeRoles, approver-only when it has none.
func writeRole(key string) Role {
	if r, ok := writeRoles[key]; ok {
		return r
	}
	return roleApprover
}

// writeRoleName is writeRole as the pages ask it (page.Visitor.Needs): they show a write's
// button only to a role that may press it, by this table and no rule of their own.
func writeRoleName(key string) string { return writeRole(key).String() }

// unlistedWrites lists the POST routes that writeRoles does not name.
func (s *Server) unlistedWrites() []string {
	var out []string
	for key := range s.routes {
		if !strings.HasPrefix(key, http.MethodGet+" ") && !strings.HasPrefix(key, http.MethodHead+" ") {
			if _, ok := writeRoles[key]; !ok {
				out = append(out, key)
			}
		}
	}
	sort.Strings(out)
	return out
}

// authorize refuses a request whose identity lacks the route's role: 401 when nobody is
// logged in (a page read is sent to the login page instead), 403 when the role is too weak.
func (s *Server) authorize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		need := s.routeRole(req.Method, c.Path())
		id := requestIdentity(c)
		if id.Role >= need {
			return next(c)
		}
		if id.anonymous() {
			if safeMethod(req.Method) && !strings.HasPrefix(req.URL.Path, "/api/") && req.URL.Path != "/metrics" {
				return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(req.URL.RequestURI()))
			}
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="trueup"`)
			return echo.NewHTTPError(http.StatusUnauthorized,
				fmt.Sprintf("Log in first: this needs the %s role (send Authorization: Bearer TOKEN, or log in at /login).", need))
		}
		return echo.NewHTTPError(http.StatusForbidden,
			fmt.Sprintf("This needs the %s role; %s is %s.", need, id.Name, withArticle(id.Role.String())))
	}
}

func withArticle(role string) string {
	if strings.IndexByte("aeiou", role[0]) >= 0 {
		return "an " + role
	}
	return "a " + role
}

// WriteRoutes lists every registered route that is not a read, as "METHOD /path/:param", and
// the least role writeRoles gives it ("public" for anyone). Tests walk it to cover every write.
func (s *Server) WriteRoutes() map[string]string {
	out := map[string]string{}
	for key := range s.routes {
		method, path, _ := strings.Cut(key, " ")
		if !safeMethod(method) {
			out[key] = s.routeRole(method, path).String()
		}
	}
	return out
}
