package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// routePath is a path of route ("POST /api/v1/tables/:table/swap") with its parameters filled
// in; action fills :action.
func routePath(route, action string) string {
	path := strings.SplitN(route, " ", 2)[1]
	return strings.NewReplacer(":table", "orders", ":rule", "positive", ":name", "fix_dedup_bug",
		":action", action, ":id", "1", ":token", "x").Replace(path)
}

// TestWriteQueryIsStrict: a write given a query parameter it does not take is a 400 naming it,
// on every write route, pages too, before anything is done: a dry run or a run of a backfill
// with ?frm=2026-07-10 covered the file's whole scope, a rollback with ?dry_run=true was real.
func TestWriteQueryIsStrict(t *testing.T) {
	opt, base, state := writeServer(t)
	before := state()
	for _, route := range routesOf(opt) {
		if !strings.HasPrefix(route, "POST ") {
			continue
		}
		actions := []string{""}
		if strings.Contains(route, ":action") {
			actions = []string{"dry-run", "run", "resume", "cancel", "window"}
		}
		for _, action := range actions {
			path := routePath(route, action)
			t.Run(strings.ReplaceAll(strings.TrimPrefix(path, "/"), "/", "_"), func(t *testing.T) {
				resp, body := send(t, base+path+"?frm=2026-07-10", "")
				if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "frm") {
					t.Errorf("%d %s, want 400 naming frm", resp.StatusCode, body)
				}
			})
		}
	}
	for _, tc := range []struct {
		name, path, body, want string
	}{
		{"run_misspelt_from", "/api/v1/backfills/fix_dedup_bug/run?form=2026-07-15&to=2026-07-16", "",
			`This request does not take the query parameter "form": it takes ?from=, ?to=, ?sample=, ?allow_full_rewrite=, ?new_version=, ?catch_up=.`},
		{"dry_run_upper_case", "/api/v1/backfills/fix_dedup_bug/dry-run?FROM=2026-07-15&TO=2026-07-16", "",
			`This request does not take the query parameter "FROM" (parameter names are lower case: "from"): it takes ?from=, ?to=.`},
		{"dry_run_twice", "/api/v1/backfills/fix_dedup_bug/dry-run?from=2026-07-15&from=2026-07-10&to=2026-07-16", "",
			`The query parameter "from" is given 2 times: give it once.`},
		// A resume builds what its run planned and a cancel stops it: a scope is not theirs.
		{"cancel_scope", "/api/v1/backfills/fix_dedup_bug/cancel?from=2026-07-15&to=2026-07-16", "",
			`This request does not take the query parameter "from": it takes no query parameters.`},
		{"resume_sample", "/api/v1/backfills/fix_dedup_bug/resume?sample=1", "",
			`This request does not take the query parameter "sample": it takes no query parameters.`},
		// A body's field in the query is not the field: this rollback was real.
		{"rollback_dry_run", "/api/v1/tables/orders/rollback?dry_run=true", `{"reason": "just looking"}`,
			`This request does not take the query parameter "dry_run": it takes ?target=.`},
		{"swap_dry_run", "/api/v1/tables/orders/swap?dry_run=true", `{"to": "v2"}`,
			`This request does not take the query parameter "dry_run": it takes ?target=.`},
		{"catch_up_dry_run", "/api/v1/tables/orders/catch-up?dry_run=true", `{}`,
			`This request does not take the query parameter "dry_run": it takes ?target=.`},
		{"retire_reason", "/api/v1/tables/orders/retire?reason=old", `{"version": "v3"}`,
			`This request does not take the query parameter "reason": it takes ?target=.`},
		{"page_swap_to", "/tables/orders/swap?to=v2&confirm=yes", "reason=x", "to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, base+tc.path, tc.body)
			got := body
			if strings.HasPrefix(tc.path, "/api/") {
				var e struct{ Error string }
				json.Unmarshal([]byte(body), &e)
				got = e.Error
			}
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(got, tc.want) {
				t.Errorf("%d %s, want 400 saying %s", resp.StatusCode, body, tc.want)
			}
		})
	}
	if diff := cmp.Diff(before, state()); diff != "" {
		t.Errorf("refused requests changed something (-before +after):\n%s", diff)
	}
	// What the routes take they still take.
	for _, tc := range []struct{ path, body string }{
		{"/api/v1/backfills/fix_dedup_bug/dry-run?from=2026-07-15&to=2026-07-16", ""},
		{"/api/v1/tables/orders/swap?target=w", `{"to": "v2", "dry_run": true}`},
	} {
		if resp, body := send(t, base+tc.path, tc.body); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", tc.path, resp.StatusCode, body)
		}
	}
}
