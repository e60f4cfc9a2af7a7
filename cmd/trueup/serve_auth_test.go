package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trueup/config"
)

// TestServeWithTokens: with tokens configured the no-tokens banner is gone and serve binds any
// address (it gets as far as binding; 192.0.2.1 is a documentation address no machine has).
func TestServeWithTokens(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\nauth:\n  tokens:\n    - {name: ann, role: approver, sha256: " + config.HashToken("secret") + "}\n")
	f.Close()

	body := serveAndGet(t, cfg, "/login")
	if strings.Contains(body, "loopback only") || !strings.Contains(body, `data-testid="login-form"`) {
		t.Errorf("login page with tokens:\n%s", body)
	}
	// Bounded: where the system lets a process bind an address it does not have, serve runs
	// until the context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs bytes.Buffer
	run(ctx, []string{"--config", cfg, "serve", "--addr", "192.0.2.1:0"}, io.Discard, &errs)
	if strings.Contains(errs.String(), "loopback only") || !strings.Contains(errs.String(), "192.0.2.1") {
		t.Errorf("serve on a non-loopback address with tokens: %s", errs.String())
	}
}
