package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"trueup/ops"
	"trueup/server"
)

// TestTableButtonsFollowTheRole: a table's page offers swap and rollback buttons only to a role
// the server lets press them (approver), and tells the others who may; so does a plain table's
// adopt page.
func TestTableButtonsFollowTheRole(t *testing.T) {
	e, s := versionedWarehouse(t)
	if err := e.Exec(t.Context(), "CREATE TABLE plain AS SELECT 1 AS id"); err != nil {
		t.Fatal(err)
	}
	ts := serve(t, server.Options{Auth: testAuth(false), Tables: ops.NewTables(ops.TableServices{"w": s}, "w")})
	// bob swaps v2 in, so that there is a rollback (to v1) as well as versions to swap to
	if resp, body := call(t, "POST", ts.URL+"/api/v1/tables/orders/swap", testTokens["bob"][0], `{"to": "v2"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("bob swaps: %d %s", resp.StatusCode, body)
	}
	for _, tc := range []struct {
		who, swaps, rollback, note, adopt string
	}{
		{who: "vera", note: "Swapping to v1 or v3 and rolling back to v1 are for an approver.", adopt: "Adopting it is for an approver."},
		{who: "otto", note: "Swapping to v1 or v3 and rolling back to v1 are for an approver.", adopt: "Adopting it is for an approver."},
		{who: "ann", swaps: "v1 v3", rollback: "Roll back to v1…", adopt: "form"},
	} {
		t.Run(tc.who, func(t *testing.T) {
			b := newBrowser(t, ts.URL)
			b.login(tc.who)
			resp, doc := b.get("/tables/orders?target=w")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /tables/orders: %d", resp.StatusCode)
			}
			var swaps []string
			doc.Find(`[data-testid="swap-form"]`).Each(func(_ int, f *goquery.Selection) { swaps = append(swaps, f.AttrOr("data-version", "")) })
			if got := strings.Join(swaps, " "); got != tc.swaps {
				t.Errorf("swap buttons for %q, want %q", got, tc.swaps)
			}
			if got := text(doc.Find(`[data-testid="rollback-button"]`)); got != tc.rollback {
				t.Errorf("rollback button %q, want %q", got, tc.rollback)
			}
			if got := text(doc.Find(`[data-testid="publish-who"]`)); got != tc.note {
				t.Errorf("note %q, want %q", got, tc.note)
			}
			_, doc = b.get("/tables/plain?target=w")
			adopt := text(doc.Find(`[data-testid="adopt-who"]`))
			if doc.Find(`[data-testid="adopt-form"]`).Length() == 1 {
				adopt += "form"
			}
			if adopt != tc.adopt {
				t.Errorf("adopt page offers %q, want %q", adopt, tc.adopt)
			}
		})
	}
}
