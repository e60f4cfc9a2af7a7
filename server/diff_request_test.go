package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"trueup/ops"
	"trueup/server"
	tsql "trueup/sql"
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

// POST /api/v1/diffs takes columns, map and where as `trueup diff` takes the flags, on a DuckDB
// and on a ClickHouse target; a where that is not a condition is refused saying so, and a body
// asking for rows (the CLI's stream) is an unknown field, a 400.
func TestAPIDiffColumnsMapWhere(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		store, _ := storedDiff(t)
		cols := func(name string) []tsql.Column {
			return []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "region", Kind: tsql.TypeString},
				{Name: name, Kind: tsql.TypeString}, {Name: "note", Kind: tsql.TypeString}}
		}
		for _, tb := range []struct {
			name, col string
			rows      [][]any
		}{
			{"people", "name", [][]any{{int64(1), "EU", "ann", "a"}, {int64(2), "EU", "bob", "b"}, {int64(3), "US", "cy", "c"}}},
			{"people2", "full_name", [][]any{{int64(1), "EU", "ann", "A"}, {int64(2), "EU", "bobby", "b"}, {int64(3), "US", "cyd", "c"}}},
		} {
			e.DropTable(t.Context(), tb.name)
			if err := e.CreateTable(t.Context(), tb.name, cols(tb.col), "", []string{"id"}); err != nil {
				t.Fatal(err)
			}
			if err := e.Insert(t.Context(), tb.name, []string{"id", "region", tb.col, "note"}, tb.rows); err != nil {
				t.Fatal(err)
			}
		}
		url := serve(t, server.Options{Diffs: store, Targets: []server.Target{{Name: "warehouse", Engine: e}}}).URL + "/api/v1/diffs"
		body := map[string]any{"old": "people", "new": "people2", "key": []string{"id"},
			"map": []string{"name=full_name"}, "columns": []string{"name"}, "where": "region = 'EU'"}
		b, _ := json.Marshal(body)
		resp, text := send(t, url, string(b))
		var res struct {
			Compared []string `json:"compared_columns"`
			Rows     struct{ Changed int }
		}
		json.Unmarshal([]byte(text), &res)
		if resp.StatusCode != http.StatusOK || res.Rows.Changed != 1 || strings.Join(res.Compared, ",") != "id,name" {
			t.Errorf("%d %s", resp.StatusCode, text)
		}

		body["where"] = "note"
		b, _ = json.Marshal(body)
		resp, text = send(t, url, string(b))
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(text, "not a condition") || !strings.Contains(text, `"kind":"invalid"`) {
			t.Errorf("where note: %d %s", resp.StatusCode, text)
		}

		body["where"], body["rows"] = "region = 'EU'", true
		b, _ = json.Marshal(body)
		if resp, text = send(t, url, string(b)); resp.StatusCode != http.StatusBadRequest || !strings.Contains(text, "rows") {
			t.Errorf("rows: %d %s", resp.StatusCode, text)
		}
	})
}
