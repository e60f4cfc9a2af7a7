package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"trueup/notices"
	"trueup/ops"
	"trueup/server"
)

// TestAPIBadQueryIs400: a bad query parameter is a 400 on every API route, backfill scopes
// and samples too (a bad from/to was a 422, a bad sample was taken as 0).
func TestAPIBadQueryIs400(t *testing.T) {
	l := testLedger(t)
	ntc := notices.New(l, notices.Options{})
	ts := serve(t, server.Options{Backfills: ops.NewBackfills(backfillService(t)), Audit: l, Notices: ntc, NoticeOps: ops.NewNotices(ntc)})
	for _, tc := range []struct {
		method, path, error string
	}{
		{"GET", "/api/v1/backfills/fix_dedup_bug?from=2026-07-10&to=July", `to "July": want YYYY-MM-DD`},
		{"GET", "/api/v1/backfills/fix_dedup_bug?from=2026-07-10", "give both from and to"},
		{"POST", "/api/v1/backfills/fix_dedup_bug/dry-run?from=2026-07-18&to=2026-07-10", "scope 2026-07-18..2026-07-10 ends before it starts"},
		{"POST", "/api/v1/backfills/fix_dedup_bug/run?from=2026-02-30&to=2026-03-01", `from "2026-02-30": want YYYY-MM-DD`},
		{"POST", "/api/v1/backfills/fix_dedup_bug/run?sample=some", `?sample="some": want a number of partitions`},
		{"POST", "/api/v1/backfills/fix_dedup_bug/run?sample=-2", `?sample="-2"`},
		{"GET", "/api/v1/notices?state=sent", "state"},
		{"GET", "/api/v1/audit?offset=x", `?offset="x"`},
	} {
		t.Run(strings.ReplaceAll(strings.TrimPrefix(tc.path, "/api/v1/"), "/", "_"), func(t *testing.T) {
			resp, body := get(t, ts.URL+tc.path)
			if tc.method == "POST" {
				resp, body = send(t, ts.URL+tc.path, "")
			}
			var e struct{ Error string }
			if err := json.Unmarshal([]byte(body), &e); err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error, tc.error) {
				t.Errorf("%s %s: %d %s, want 400 saying %q", tc.method, tc.path, resp.StatusCode, body, tc.error)
			}
		})
	}
	_, body := get(t, ts.URL+"/api/v1/backfills/fix_dedup_bug/status")
	if strings.Contains(body, `"run_id":1`) {
		t.Errorf("a refused run started: %s", body)
	}
}

// TestAPIOversizedBodyIs413: a body over 1 MiB is a 413 also when it comes without a length
// (it was a 400, "not a diff request", once the handler read past the limit).
func TestAPIOversizedBodyIs413(t *testing.T) {
	store, _ := storedDiff(t)
	ntc := notices.New(testLedger(t), notices.Options{})
	ts := serve(t, server.Options{Diffs: store, Notices: ntc, NoticeOps: ops.NewNotices(ntc)})
	for _, tc := range []struct {
		name, path string
		chunked    bool
	}{
		{"diff_without_length", "/api/v1/diffs", true},
		{"diff_with_length", "/api/v1/diffs", false},
		{"notice_edit_without_length", "/api/v1/notices/1/edit", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			huge := `{"old": "` + strings.Repeat("x", 2<<20) + `"}`
			var body io.Reader = strings.NewReader(huge)
			if tc.chunked {
				body = io.MultiReader(body) // no length: sent chunked
			}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var e struct{ Error string }
			if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || e.Error != "The request body is larger than 1 MiB." {
				t.Errorf("%d %s, want 413", resp.StatusCode, b)
			}
		})
	}
}
