package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"trueup/server"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestTablesAPIPages: the table list comes a window at a time, with a Link to the next one.
func TestTablesAPIPages(t *testing.T) {
	ctx := t.Context()
	e := sqltest.DuckDB(t)
	for _, name := range []string{"a", "b", "c"} {
		if err := e.Exec(ctx, "CREATE TABLE "+name+"__v1 AS SELECT 1 AS x"); err != nil {
			t.Fatal(err)
		}
		if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: name, Table: name + "__v1"}}); err != nil {
			t.Fatal(err)
		}
	}
	ts := serve(t, server.Options{Targets: []server.Target{{Name: "w", Engine: e}}})
	resp, body := get(t, ts.URL+"/api/v1/tables?limit=2")
	var got []struct{ Name string }
	if err := json.Unmarshal([]byte(body), &got); err != nil || len(got) != 2 || got[0].Name != "a" {
		t.Fatalf("first window: %v %s", err, body)
	}
	if link := resp.Header.Get("Link"); !strings.Contains(link, "offset=2") {
		t.Errorf("Link %q", link)
	}
	_, body = get(t, ts.URL+"/api/v1/tables?limit=2&offset=2")
	if err := json.Unmarshal([]byte(body), &got); err != nil || len(got) != 1 || got[0].Name != "c" {
		t.Errorf("second window: %s", body)
	}
	if resp, _ := get(t, ts.URL+"/api/v1/tables?limit=nope"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad limit: %d", resp.StatusCode)
	}
}
