package main

import (
	"context"
	"net"

	flow "trueup/app"
	"trueup/config"
)

// app is a loaded project (app.Project): its config, open targets and ledger.
type app = flow.Project

// openApp loads the config and opens the project (flow.Open).
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

// openConfigured is openApp with the config read already; --target may name a URL to open too.
func openConfigured(ctx context.Context, g globals, cfg *config.Config) (*app, error) {
	return flow.Open(ctx, cfg, g.target)
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
