package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trueup/config"
	"trueup/fault"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trueup.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	p := write(t, "targets:\n  warehouse:\n    url: duckdb:data/w.duckdb\n  ch:\n    url: clickhouse://127.0.0.1:9000/default\ndefault_target: warehouse\n")
	c, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(p)
	if got, _ := c.TargetURL(""); got != "duckdb:"+filepath.Join(dir, "data/w.duckdb") {
		t.Errorf("default target URL %q", got)
	}
	if got, _ := c.TargetURL("ch"); got != "clickhouse://127.0.0.1:9000/default" {
		t.Errorf("ch URL %q", got)
	}
	if c.StatePath() != filepath.Join(dir, "trueup-state.duckdb") || c.Server.Addr != "127.0.0.1:8080" {
		t.Errorf("defaults: state %q addr %q", c.StatePath(), c.Server.Addr)
	}
	if _, err := c.TargetURL("nope"); err == nil {
		t.Error("unknown target accepted")
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"unknown_key", "targets:\n  w:\n    url: duckdb:x.duckdb\nstat: x\n", ":4: field stat not found"},
		{"unknown_nested_key", "targets:\n  w:\n    url: duckdb:x.duckdb\n    pasword: x\n", ":4: field pasword not found (allowed: url)"},
		{"no_targets", "state: x.duckdb\n", ":1: no targets"},
		{"bad_url", "targets:\n  w:\n    url: postgres://x\n", ":2: target w: url \"postgres://x\""},
		{"missing_url", "targets:\n  w: {}\n", ":2: target w: missing url"},
		{"bad_default", "default_target: nope\ntargets:\n  w:\n    url: duckdb:x.duckdb\n", ":1: default_target \"nope\""},
		{"malformed", "targets: [\n", ":1: did not find expected node content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(t, tc.body)
			_, err := config.Load(p)
			if !errors.Is(err, fault.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), p+tc.want) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "config.") {
				t.Errorf("error %q: want one line containing %q", err, p+tc.want)
			}
		})
	}
	if _, err := config.Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml not found in ") || !strings.Contains(err.Error(), "run trueup init") {
		t.Errorf("missing file: %v", err)
	}
}
