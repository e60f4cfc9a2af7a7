package server_test

import (
	"net/http"
	"strings"
	"testing"

	"trueup/server"
	"trueup/sql/sqltest"
)

func TestProbes(t *testing.T) {
	closed := sqltest.DuckDB(t)
	closed.Close()
	for _, c := range []struct {
		name       string
		path       string
		targets    []server.Target
		wantStatus int
		wantBody   string // exact, or a prefix when it ends in "…"
	}{
		{"healthz", "/healthz", nil, http.StatusOK, "ok"},
		{"readyz_all_reachable", "/readyz", []server.Target{{Name: "warehouse", Engine: sqltest.DuckDB(t)}}, http.StatusOK, "ok"},
		{"readyz_no_targets", "/readyz", nil, http.StatusOK, "ok"},
		{"readyz_closed_engine", "/readyz", []server.Target{
			{Name: "warehouse", Engine: sqltest.DuckDB(t)},
			{Name: "broken", Engine: closed},
		}, http.StatusServiceUnavailable, "target broken: …"},
		{"readyz_missing_engine", "/readyz", []server.Target{{Name: "lost"}}, http.StatusServiceUnavailable, "target lost: not connected\n"},
		{"healthz_with_a_closed_engine", "/healthz", []server.Target{{Name: "broken", Engine: closed}}, http.StatusOK, "ok"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := serve(t, server.Options{Targets: c.targets})
			resp, body := get(t, ts.URL+c.path)
			if resp.StatusCode != c.wantStatus {
				t.Errorf("status %d, want %d (body %q)", resp.StatusCode, c.wantStatus, body)
			}
			if prefix, ok := strings.CutSuffix(c.wantBody, "…"); ok {
				if !strings.HasPrefix(body, prefix) || strings.Count(body, "\n") != 1 {
					t.Errorf("body %q, want one line starting %q", body, prefix)
				}
			} else if body != c.wantBody {
				t.Errorf("body %q, want %q", body, c.wantBody)
			}
		})
	}
}
