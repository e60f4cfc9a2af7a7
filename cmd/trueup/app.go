package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"

	"trueup/config"
	"trueup/ledger"
	tsql "trueup/sql"
)

// app is a loaded project: its config, open targets and ledger.
type app struct {
	cfg     *config.Config
	targets map[string]tsql.Engine
	names   []string
	ledger  *ledger.Ledger
}

// openApp loads the config and opens every target, then the ledger. Targets are opened first so
// a bad or unreachable target fails before anything is written.
func openApp(ctx context.Context, g globals) (*app, error) {
	cfg, err := loadConfig(g)
	if err != nil {
		return nil, err
	}
	return openConfigured(ctx, g, cfg)
}

// loadConfig reads the project's config, opening nothing.
func loadConfig(g globals) (*config.Config, error) {
	cfg, err := config.Load(g.configOrDefault())
	if err != nil {
		return nil, badInput(err)
	}
	return cfg, nil
}

// openConfigured is openApp with the config read already.
func openConfigured(ctx context.Context, g globals, cfg *config.Config) (*app, error) {
	a := &app{cfg: cfg, targets: map[string]tsql.Engine{}}
	for _, name := range cfg.TargetNames() {
		url, _ := cfg.TargetURL(name)
		e, err := tsql.Open(ctx, url)
		if err != nil {
			a.close()
			return nil, usagef("target %s: %v", name, err)
		}
		a.targets[name] = e
		a.names = append(a.names, name)
	}
	if g.target != "" {
		if _, err := a.open(ctx, g.target); err != nil {
			a.close()
			return nil, err
		}
	}
	l, err := ledger.Open(ctx, cfg.StatePath())
	if err != nil {
		a.close()
		return nil, badInput(err)
	}
	a.ledger = l
	return a, nil
}

// engine returns a target by name (or the default one for ""), or by a URL that open has
// opened.
func (a *app) engine(name string) (tsql.Engine, error) {
	if name == "" {
		name = a.cfg.DefaultTarget
	}
	if e, ok := a.targets[name]; ok {
		return e, nil
	}
	return nil, usagef("unknown target %q (the config has %v)", name, a.names)
}

// open returns a target by name, or by URL (duckdb:PATH, clickhouse://host:port/db): the
// configured target with that URL, else the engine at the URL, opened once and closed with
// the app. Either way it is found under that URL afterwards too (engine, the targets rules
// run on), so --target URL works wherever a target name does.
func (a *app) open(ctx context.Context, name string) (tsql.Engine, error) {
	if e, err := a.engine(name); err == nil || !isTargetURL(name) {
		return e, err
	}
	for _, n := range a.names {
		if u, _ := a.cfg.TargetURL(n); sameTarget(u, name) {
			a.targets[name] = a.targets[n]
			return a.targets[n], nil
		}
	}
	e, err := tsql.Open(ctx, name)
	if err != nil {
		return nil, usagef("target %s: %v", tsql.Redact(name), err)
	}
	a.targets[name] = e
	return e, nil
}

// name is the name a target is shown by: the default one's for "".
func (a *app) name(target string) string {
	if target == "" {
		return a.cfg.DefaultTarget
	}
	return target
}

// sameTarget reports whether two target URLs name the same engine: a DuckDB file by its
// absolute path (one process owns a DuckDB file, so it must not be opened twice).
func sameTarget(a, b string) bool {
	abs := func(u string) string {
		if p, ok := strings.CutPrefix(u, "duckdb:"); ok && p != ":memory:" {
			if ap, err := filepath.Abs(p); err == nil {
				return "duckdb:" + ap
			}
		}
		return u
	}
	return a == b || abs(a) == abs(b)
}

func isTargetURL(s string) bool {
	return strings.HasPrefix(s, "duckdb:") || strings.HasPrefix(s, "clickhouse://")
}

func (a *app) close() {
	closed := map[tsql.Engine]bool{}
	for _, e := range a.targets {
		if !closed[e] {
			closed[e] = true
			e.Close()
		}
	}
	if a.ledger != nil {
		a.ledger.Close()
	}
}

// loopbackOnly refuses an address that is not on the loopback interface. serve calls it when no
// tokens are configured: nobody may then reach the server from elsewhere.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--addr %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return usagef("--addr %q: no API tokens are configured, so trueup listens on loopback only (use 127.0.0.1)", addr)
	}
	return nil
}
