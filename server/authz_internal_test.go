package server

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"trueup/server/page"
)

// TestEveryWriteRouteHasARole fails when a POST route is registered without saying, in
// writeRoles, who may use it, or when writeRoles names a route that no longer exists.
func TestEveryWriteRouteHasARole(t *testing.T) {
	s := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, key := range s.unlistedWrites() {
		t.Errorf("%s has no entry in writeRoles (server/authz.go): say which role it needs", key)
	}
	for key := range writeRoles {
		if !s.routes[key] {
			t.Errorf("writeRoles names %s, which routes.go does not register", key)
		}
	}
	for key := range publicReads {
		if !s.routes[key] {
			t.Errorf("publicReads names %s, which routes.go does not register", key)
		}
	}
	for _, key := range page.Routes {
		if _, ok := writeRoles[key]; !ok {
			t.Errorf("the pages ask who may post to %s, which writeRoles does not name", key)
		}
	}
	for key := range writeQuery {
		if !s.routes[key] || safeMethod(strings.SplitN(key, " ", 2)[0]) {
			t.Errorf("writeQuery names %s, which routes.go does not register as a write", key)
		}
	}
	if len(s.WriteRoutes()) == 0 {
		t.Fatal("no write routes found")
	}
}

func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"/backfills/x?y=1":     "/backfills/x?y=1",
		"":                     "/",
		"//evil.example/":      "/",
		"/\\evil.example":      "/",
		"https://evil.example": "/",
		"javascript:alert(1)":  "/",
		"/login?next=/":        "/",
		"/a\r\nSet-Cookie: x":  "/",
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}
