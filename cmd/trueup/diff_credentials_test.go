package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trueup/ledger"
	"trueup/reconcile"
	"trueup/server"
	"trueup/sql/sqltest"
)

// TestDiffTargetURLCredentialsAreNotShown: a target URL's user and password never reach the
// terminal when the engine cannot be opened (the engine's error repeated the raw URL), whether
// the URL was given as --new-target or in trueup.yaml, in its user part or its query string.
func TestDiffTargetURLCredentialsAreNotShown(t *testing.T) {
	cfg := diffProject(t)
	secretCfg := filepath.Join(filepath.Dir(cfg), "lake.yaml")
	if err := os.WriteFile(secretCfg, []byte("targets:\n  lake:\n    url: clickhouse://ann:s3cret@127.0.0.1:1/db\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"unreachable_url", []string{"--config", cfg, "diff", "--old", "orders__v1", "--new", "orders", "--key", "order_id",
			"--partition", "order_date", "--new-target", "clickhouse://ann:s3cret@127.0.0.1:1/db"}},
		{"bad_port", []string{"--config", cfg, "diff", "--old", "orders__v1", "--new", "orders", "--key", "order_id",
			"--partition", "order_date", "--new-target", "clickhouse://ann:s3cret@127.0.0.1:nope/db"}},
		{"password_in_the_query", []string{"--config", cfg, "diff", "--old", "orders__v1", "--new", "orders", "--key", "order_id",
			"--partition", "order_date", "--new-target", "clickhouse://127.0.0.1:1/db?username=ann&password=s3cret&dial_timeout=1s"}},
		{"configured_target", []string{"--config", secretCfg, "diff", "--old", "orders__v1", "--new", "orders",
			"--key", "order_id", "--partition", "order_date"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := cli(t, tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, out, errs)
			}
			if strings.Contains(out+errs, "s3cret") || !strings.Contains(errs, "clickhouse://127.0.0.1:") {
				t.Errorf("stderr shows the password or not the target: %q", errs)
			}
		})
	}
}

// TestDiffTargetURLIsSavedWithoutCredentials: a diff against a target named by a URL with a user
// in it is saved, listed and shown without the user (the raw URL was saved and shown on /diffs,
// /diffs/{id} and /api/v1/diffs).
func TestDiffTargetURLIsSavedWithoutCredentials(t *testing.T) {
	url := sqltest.ClickHouseURL(t)
	if url == "" {
		t.Skip("needs ClickHouse")
	}
	// the test server's user "default" has no password: an empty one is what it accepts
	withUser := strings.Replace(url, "://", "://default:@", 1)
	cfg := diffProject(t)
	loadDiffTable(t, sqltest.Open(t, url), "orders", diffRows(nil))
	code, out, errs := cli(t, "--config", cfg, "diff", "--old", "orders__v1", "--new", "orders", "--new-target", withUser,
		"--key", "order_id", "--partition", "order_date")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(out+errs, "default:@") {
		t.Errorf("the terminal shows the user:\n%s\n%s", out, errs)
	}

	l, err := ledger.Open(context.Background(), filepath.Join(filepath.Dir(cfg), "trueup-state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ts := httptest.NewServer(server.New(server.Options{Diffs: reconcile.NewStore(l),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
	defer ts.Close()
	for _, path := range []string{"/diffs", "/diffs/1", "/api/v1/diffs", "/api/v1/diffs/1"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "default:@") {
			t.Errorf("GET %s: %d, shows the user: %v", path, resp.StatusCode, strings.Contains(string(body), "default:@"))
		}
		if path == "/api/v1/diffs/1" && !strings.Contains(string(body), fmt.Sprintf("%q", url)) {
			t.Errorf("GET %s does not name the target %s:\n%.400s", path, url, body)
		}
	}
}
