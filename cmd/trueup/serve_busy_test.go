package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeOnABusyPort: `trueup serve` on an address something else listens on fails at once,
// exit 2 with one line naming the address, before it opens the ledger: the state file is not
// created (it was opened, migrated and recorded in, and then the listen failed).
func TestServeOnABusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"addr_from_the_config", nil},
		{"addr_flag", []string{"--addr", addr}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "trueup.yaml")
			if err := os.WriteFile(cfg, []byte("state: state.duckdb\ndefault_target: w\ntargets:\n  w: {url: 'duckdb:w.duckdb'}\nserver: {addr: '"+addr+"'}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errs := cli(t, append([]string{"--config", cfg, "serve"}, tc.args...)...)
			if code != exitUsage || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, addr) || !strings.Contains(errs, "in use") || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q: want exit %d and one line naming %s", code, out, errs, exitUsage, addr)
			}
			for _, f := range []string{"state.duckdb", "w.duckdb"} {
				if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
					t.Errorf("%s was created (%v): nothing is opened before the address is bound", f, err)
				}
			}
		})
	}
}
