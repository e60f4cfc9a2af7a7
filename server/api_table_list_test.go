package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/server"
	"trueup/sql/sqltest"
)

type tableJSON struct {
	Name     string   `json:"name"`
	Target   string   `json:"target"`
	Live     string   `json:"live"`
	Versions []string `json:"versions"`
	Rows     int64    `json:"rows"`
}

func TestTableAPI(t *testing.T) {
	t.Run("lists_logical_tables", func(t *testing.T) {
		ts := serve(t, server.Options{Targets: []server.Target{{Name: "warehouse", Engine: warehouse(t)}}})
		resp, body := get(t, ts.URL+"/api/v1/tables")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("status %d, Content-Type %q; body %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		var got []tableJSON
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		want := []tableJSON{{Name: "orders", Target: "warehouse", Live: "v1", Versions: []string{"v1"}, Rows: 1234}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("tables (-want +got):\n%s", diff)
		}
	})

	t.Run("empty_is_an_empty_list", func(t *testing.T) {
		ts := serve(t, server.Options{Targets: []server.Target{{Name: "warehouse", Engine: sqltest.DuckDB(t)}}})
		_, body := get(t, ts.URL+"/api/v1/tables")
		if strings.TrimSpace(body) != "[]" {
			t.Errorf("body = %q, want []", body)
		}
	})

	t.Run("unreachable_target_is_503_naming_it", func(t *testing.T) {
		broken := sqltest.DuckDB(t)
		broken.Close()
		ts := serve(t, server.Options{Targets: []server.Target{{Name: "broken", Engine: broken}}})
		resp, body := get(t, ts.URL+"/api/v1/tables")
		var got struct {
			Error     string `json:"error"`
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.HasPrefix(got.Error, "target broken: ") {
			t.Errorf("got %d %+v, want 503 with an error naming target broken", resp.StatusCode, got)
		}
		if got.RequestID == "" || got.RequestID != resp.Header.Get("X-Request-Id") {
			t.Errorf("request_id %q, X-Request-Id %q: want the same, non-empty", got.RequestID, resp.Header.Get("X-Request-Id"))
		}
	})
}
