package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"trueup/ops"
	"trueup/server"
	tsql "trueup/sql"
	"trueup/views"
)

// TestTableAdoptPage: the page of a plain table offers the adopt; the button adopts it and
// shows its versions page with v1 live; a refused adopt shows the page again with the reason;
// the API adopts and undoes, refusing a field it does not know.
func TestTableAdoptPage(t *testing.T) {
	e, s := versionedWarehouse(t)
	ctx := t.Context()
	for _, q := range []string{"CREATE TABLE sales AS SELECT range AS id, DATE '2026-07-01' + range::INTEGER AS d FROM range(40)",
		"CREATE TABLE refunds AS SELECT range AS id FROM range(3)"} {
		if err := e.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	ts := serve(t, server.Options{Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})

	doc := getPage(t, ts.URL+"/tables/sales", http.StatusOK)
	if doc.Find(`[data-testid="adopt-button"]`).Length() != 1 {
		t.Fatalf("no adopt button on a plain table's page: %s", text(doc.Find("main")))
	}
	getPage(t, ts.URL+"/tables/nosuch", http.StatusNotFound)

	resp, body := send(t, ts.URL+"/tables/sales/adopt", "target=w&partition=nope&grain=day")
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(text(parse(t, body).Find(`[data-testid="adopt-error"]`)), "sales has no column nope to partition by") {
		t.Errorf("a refused adopt: %d %s", resp.StatusCode, body)
	}
	if src := sourceOrNone(e, "sales"); src != "" {
		t.Errorf("a refused adopt made a view over %s", src)
	}
	resp, body = send(t, ts.URL+"/tables/sales/adopt", "target=w&partition=d&grain=day&reason=first")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("adopt: %d %s", resp.StatusCode, body)
	}
	doc = getPage(t, ts.URL+resp.Header.Get("Location"), http.StatusOK)
	if got := text(doc.Find(`[data-testid="flash"]`)); !strings.HasPrefix(got, "Adopted (#") {
		t.Errorf("flash after the adopt: %q", got)
	}
	if got := text(doc.Find(`[data-testid="live"] mark`)); got != "v1" {
		t.Errorf("live after the adopt = %q", got)
	}
	if got := viewSource(t, e, "sales"); got != "sales__v1" {
		t.Errorf("sales reads %q", got)
	}

	resp, body = send(t, ts.URL+"/api/v1/tables/refunds/adopt", `{"reason": "x", "partiton": "d"}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "partiton") {
		t.Errorf("an unknown field: %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, ts.URL+"/api/v1/tables/refunds/adopt", `{"reason": "x"}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"kind": "adopt"`) && !strings.Contains(body, `"kind":"adopt"`) {
		t.Errorf("API adopt: %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, ts.URL+"/api/v1/tables/refunds/adopt", `{"undo": true}`)
	if resp.StatusCode != http.StatusOK || sourceOrNone(e, "refunds") != "" {
		t.Errorf("API undo: %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, ts.URL+"/api/v1/tables/orders/adopt", `{}`)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, `"kind":"conflict"`) {
		t.Errorf("adopt of a logical table: %d %s, want 409, already in that state", resp.StatusCode, body)
	}
}

// sourceOrNone is what view reads, "" when it is not a view.
func sourceOrNone(e tsql.Engine, view string) string {
	src, _ := e.ViewSource(context.Background(), view)
	return src
}

// TestTableWriteTarget: the write target is the live version's table, in the API and on the
// versions page, and follows a swap.
func TestTableWriteTarget(t *testing.T) {
	_, s := versionedWarehouse(t)
	ts := serve(t, server.Options{Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})
	resp, body := get(t, ts.URL+"/api/v1/tables/orders/write-target")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"write_target":"orders__v1"`) {
		t.Errorf("write target: %d %s", resp.StatusCode, body)
	}
	if _, err := s.Swap(t.Context(), views.SwapRequest{Table: "orders", To: "v2", Actor: "ann", Reason: "fix"}); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, ts.URL+"/api/v1/tables/orders/write-target"); !strings.Contains(body, `"write_target":"orders__v2"`) {
		t.Errorf("write target after the swap: %s", body)
	}
	doc := getPage(t, ts.URL+"/tables/orders", http.StatusOK)
	if got := text(doc.Find(`[data-testid="write-target"] code`).First()); got != "orders__v2" {
		t.Errorf("the page's write target: %q", got)
	}
	if resp, _ := get(t, ts.URL+"/api/v1/tables/nosuch/write-target"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("write target of no table: %d", resp.StatusCode)
	}
}
