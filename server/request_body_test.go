package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/config"
	"trueup/ops"
	"trueup/server"
)

// writeServer serves every service the JSON write routes reach: versions of orders on target w,
// the rules, the demo's backfills, two draft notices and a stored diff.
func writeServer(t *testing.T, auth ...config.Auth) (server.Options, string, func() string) {
	t.Helper()
	e, tables := versionedWarehouse(t)
	store, _ := storedDiff(t)
	ntc := noticeService(t)
	opt := server.Options{
		Tables: ops.NewTables(ops.TableServices{"w": tables}, "w"), DefaultTarget: "w",
		Rules: ruleMonitor(t), Backfills: ops.NewBackfills(backfillService(t)), Notices: ntc, NoticeOps: ops.NewNotices(ntc), Diffs: store, Audit: testLedger(t),
	}
	if len(auth) > 0 {
		opt.Auth = auth[0]
	}
	ts := serve(t, opt)
	// state is what a user can see of everything a write could change.
	state := func() string {
		t.Helper()
		var b strings.Builder
		b.WriteString("orders reads " + viewSource(t, e, "orders") + "\n")
		for _, p := range []string{"/api/v1/tables/orders", "/api/v1/rules/daily_totals", "/api/v1/rules/positive",
			"/api/v1/backfills/fix_dedup_bug/status", "/api/v1/notices/1", "/api/v1/notices/2", "/api/v1/diffs"} {
			resp, body := get(t, ts.URL+p)
			b.WriteString(p + " " + resp.Status + "\n" + requestID.ReplaceAllString(body, "") + "\n")
		}
		return b.String()
	}
	return opt, ts.URL, state
}

var requestID = regexp.MustCompile(`"request_id":"[0-9a-f]+"`)

// firstKey is the first key of a JSON object as the tests write it.
var firstKey = regexp.MustCompile(`^\{"([^"]+)"`)

// routesOf lists "METHOD path" of every route a server with opt answers.
func routesOf(opt server.Options) []string { return server.New(opt).Routes() }

