package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"trueup/backfill"
	"trueup/ops"
	"trueup/server"
)

// TestFinishedRunRefusalsAreConflicts: cancelling or resuming a run that has ended, and catching
// up one whose live versions did not change, are refused as the state of things, 409 as every
// other "not in the state needed" (they answered 422 "invalid", and the CLI exited 2 as for
// bad input), on the API and the pages, and the run stays as it was. A backfill that does not
// exist is still a 404.
func TestFinishedRunRefusalsAreConflicts(t *testing.T) {
	ctx := t.Context()
	svc := backfillService(t)
	run, err := svc.Runner.Start(ctx, "fix_dedup_bug", backfill.RunOptions{Actor: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	if run, err = svc.Runner.Execute(ctx, run.ID, backfill.ExecOptions{}); err != nil || run.State != backfill.RunValidated {
		t.Fatalf("the run: %v, %v; want it validated", run, err)
	}
	ts := serve(t, server.Options{Backfills: ops.NewBackfills(svc)})
	_, before := get(t, ts.URL+"/api/v1/backfills/fix_dedup_bug/status")
	for _, tc := range []struct {
		path, want string
		status     int
	}{
		{"/api/v1/backfills/fix_dedup_bug/cancel", "nothing to cancel", http.StatusConflict},
		{"/api/v1/backfills/fix_dedup_bug/resume", "nothing left to build", http.StatusConflict},
		{"/api/v1/backfills/fix_dedup_bug/run?catch_up=true", "Nothing to catch up", http.StatusConflict},
		{"/backfills/fix_dedup_bug/cancel", "nothing to cancel", http.StatusConflict},
		{"/backfills/fix_dedup_bug/resume", "nothing left to build", http.StatusConflict},
		{"/api/v1/backfills/nope/cancel", "There is no backfill nope", http.StatusNotFound},
	} {
		t.Run(strings.ReplaceAll(strings.TrimPrefix(tc.path, "/"), "/", "_"), func(t *testing.T) {
			resp, body := post(t, ts.URL+tc.path)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s, want %d saying %s", resp.StatusCode, body, tc.status, tc.want)
			}
			if strings.HasPrefix(tc.path, "/api/") && tc.status == http.StatusConflict {
				var e struct{ Kind string }
				if json.Unmarshal([]byte(body), &e); e.Kind != "conflict" {
					t.Errorf("kind %q, want conflict", e.Kind)
				}
			}
			if _, after := get(t, ts.URL+"/api/v1/backfills/fix_dedup_bug/status"); after != before {
				t.Errorf("a refused request changed the run:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}
