package app

import (
	"context"

	"trueup/config"
	"trueup/fault"
	tsql "trueup/sql"
)

// MemoryState is the state of OpenBare that is not kept: a ledger in memory, gone at Close.
const MemoryState = ""

// OpenBare opens a project that has no trueup.yaml, for the commands that need none (a diff of
// two URLs, a check of a rules folder against a URL): its targets are the URLs given, found by
// them (OpenTarget, Engine), and it has no default one, no notify channels and no server. Its
// ledger is the file state (created if needed) or, for MemoryState, one in memory: what the
// command records is then printed and not kept. Relative paths resolve against dir. Targets are
// opened first so a bad or unreachable one fails before the state file is made.
func OpenBare(ctx context.Context, dir, state string, urls ...string) (*Project, error) {
	p := newProject(&config.Config{Dir: dir, State: state})
	for _, u := range urls {
		if !tsql.IsURL(u) {
			p.Close()
			return nil, fault.New(fault.Invalid, "target %q: without a trueup.yaml a target is a URL (duckdb:PATH, clickhouse://host:port/db)", u)
		}
		if _, err := p.OpenTarget(ctx, u); err != nil {
			p.Close()
			return nil, err
		}
	}
	path := ":memory:"
	if state != MemoryState {
		path = p.Config.StatePath()
	}
	return p.openLedger(ctx, path)
}
