package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"trueup/ops"
	"trueup/server"
	"trueup/sql/sqltest"
)

// diffAPI serves POST /api/v1/diffs over a DuckDB target "warehouse" holding orders__v1 and
// orders__v2 (one order more).
func diffAPI(t *testing.T) string {
	t.Helper()
	store, _ := storedDiff(t)
	e := sqltest.DuckDB(t)
	for _, q := range []string{
		"CREATE TABLE orders__v1 AS SELECT range AS id, DATE '2026-07-01' + CAST(range % 3 AS INTEGER) AS d FROM range(30)",
		"CREATE TABLE orders__v2 AS SELECT * FROM orders__v1 UNION ALL SELECT 100, DATE '2026-07-02'",
	} {
		if err := e.Exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	return serve(t, server.Options{Diffs: store, Targets: []server.Target{{Name: "warehouse", Engine: e}}}).URL
}

// TestAPIDiffSamplesAreBounded: samples above the documented maximum are a 400 saying so, as
// `trueup diff --samples` is an exit 2 (any number was taken).
func TestAPIDiffSamplesAreBounded(t *testing.T) {
	url := diffAPI(t) + "/api/v1/diffs"
	for _, tc := range []struct {
		name    string
		samples int
		status  int
		error   string
	}{
		{"the_most", ops.MaxDiffSamples, http.StatusOK, ""},
		{"one_too_many", ops.MaxDiffSamples + 1, http.StatusBadRequest, "samples 1001: want 0 to 1000"},
		{"negative", -1, http.StatusBadRequest, "samples -1: want 0 to 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(map[string]any{"old": "orders__v1", "new": "orders__v2", "key": []string{"id"}, "partition": "d", "samples": tc.samples})
			resp, body := send(t, url, string(b))
			var e struct{ Error string }
			json.Unmarshal([]byte(body), &e)
			if resp.StatusCode != tc.status || !strings.Contains(e.Error, tc.error) {
				t.Errorf("%d %s, want %d %q", resp.StatusCode, body, tc.status, tc.error)
			}
		})
	}
}
