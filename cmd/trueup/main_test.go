package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trueup/sql/sqltest"
)

// cli runs trueup in-process and returns its exit code, stdout and stderr.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// demoDir writes a small demo project on DuckDB once per test.
func demoDir(t *testing.T, extra ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	args := append([]string{"demo", "--dir", dir, "--rows", "5000", "--write-only"}, extra...)
	if code, _, errs := cli(t, args...); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errs)
	}
	return dir
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	badKey := write("bad-key.yaml", "targets:\n  w:\n    url: duckdb:w.duckdb\nretension: 3\n")
	badURL := write("bad-url.yaml", "targets:\n  w:\n    url: mysql://x\n")
	unreachable := write("unreachable.yaml", "targets:\n  ch:\n    url: clickhouse://127.0.0.1:1/default\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no_command", nil, "usage: trueup"},
		{"unknown_command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown_flag", []string{"serve", "--bogus"}, "flag provided but not defined: -bogus"},
		{"unknown_global_flag", []string{"--bogus", "serve"}, "flag provided but not defined: -bogus"},
		{"extra_argument", []string{"serve", "now"}, `unexpected argument "now"`},
		{"missing_config", []string{"--config", filepath.Join(dir, "nope.yaml"), "serve"}, "nope.yaml not found in " + dir + ": run trueup init"},
		{"unknown_config_key", []string{"--config", badKey, "serve"}, badKey + ":4: field retension not found"},
		{"bad_target_url", []string{"--config", badURL, "serve"}, badURL + `:2: target w: url "mysql://x"`},
		{"unreachable_clickhouse", []string{"--config", unreachable, "serve"}, "clickhouse://127.0.0.1:1/default"},
		{"public_addr_without_tokens", []string{"demo", "--dir", filepath.Join(dir, "d"), "--addr", "0.0.0.0:8080", "--rows", "1000", "--target", "duckdb:" + filepath.Join(dir, "x", "w.duckdb")}, "does not exist"},
		{"demo_bad_target", []string{"--target", "clickhouse://127.0.0.1:1/x", "demo", "--dir", filepath.Join(dir, "d2"), "--write-only"}, "clickhouse://127.0.0.1:1/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := cli(t, tc.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want 2; stderr: %s", code, errs)
			}
			first := strings.SplitN(errs, "\n", 2)[0]
			if tc.want != "usage: trueup" && !strings.Contains(first, tc.want) {
				t.Errorf("first line %q does not contain %q", first, tc.want)
			}
		})
	}
	// Nothing was written by the refused commands: no state files, no demo folders.
	for _, name := range []string{"trueup-state.duckdb", "d", "d2", "x"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s was written by a refused command", name)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary folder left behind: %s", e.Name())
		}
	}
}

func TestDemoWritesAProjectOnce(t *testing.T) {
	dir := demoDir(t)
	for _, p := range []string{"trueup.yaml", "warehouse.duckdb", "rules", "backfills", "exposures"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("demo did not write %s: %v", p, err)
		}
	}
	// Running it again keeps the existing project.
	before, _ := os.Stat(filepath.Join(dir, "warehouse.duckdb"))
	code, _, errs := cli(t, "demo", "--dir", dir, "--write-only")
	if code != 0 || !strings.Contains(errs, "using the existing project") {
		t.Fatalf("second demo: exit %d: %s", code, errs)
	}
	after, _ := os.Stat(filepath.Join(dir, "warehouse.duckdb"))
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("second demo rewrote the warehouse")
	}
	// Refuse a public address: no tokens are configured in the demo.
	code, _, errs = cli(t, "--config", filepath.Join(dir, "trueup.yaml"), "serve", "--addr", "0.0.0.0:8080")
	if code != exitUsage || !strings.Contains(errs, "loopback only") {
		t.Errorf("public addr: exit %d: %s", code, errs)
	}
}

// TestLockedWarehouse holds the demo's DuckDB file from another process: serve must say who
// holds it and exit 2.
func TestLockedWarehouse(t *testing.T) {
	if p := os.Getenv("TRUEUP_HOLD_FILE"); p != "" {
		e := sqltest.Open(t, "duckdb:"+p)
		_ = e
		fmt.Println("holding")
		io.ReadAll(os.Stdin) // until the parent closes our stdin
		return
	}
	dir := demoDir(t)
	os.Remove(filepath.Join(dir, "trueup-state.duckdb")) // the demo's own check wrote one
	holdElsewhere(t, filepath.Join(dir, "warehouse.duckdb"))
	code, _, errs := cli(t, "--config", filepath.Join(dir, "trueup.yaml"), "serve")
	if code != exitUsage {
		t.Errorf("exit %d, want 2: %s", code, errs)
	}
	if !strings.Contains(errs, "warehouse.duckdb is held by process") {
		t.Errorf("message does not name the file and holder: %s", errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "trueup-state.duckdb")); err == nil {
		t.Error("the ledger was created although the target could not be opened")
	}
}

// holdElsewhere holds the DuckDB file at path from another process (TestLockedWarehouse's
// child) until the test ends.
func holdElsewhere(t *testing.T, path string) {
	t.Helper()
	holder := exec.Command(os.Args[0], "-test.run", "^TestLockedWarehouse$")
	holder.Env = append(os.Environ(), "TRUEUP_HOLD_FILE="+path)
	stdin, _ := holder.StdinPipe()
	stdout, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); holder.Wait() })
	buf := make([]byte, 64)
	if n, _ := stdout.Read(buf); !strings.Contains(string(buf[:n]), "holding") {
		t.Fatalf("holder did not start: %q", buf[:n])
	}
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serveAndGet starts `trueup serve` on a project, fetches a page, and stops it with its context.
func serveAndGet(t *testing.T, cfg, path string) string {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var errb bytes.Buffer
	go func() { done <- run(ctx, []string{"--config", cfg, "serve", "--addr", addr}, io.Discard, &errb) }()
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + path)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("server did not come up: %v; stderr: %s", err, errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exited %d after shutdown: %s", code, errb.String())
	}
	return body
}

func TestServeShowsDemoTables(t *testing.T) {
	cases := map[string]string{"duckdb": demoDir(t)}
	if url := sqltest.ClickHouseURL(t); url != "" {
		cases["clickhouse"] = demoDir(t, "--target", url)
	}
	for name, dir := range cases {
		t.Run(name, func(t *testing.T) {
			body := serveAndGet(t, filepath.Join(dir, "trueup.yaml"), "/")
			for _, table := range []string{"orders", "daily_revenue", "customer_ltv", "region_summary"} {
				if !strings.Contains(body, `data-table="`+table+`"`) {
					t.Errorf("dashboard does not list %s", table)
				}
			}
			if !strings.Contains(body, "loopback only") {
				t.Error("dashboard does not say it listens on loopback only")
			}
		})
	}
}