// TestJSONBodiesAreStrict: a JSON body with a field the route does not know is a 400 naming the
// field, on every JSON write route, and nothing happens: {"to": "v2", "dry-run": true} swapped
// for real, {"rulez": ["fresh"]} ran every rule. Data after the object is refused too.
func TestJSONBodiesAreStrict(t *testing.T) {
	opt, base, state := writeServer(t)
	cases := []struct {
		route, path, body, field string
	}{
		{"POST /api/v1/tables/:table/swap", "/api/v1/tables/orders/swap", `{"to": "v2", "dry-run": true}`, "dry-run"},
		{"POST /api/v1/tables/:table/rollback", "/api/v1/tables/orders/rollback", `{"reason": "x", "dryrun": true}`, "dryrun"},
		{"POST /api/v1/tables/:table/retire", "/api/v1/tables/orders/retire", `{"version": "v3", "reasn": "old"}`, "reasn"},
		{"POST /api/v1/tables/:table/adopt", "/api/v1/tables/orders/adopt", `{"undo": true, "partiton": "d"}`, "partiton"},
		{"POST /api/v1/tables/:table/catch-up", "/api/v1/tables/orders/catch-up", `{"taregt": "w"}`, "taregt"},
		{"POST /api/v1/rules/:rule/run", "/api/v1/rules/positive/run", `{"dry_run": true}`, "dry_run"},
		{"POST /api/v1/check", "/api/v1/check", `{"rulez": ["positive"]}`, "rulez"},
		{"POST /api/v1/diffs", "/api/v1/diffs", `{"old": "orders__v1", "new": "orders__v2", "key": ["id"], "keys": ["id"]}`, "keys"},
		{"POST /api/v1/backfills/:name/:action", "/api/v1/backfills/fix_dedup_bug/run", `{"sample": 1}`, "sample"},
		{"POST /api/v1/notices/:id/announce", "/api/v1/notices/1/announce", `{"planned_swap": "2026-08-04T09:00:00Z"}`, "planned_swap"},
		{"POST /api/v1/notices/:id/withdraw", "/api/v1/notices/1/withdraw", `{"reasons": "x"}`, "reasons"},
		{"POST /api/v1/notices/:id/edit", "/api/v1/notices/1/edit", `{"title": "T", "body": "B", "planned": "2026-08-04"}`, "planned"},
		{"POST /api/v1/notices/:id/complete", "/api/v1/notices/1/complete", `{"why": "x"}`, "why"},
		{"POST /api/v1/notices/deliver", "/api/v1/notices/deliver", `{"all": true}`, "all"},
		{"POST /api/v1/query", "/api/v1/query", `{"sql": "SELECT 1", "compare": true}`, "compare"},
		{"POST /api/v1/subscriptions", "/api/v1/subscriptions", `{"email": "a@example.com", "follow": "all", "follows": "x"}`, "follows"},
		{"POST /api/v1/subscriptions/:id/remove", "/api/v1/subscriptions/1/remove", `{"why": "x"}`, "why"},
	}
	t.Run("every_json_write_route_is_covered", func(t *testing.T) {
		var want, got []string
		for _, r := range routesOf(opt) {
			if strings.HasPrefix(r, "POST /api/v1/") {
				want = append(want, r)
			}
		}
		for _, tc := range cases {
			got = append(got, tc.route)
		}
		sort.Strings(want)
		sort.Strings(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("JSON write routes not covered here (-routes +cases):\n%s", diff)
		}
	})
	before := state()
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(strings.TrimPrefix(tc.path, "/api/v1/"), "/", "_"), func(t *testing.T) {
			// A field named in another case is not the field: encoding/json took {"TO": "v2"}
			// for {"to": "v2"}.
			first := firstKey.FindStringSubmatch(tc.body)[1]
			for name, body := range map[string]string{
				"unknown_field": tc.body,
				"trailing_data": `{}{"to": "v2"}`,
				"upper_case":    strings.Replace(tc.body, `"`+first+`"`, `"`+strings.ToUpper(first)+`"`, 1),
			} {
				resp, got := send(t, base+tc.path, body)
				var e struct{ Error string }
				json.Unmarshal([]byte(got), &e)
				want := `unknown field "` + tc.field + `"`
				switch name {
				case "trailing_data":
					want = "after the JSON object"
				case "upper_case":
					want = `unknown field "` + strings.ToUpper(first) + `"`
				}
				if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error, want) {
					t.Errorf("%s: %d %s, want 400 saying %s", name, resp.StatusCode, got, want)
				}
			}
		})
	}
	// A form body is read as strictly; and a field of the other kind of publish is refused, not
	// ignored: a rollback given {"to": "v9"} rolled back whatever swap was in effect.
	for _, tc := range []struct {
		name, path, body, form string
		status                 int
		want                   string
	}{
		{"form_swap", "/api/v1/tables/orders/swap", "", "to=v2&dry-run=true", http.StatusBadRequest, `unknown field \"dry-run\"`},
		{"form_rollback", "/api/v1/tables/orders/rollback", "", "dry-run=true&reason=just+looking", http.StatusBadRequest, `unknown field \"dry-run\"`},
		{"rollback_to", "/api/v1/tables/orders/rollback", `{"to": "v9"}`, "", http.StatusUnprocessableEntity, "A rollback takes no to"},
		{"swap_undoes", "/api/v1/tables/orders/swap", `{"to": "v2", "undoes": 1}`, "", http.StatusUnprocessableEntity, "A swap takes no undoes"},
		{"dry_run_undoes", "/api/v1/tables/orders/rollback", `{"dry_run": true, "undoes": -3}`, "", http.StatusUnprocessableEntity, "undoes -3"},
		// A field the request needs is a 400 on every route that has one, as a body that does
		// not parse (retire answered 422, swap and diff 400).
		{"swap_without_to", "/api/v1/tables/orders/swap", `{"reason": "x"}`, "", http.StatusBadRequest, "Say which version to swap to"},
		{"retire_without_version", "/api/v1/tables/orders/retire", `{"reason": "x"}`, "", http.StatusBadRequest, "Say which version to retire"},
		{"diff_without_key", "/api/v1/diffs", `{"old": "orders__v1", "new": "orders__v2"}`, "", http.StatusBadRequest, "old, new and key are required"},
		// A wrongly typed or broken body is named in JSON's words, not Go's.
		{"wrong_type", "/api/v1/tables/orders/swap", `{"to": 2}`, "", http.StatusBadRequest, `field \"to\": want a string, got a JSON number`},
		{"wrong_type_bool", "/api/v1/tables/orders/rollback", `{"dry_run": "yes"}`, "", http.StatusBadRequest, `field \"dry_run\": want true or false, got a JSON string`},
		{"not_an_object", "/api/v1/tables/orders/swap", `["v2"]`, "", http.StatusBadRequest, "the body is a JSON array: want an object"},
		{"not_json", "/api/v1/tables/orders/swap", `{to: v2}`, "", http.StatusBadRequest, "the body is not JSON (at byte 2)"},
		{"cut_short", "/api/v1/tables/orders/swap", `{"to": "v2"`, "", http.StatusBadRequest, "the body's JSON ends early"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resp *http.Response
			var got string
			if tc.form != "" {
				r, err := http.Post(base+tc.path, "application/x-www-form-urlencoded", strings.NewReader(tc.form))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(r.Body)
				r.Body.Close()
				resp, got = r, string(b)
			} else {
				resp, got = send(t, base+tc.path, tc.body)
			}
			if resp.StatusCode != tc.status || !strings.Contains(got, tc.want) {
				t.Errorf("%d %s, want %d saying %s", resp.StatusCode, got, tc.status, tc.want)
			}
		})
	}
	if diff := cmp.Diff(before, state()); diff != "" {
		t.Errorf("refused requests changed something (-before +after):\n%s", diff)
	}
}

