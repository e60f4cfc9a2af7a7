package server_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"trueup/fault"
	"trueup/ops"
	"trueup/ops/client"
	"trueup/server"
)

// TestFourEyesIsForeseen: with four_eyes, ann built v2, so the dry run (the API's, and the
// CLI's through a server) and the confirmation page say up front that another approver must
// swap it in, as the swap itself answers; a refused confirmed swap shows the confirmation again
// with the reason ann typed. bob's dry run and page go through.
func TestFourEyesIsForeseen(t *testing.T) {
	e, s := versionedWarehouse(t)
	ts := serve(t, server.Options{Auth: testAuth(true), Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})
	const refusal = "Four eyes: ann started the run that built orders v2, so another approver must swap it in: bob."

	t.Run("api_dry_run", func(t *testing.T) {
		resp, body := call(t, "POST", ts.URL+"/api/v1/tables/orders/swap", testTokens["ann"][0], `{"to": "v2", "dry_run": true}`)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"refused":"`+refusal+`"`) {
			t.Errorf("ann's dry run: %d %s", resp.StatusCode, body)
		}
		resp, body = call(t, "POST", ts.URL+"/api/v1/tables/orders/swap", testTokens["bob"][0], `{"to": "v2", "dry_run": true}`)
		if resp.StatusCode != http.StatusOK || strings.Contains(body, `"refused"`) {
			t.Errorf("bob's dry run: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("cli_dry_run_verdict", func(t *testing.T) {
		// The CLI's --dry-run exits by plan.Refusal() after printing the plan, as the swap would.
		for who, want := range map[string]error{"ann": fault.ErrRefused, "bob": nil} {
			c, err := client.New(ts.URL, testTokens[who][0], "")
			if err != nil {
				t.Fatal(err)
			}
			plan, err := ops.PlanPublish(t.Context(), c.Tables(), "swap", ops.PublishRequest{Subject: ops.Subject{Target: "w", Table: "orders"}, To: "v2"})
			if err != nil {
				t.Fatalf("%s: plan: %v", who, err)
			}
			verdict := plan.Refusal()
			if (want == nil) != (verdict == nil) || (want != nil && !errors.Is(verdict, want)) {
				t.Errorf("%s: dry run verdict %v, want %v", who, verdict, want)
			} else if want != nil && fault.Message(verdict) != refusal {
				t.Errorf("%s: dry run says %q", who, fault.Message(verdict))
			}
		}
	})

	t.Run("confirmation_page", func(t *testing.T) {
		ann := newBrowser(t, ts.URL)
		ann.login("ann")
		ann.get("/tables/orders?target=w")
		resp, body := ann.post("/tables/orders/swap", url.Values{"to": {"v2"}, "target": {"w"}}, true)
		doc := parse(t, body)
		if resp.StatusCode != http.StatusOK || text(doc.Find(`[data-testid="confirm-refused"]`)) != refusal {
			t.Errorf("ann's confirmation: %d, refused %q", resp.StatusCode, text(doc.Find(`[data-testid="confirm-refused"]`)))
		}
		if n := doc.Find(`[data-testid="confirm-button"]`).Length(); n != 0 {
			t.Errorf("ann's confirmation offers %d swap buttons that would be refused", n)
		}

		// Confirmed anyway (a page opened before, a hand-made post): refused, the reason kept.
		resp, body = ann.post("/tables/orders/swap", url.Values{"to": {"v2"}, "target": {"w"}, "confirm": {"yes"},
			"from": {"orders=v1", "daily_revenue=v1"}, "reason": {"dedup fix, checked by hand"}}, true)
		doc = parse(t, body)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("ann's confirmed swap: %d, want 403", resp.StatusCode)
		}
		if got := text(doc.Find(`[data-testid="confirm-refused"]`)); got != refusal {
			t.Errorf("refused swap's page says %q", got)
		}
		if got := doc.Find(`[data-testid="confirm-reason"]`).AttrOr("value", ""); got != "dedup fix, checked by hand" {
			t.Errorf("refused swap's page lost the reason: %q", got)
		}
		if src := viewSource(t, e, "orders"); src != "orders__v1" {
			t.Fatalf("refused swap changed the view: %s", src)
		}

		bob := newBrowser(t, ts.URL)
		bob.login("bob")
		bob.get("/tables/orders?target=w")
		resp, body = bob.post("/tables/orders/swap", url.Values{"to": {"v2"}, "target": {"w"}}, true)
		doc = parse(t, body)
		if resp.StatusCode != http.StatusOK || doc.Find(`[data-testid="confirm-refused"]`).Length() != 0 || text(doc.Find(`[data-testid="confirm-button"]`)) != "Swap now" {
			t.Errorf("bob's confirmation: %d, refused %q, button %q", resp.StatusCode,
				text(doc.Find(`[data-testid="confirm-refused"]`)), text(doc.Find(`[data-testid="confirm-button"]`)))
		}
	})
}
