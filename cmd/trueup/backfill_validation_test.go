package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// strictBackfill writes backfills/strict.sql into a demo project: fix_dedup_bug without its
// downstream tables, expecting the days it fixes not to change, which they do (+~5% rows).
// daily_revenue, not rebuilt with it, then fails its rule against orders in the validation too.
func strictBackfill(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "backfills", "fix_dedup_bug.sql"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "-- downstream:"):
			continue
		case strings.HasPrefix(l, "-- expect:"):
			l = "-- expect: inside scope rows +0..0%; outside scope identical"
		}
		out = append(out, l)
	}
	if err := os.WriteFile(filepath.Join(dir, "backfills", "strict.sql"), []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBackfillValidationFailureSaysWhy: a run that ends validation-failed says why — in run's
// one-line cause, in status (text and JSON) and on the backfill's page — locally and through a
// server, from the ledger's validation record.
func TestBackfillValidationFailureSaysWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	local, served := demoDir(t), demoDir(t)
	strictBackfill(t, local)
	strictBackfill(t, served)
	srv := serveDemo(t, served)
	// daily_revenue is not rebuilt with it, so its rule against orders fails too
	rule := "rule matches_raw on daily_revenue failed: 9 partitions of 92 differ from the reference by more than 0.1%"
	why := "orders__v2 does not meet its expectations (inside scope rows +0..0%; outside scope identical): 9 partitions unexpected: 2026-07-10 (rows "
	lcode, lout, lerr := cli(t, "--config", filepath.Join(local, "trueup.yaml"), "backfill", "run", "strict")
	rcode, rout, rerr := cli(t, "--server", srv.url, "backfill", "run", "strict")
	for _, side := range []struct {
		name           string
		code           int
		stdout, stderr string
	}{{"local", lcode, lout, lerr}, {"server", rcode, rout, rerr}} {
		if side.code != exitFailed || !strings.Contains(side.stderr, "trueup: backfill strict: run 1 built orders__v2 but validation failed: "+rule+"; "+why) {
			t.Errorf("%s: backfill run: exit %d, want %d, and the reason on stderr: %s %s", side.name, side.code, exitFailed, side.stdout, side.stderr)
		}
		if !strings.Contains(side.stdout, "\n  validation failed:\n    - "+rule+"\n    - "+why) {
			t.Errorf("%s: backfill run's status lacks the reason:\n%s", side.name, side.stdout)
		}
	}
	if normalizeText(lout) != normalizeText(rout) {
		t.Errorf("backfill run: stdout differs:\nlocal:\n%s\nserver:\n%s", lout, rout)
	}
	for _, tc := range []remoteCase{
		{"status", []string{"backfill", "status", "strict"}, exitOK, "text"},
		{"status_json", []string{"backfill", "status", "strict", "--format", "json"}, exitOK, "json"},
	} {
		t.Run(tc.name, func(t *testing.T) { compareModes(t, local, srv, tc) })
	}
	_, out, _ := cli(t, "--config", filepath.Join(local, "trueup.yaml"), "backfill", "status", "strict", "--format", "json")
	if !strings.Contains(out, `"validation_failures": [`+"\n    \""+rule+"\",\n    \""+why) {
		t.Errorf("status --format json lacks validation_failures:\n%s", out)
	}
	resp, err := http.Get(srv.url + "/backfills/strict")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if page := string(body); !strings.Contains(page, `data-testid="verdict-failure"`) || !strings.Contains(page, "does not meet its expectations (inside scope rows +0..0%; outside scope identical): 9 partitions unexpected") {
		t.Errorf("the backfill's page does not say why the validation failed:\n%s", page)
	}
}