// TestAPIDryRunChangesNothing: `trueup swap --dry-run` and `rollback --dry-run` through a server
// send "dry_run": true; the answer is the plan, and nothing moves.
func TestAPIDryRunChangesNothing(t *testing.T) {
	e, tables := versionedWarehouse(t)
	ts := serve(t, server.Options{Tables: ops.NewTables(ops.TableServices{"w": tables}, "w")})
	if resp, body := send(t, ts.URL+"/api/v1/tables/orders/swap", `{"to": "v2"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("swap to v2: %d %s", resp.StatusCode, body)
	}
	for _, tc := range []struct {
		name, path, body string
		want             int
	}{
		{"swap", "/api/v1/tables/orders/swap", `{"to": "v3", "dry_run": true}`, 3},
		{"rollback", "/api/v1/tables/orders/rollback", `{"dry_run": true}`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, history := get(t, ts.URL+"/api/v1/tables/orders")
			resp, body := send(t, ts.URL+tc.path, tc.body)
			var plan struct {
				Kind    string
				Changes []struct {
					Table    string
					From, To int
				}
			}
			if err := json.Unmarshal([]byte(body), &plan); err != nil || resp.StatusCode != http.StatusOK || plan.Kind != tc.name || len(plan.Changes) == 0 {
				t.Fatalf("%d %s, want 200 and the %s's plan", resp.StatusCode, body, tc.name)
			}
			if plan.Changes[0].To != tc.want {
				t.Errorf("the plan moves orders to v%d, want v%d", plan.Changes[0].To, tc.want)
			}
			if src := viewSource(t, e, "orders"); src != "orders__v2" {
				t.Errorf("orders reads %s after a dry run, want orders__v2", src)
			}
			if _, after := get(t, ts.URL+"/api/v1/tables/orders"); after != history {
				t.Errorf("a dry run changed the table's versions or history:\n%s", cmp.Diff(history, after))
			}
		})
	}
}

// TestJSONKeysAreExactAndOnce: a key is a field only as the field is named, and only once.
// encoding/json read {"DRY_RUN": true} as a dry run and {"dry_run": true, "dry_run": false} as
// a real rollback (the last one wins); both are a 400 naming the key, and nothing moves.
func TestJSONKeysAreExactAndOnce(t *testing.T) {
	e, tables := versionedWarehouse(t)
	ts := serve(t, server.Options{Tables: ops.NewTables(ops.TableServices{"w": tables}, "w"),
		Queries: ops.NewQueries(ops.TableServices{"w": tables}, "w", nil)})
	if resp, body := send(t, ts.URL+"/api/v1/tables/orders/swap", `{"to": "v2"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("swap to v2: %d %s", resp.StatusCode, body)
	}
	_, history := get(t, ts.URL+"/api/v1/tables/orders")
	for _, tc := range []struct {
		name, path, body, want string
	}{
		{"duplicate_dry_run", "/api/v1/tables/orders/rollback", `{"dry_run": true, "dry_run": false}`, `field "dry_run" is given twice`},
		{"duplicate_reason", "/api/v1/tables/orders/rollback", `{"reason": "a", "dry_run": false, "reason": "b"}`, `field "reason" is given twice`},
		{"upper_case", "/api/v1/tables/orders/rollback", `{"DRY_RUN": true}`, `unknown field "DRY_RUN" (field names are lower case: "dry_run")`},
		{"mixed_case", "/api/v1/tables/orders/rollback", `{"Dry_Run": false}`, `unknown field "Dry_Run" (field names are lower case: "dry_run")`},
		{"dash", "/api/v1/tables/orders/rollback", `{"dry-run": true}`, `unknown field "dry-run" (did you mean "dry_run"?)`},
		{"swap_upper_case", "/api/v1/tables/orders/swap", `{"TO": "v1"}`, `unknown field "TO" (field names are lower case: "to")`},
		{"swap_duplicate_to", "/api/v1/tables/orders/swap", `{"to": "v1", "to": "v3"}`, `field "to" is given twice`},
		// In an object a field holds, too: which version did the caller confirm orders moves from?
		{"nested_duplicate", "/api/v1/tables/orders/swap", `{"to": "v1", "from": {"orders": "v2", "orders": "v1"}}`, `key "from.orders" is given twice`},
		{"query_nested_duplicate", "/api/v1/query", `{"sql": "SELECT count(*) FROM orders", "versions": {"orders": "v1", "orders": "v2"}}`, `key "versions.orders" is given twice`},
		// A form to the API is read as strictly: echo took the first of dry_run=true&dry_run=false.
		{"form_duplicate", "/api/v1/tables/orders/rollback", "dry_run=false&dry_run=true", `field "dry_run" is given twice`},
		{"form_upper_case", "/api/v1/tables/orders/rollback", "DRY_RUN=true", `unknown field "DRY_RUN" (field names are lower case: "dry_run")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, ts.URL+tc.path, tc.body)
			var got struct{ Error string }
			json.Unmarshal([]byte(body), &got)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(got.Error, tc.want) || strings.Contains(got.Error, "\n") {
				t.Errorf("%d %s, want 400 saying %s in one line", resp.StatusCode, body, tc.want)
			}
			if src := viewSource(t, e, "orders"); src != "orders__v2" {
				t.Fatalf("orders reads %s after a refused request, want orders__v2", src)
			}
			if _, after := get(t, ts.URL+"/api/v1/tables/orders"); after != history {
				t.Errorf("a refused request changed the table's versions or history:\n%s", cmp.Diff(history, after))
			}
		})
	}
	// The same fields, each once and as named, are taken.
	if resp, body := send(t, ts.URL+"/api/v1/tables/orders/rollback", `{"dry_run": true, "reason": "look"}`); resp.StatusCode != http.StatusOK {
		t.Errorf("a dry run named exactly: %d %s, want 200", resp.StatusCode, body)
	}
}
