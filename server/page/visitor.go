package page

import (
	"context"
	"encoding/json"
)

// Visitor is who is looking at a page: what the chrome says about them and the CSRF token every
// form and htmx request sends back. The server puts it in the request's context, so any
// component (a full page or an htmx fragment without a Chrome) can reach it.
type Visitor struct {
	Name string // "" when nobody is logged in
	Role string // viewer, operator or approver; "" when nobody is logged in
	// Login is true when the server has tokens: the header then offers to log in or out.
	Login bool
	// CSRF is the token a browser write must carry (the csrf form field or X-CSRF-Token).
	CSRF string
	// Needs, set by the server, is the least role a write route needs ("approver" for
	// RouteSwap), read from the server's own authorization table, so that a page offers a
	// button exactly when the server would let the visitor press it.
	Needs func(route string) string
}

type visitorKey struct{}

// WithVisitor returns ctx carrying v for the components rendered with it.
func WithVisitor(ctx context.Context, v Visitor) context.Context {
	return context.WithValue(ctx, visitorKey{}, v)
}

// VisitorFrom returns the visitor in ctx (the zero Visitor when there is none).
func VisitorFrom(ctx context.Context) Visitor {
	v, _ := ctx.Value(visitorKey{}).(Visitor)
	return v
}

// roleRank orders the roles so a page can ask whether the visitor may do something.
var roleRank = map[string]int{"viewer": 1, "operator": 2, "approver": 3}

// Can reports whether the visitor's role is at least role. Pages use it for what a role may
// read (a write's button asks May, which reads the server's table); the server enforces the
// same rules whatever the page shows.
func (v Visitor) Can(role string) bool { return roleRank[v.Role] >= roleRank[role] }

// May reports whether the visitor may post to route (one of the Route constants), as the
// server's authorization table decides it. A visitor without that table (a component rendered
// outside the server) is offered no write.
func (v Visitor) May(route string) bool { return v.Needs != nil && v.Can(v.Needs(route)) }

// Who says who may post to route, for the note a page shows instead of a button the visitor
// may not press: "an approver".
func (v Visitor) Who(route string) string {
	role := "approver"
	if v.Needs != nil {
		role = v.Needs(route)
	}
	switch role {
	case "public":
		return "anyone"
	case "operator", "approver":
		return "an " + role
	}
	return "a " + role
}

// htmxHeaders is the hx-headers value that makes every htmx request carry the CSRF token.
func htmxHeaders(v Visitor) string {
	if v.CSRF == "" {
		return ""
	}
	b, _ := json.Marshal(map[string]string{"X-CSRF-Token": v.CSRF})
	return string(b)
}
