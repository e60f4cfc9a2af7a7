package main

import (
	"context"
	"net"

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
	cfg, err := config.Load(g.configOrDefault())
	if err != nil {
		return nil, usageError{err.Error()}
	}
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
		if _, err := a.engine(g.target); err != nil {
			a.close()
			return nil, err
		}
	}
	l, err := ledger.Open(ctx, cfg.StatePath())
	if err != nil {
		a.close()
		return nil, usageError{err.Error()}
	}
	a.ledger = l
	return a, nil
}

// engine returns a named target (or the default one for "").
func (a *app) engine(name string) (tsql.Engine, error) {
	if name == "" {
		name = a.cfg.DefaultTarget
	}
	if e, ok := a.targets[name]; ok {
		return e, nil
	}
	return nil, usagef("unknown target %q (the config has %v)", name, a.names)
}

func (a *app) close() {
	for _, e := range a.targets {
		e.Close()
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
