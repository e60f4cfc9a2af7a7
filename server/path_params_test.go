package server_test

import (
	"net/http"
	"testing"

	"trueup/ops"
	"trueup/server"
)

// TestPathNamesAreUnescaped: a name in a path means the same however the client escaped it. The
// router matches on the path as sent when it is escaped otherwise than Go would (%6F for o,
// lower-case hex from another client) and left the escapes in the name: no rule "p%6Fsitive".
func TestPathNamesAreUnescaped(t *testing.T) {
	ts := serve(t, server.Options{Rules: ruleMonitor(t), Backfills: ops.NewBackfills(backfillService(t))})
	for _, p := range []string{
		"/api/v1/rules/p%6Fsitive", "/rules/p%6fsitive", "/api/v1/rules/positive",
		"/api/v1/backfills/fix%5Fdedup%5fbug", "/backfills/fix%5Fdedup%5Fbug",
	} {
		if resp, body := get(t, ts.URL+p); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d %.200s, want 200", p, resp.StatusCode, body)
		}
	}
}
