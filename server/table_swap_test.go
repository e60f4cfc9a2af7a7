package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"trueup/ops"
	"trueup/server"
	"trueup/views"
)

// confirmForm is what a browser posts when the confirm button of a confirmation page is pressed:
// every field of its form.
func confirmForm(t *testing.T, body string) string {
	t.Helper()
	form := parse(t, body).Find(`[data-testid="confirm-form"]`)
	if form.Length() != 1 {
		t.Fatalf("no confirmation form: %s", body)
	}
	v := url.Values{}
	form.Find("input, textarea").Each(func(_ int, in *goquery.Selection) {
		name, _ := in.Attr("name")
		val, _ := in.Attr("value")
		if goquery.NodeName(in) == "textarea" {
			val = in.Text()
		}
		if name != "" {
			v.Add(name, val)
		}
	})
	return v.Encode()
}

// TestStaleConfirmationPages: a confirmation posts back what it showed, so pressing "Roll back
// now" twice takes back one swap, not two, and a swap confirmed as "v1 → v2" is not carried out
// once v3 is live; either way the answer is 409 with the confirmation as it stands now. The API
// refuses the same with 409 when given the expectation, and still works without it.
func TestStaleConfirmationPages(t *testing.T) {
	e, s := versionedWarehouse(t)
	ts := serve(t, server.Options{Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})

	t.Run("swap_confirmed_before_someone_else_swapped", func(t *testing.T) {
		_, body := send(t, ts.URL+"/tables/orders/swap", "target=w&to=v2")
		form := confirmForm(t, body) // orders v1 → v2, daily_revenue v1 → v2
		if resp, body := send(t, ts.URL+"/api/v1/tables/orders/swap", `{"to": "v3", "override": "finance accepts"}`); resp.StatusCode != http.StatusOK {
			t.Fatalf("swap to v3: %d %s", resp.StatusCode, body)
		}
		resp, body := send(t, ts.URL+"/tables/orders/swap", form)
		if resp.StatusCode != http.StatusConflict {
			t.Fatalf("stale confirmation: status %d, want 409: %s", resp.StatusCode, body)
		}
		d := parse(t, body)
		if got := text(d.Find(`[data-testid="confirm-error"]`)); !strings.Contains(got, "changed since you confirmed") || !strings.Contains(got, "orders v3 → v2") {
			t.Errorf("error = %q", got)
		}
		if got := cells(d.Find(`[data-testid="change-row"]`).First()); got != "orders v3 v2" {
			t.Errorf("the confirmation shown again says %q, want orders v3 v2", got)
		}
		if src := viewSource(t, e, "orders"); src != "orders__v3" {
			t.Errorf("orders reads %s after a stale confirmation, want v3", src)
		}
	})

	t.Run("rollback_confirmed_twice_takes_back_one_swap", func(t *testing.T) {
		// orders: v1 → v3 (swap #1), then v3 → v2 with daily_revenue v1 → v2 (swap #2)
		if resp, body := send(t, ts.URL+"/api/v1/tables/orders/swap", `{"to": "v2"}`); resp.StatusCode != http.StatusOK {
			t.Fatalf("swap to v2: %d %s", resp.StatusCode, body)
		}
		_, body := send(t, ts.URL+"/tables/orders/rollback", "target=w")
		if got := text(parse(t, body).Find("p")); !strings.Contains(got, "This takes back swap #2") {
			t.Fatalf("confirmation: %q", got)
		}
		form := confirmForm(t, body)
		if resp, body := send(t, ts.URL+"/tables/orders/rollback", form); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("first press: status %d: %s", resp.StatusCode, body)
		}
		resp, body := send(t, ts.URL+"/tables/orders/rollback", form)
		if resp.StatusCode != http.StatusConflict {
			t.Fatalf("second press: status %d, want 409: %s", resp.StatusCode, body)
		}
		if got := text(parse(t, body).Find(`[data-testid="confirm-error"]`)); !strings.Contains(got, "swap #2 was already taken back") {
			t.Errorf("error = %q", got)
		}
		for table, want := range map[string]string{"orders": "orders__v3", "daily_revenue": "daily_revenue__v1"} {
			if src := viewSource(t, e, table); src != want {
				t.Errorf("%s reads %s, want %s (one rollback)", table, src, want)
			}
		}
	})

	t.Run("api_rollback_retried_with_undoes", func(t *testing.T) {
		// orders reads v3 by swap #1: a rollback takes it back to v1
		body := `{"reason": "retry", "undoes": 1}`
		if resp, b := send(t, ts.URL+"/api/v1/tables/orders/rollback", body); resp.StatusCode != http.StatusOK {
			t.Fatalf("rollback: %d %s", resp.StatusCode, b)
		}
		resp, b := send(t, ts.URL+"/api/v1/tables/orders/rollback", body)
		var problem struct{ Error string }
		json.Unmarshal([]byte(b), &problem)
		if resp.StatusCode != http.StatusConflict || !strings.Contains(problem.Error, "swap #1 was already taken back") {
			t.Errorf("retried rollback: %d %s, want 409", resp.StatusCode, b)
		}
		if src := viewSource(t, e, "orders"); src != "orders__v1" {
			t.Errorf("orders reads %s, want v1", src)
		}
		// A swap given the versions it moves from goes through while they hold.
		resp, b = send(t, ts.URL+"/api/v1/tables/orders/swap", `{"to": "v2", "from": {"orders": "v1", "daily_revenue": "v1"}}`)
		var p views.Publish
		if json.Unmarshal([]byte(b), &p); resp.StatusCode != http.StatusOK || p.Summary() != "orders v1 → v2, daily_revenue v1 → v2" {
			t.Errorf("swap with its expectation: %d %s", resp.StatusCode, b)
		}
	})

	t.Run("second_press_when_nothing_is_left_to_roll_back", func(t *testing.T) {
		_, body := send(t, ts.URL+"/tables/orders/rollback", "target=w")
		form := confirmForm(t, body)
		if resp, body := send(t, ts.URL+"/tables/orders/rollback", form); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("first press: status %d: %s", resp.StatusCode, body)
		}
		resp, body := send(t, ts.URL+"/tables/orders/rollback", form)
		if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "already taken back") || !strings.Contains(body, "nothing to roll back now") {
			t.Errorf("second press: status %d, want 409 saying it was taken back: %s", resp.StatusCode, body)
		}
		if src := viewSource(t, e, "orders"); src != "orders__v1" {
			t.Errorf("orders reads %s, want v1", src)
		}
	})
}
