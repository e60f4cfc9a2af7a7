package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is stderr shared by the server's log and the reload's problem lines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// hangupDemo serves a demo project in this process for a reload test: its folder, its address
// and its stderr. The server stops, and must exit 0, when the test ends.
func hangupDemo(t *testing.T) (dir, addr string, errb *lockedBuffer) {
	t.Helper()
	dir, addr, errb = demoDir(t), freeAddr(t), &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--config", filepath.Join(dir, "trueup.yaml"), "serve", "--addr", addr}, io.Discard, errb)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, errb.String())
		}
	})
	return dir, addr, errb
}

// awaitStderr waits for want on the server's stderr (a reload refused logs it there).
func awaitStderr(t *testing.T, errb *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(errb.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q on stderr: %s", want, errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeReloadsRulesOnHangup: SIGHUP makes a running server take up edited rules; a broken
// rule set is refused with its problems on stderr and the running rules stay.
func TestServeReloadsRulesOnHangup(t *testing.T) {
	dir, addr, errb := hangupDemo(t)
	names := func() map[string]bool {
		resp, err := http.Get("http://" + addr + "/api/v1/rules")
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var list []struct {
			Rule string `json:"rule"`
		}
		if json.NewDecoder(resp.Body).Decode(&list) != nil {
			return nil
		}
		out := map[string]bool{}
		for _, r := range list {
			out[r.Rule] = true
		}
		return out
	}
	waitFor := func(what string, ok func(map[string]bool) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for got := names(); !ok(got); got = names() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: rules served %v\nstderr: %s", what, got, errb.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("server up", func(m map[string]bool) bool { return m["matches_raw"] })

	rule := "-- kind: custom\n-- description: no order without a customer\nSELECT order_id FROM orders WHERE customer_id IS NULL\n"
	if err := os.WriteFile(filepath.Join(dir, "rules", "orders", "orders_have_customers.sql"), []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "rules", "daily_revenue", "matches_raw.sql")); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	waitFor("after the reload", func(m map[string]bool) bool { return m["orders_have_customers"] && !m["matches_raw"] })

	if err := os.WriteFile(filepath.Join(dir, "rules", "broken.sql"), []byte("-- kind: nonsense\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	awaitStderr(t, errb, "rules not reloaded")
	if !strings.Contains(errb.String(), "broken.sql:1: kind \"nonsense\"") {
		t.Errorf("the problem is not on stderr as path:line: %s", errb.String())
	}
	if got := names(); !got["orders_have_customers"] || got["broken"] {
		t.Errorf("after a refused reload the server lists %v, want the running rules", got)
	}
}

// TestServeReloadsBackfillsOnHangup: SIGHUP makes a running server take up edited backfill
// files: a new file is served, an edited one reads as edited; files with a problem are refused
// with it on stderr as path:line, and the running files stay.
func TestServeReloadsBackfillsOnHangup(t *testing.T) {
	dir, addr, errb := hangupDemo(t)
	scopes := func() map[string]string {
		resp, err := http.Get("http://" + addr + "/api/v1/backfills")
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var list []struct {
			Name  string `json:"name"`
			Scope string `json:"scope"`
		}
		if json.NewDecoder(resp.Body).Decode(&list) != nil {
			return nil
		}
		out := map[string]string{}
		for _, b := range list {
			out[b.Name] = b.Scope
		}
		return out
	}
	waitFor := func(what string, ok func(map[string]string) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for got := scopes(); !ok(got); got = scopes() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: backfills served %v\nstderr: %s", what, got, errb.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("server up", func(m map[string]string) bool { _, ok := m["fix_dedup_bug"]; return ok })

	fix, err := os.ReadFile(filepath.Join(dir, "backfills", "fix_dedup_bug.sql"))
	if err != nil {
		t.Fatal(err)
	}
	again := strings.Replace(string(fix), "-- scope: from-rule: matches_raw", "-- scope: 2026-07-12..2026-07-13", 1)
	if again == string(fix) {
		t.Fatal("fix_dedup_bug.sql has no from-rule scope to edit")
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "backfills", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("fix_again.sql", again)
	write("fix_dedup_bug.sql", strings.Replace(string(fix), "-- scope: from-rule: matches_raw", "-- scope: 2026-07-10..2026-07-11", 1))
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	waitFor("after the reload", func(m map[string]string) bool {
		return strings.Contains(m["fix_again"], "2026-07-12") && strings.Contains(m["fix_dedup_bug"], "2026-07-10")
	})

	write("broken.sql", "-- table: orders\n-- grain: fortnight\nSELECT 1\n")
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	awaitStderr(t, errb, "backfills not reloaded")
	if !regexp.MustCompile(`broken\.sql:\d+: `).MatchString(errb.String()) {
		t.Errorf("the problem is not on stderr as path:line: %s", errb.String())
	}
	if got := scopes(); got["fix_again"] == "" || got["broken"] != "" {
		t.Errorf("after a refused reload the server lists %v, want the running files", got)
	}
}
