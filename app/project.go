package app

import (
	"context"
	"path/filepath"
	"strings"
	"sync"

	"trueup/config"
	"trueup/fault"
	"trueup/ledger"
	tsql "trueup/sql"
)

// Project is a loaded project: its config, its open targets and its ledger — what every
// operation stands on, opened once by Open and closed once by Close.
type Project struct {
	Config  *config.Config
	Targets map[string]tsql.Engine // by name, and by URL for the ones OpenTarget opened
	Names   []string               // the configured targets, in the config's order
	Ledger  *ledger.Ledger

	background sync.WaitGroup  // work the services started in the background (Wait)
	bgCtx      context.Context // the background work's: ends when the project closes
	bgStop     context.CancelFunc
}

// newProject is a project of cfg with no target open yet.
func newProject(cfg *config.Config) *Project {
	ctx, stop := context.WithCancel(context.Background())
	return &Project{Config: cfg, Targets: map[string]tsql.Engine{}, bgCtx: ctx, bgStop: stop}
}

// Open opens every target of cfg, and extra when it names a target by URL (the CLI's --target),
// then the ledger. Targets are opened first so a bad or unreachable target fails before
// anything is written.
func Open(ctx context.Context, cfg *config.Config, extra string) (*Project, error) {
	p, err := OpenTargets(ctx, cfg, extra)
	if err != nil {
		return nil, err
	}
	return p.openLedger(ctx, cfg.StatePath())
}

// openLedger opens the ledger at path as p's, the last step of opening a project: when it
// cannot, p is closed (its targets with it) and the error is the project's to fix.
func (p *Project) openLedger(ctx context.Context, path string) (*Project, error) {
	l, err := ledger.Open(ctx, path)
	if err != nil {
		p.Close()
		return nil, fault.Mark(fault.Invalid, err)
	}
	p.Ledger = l
	return p, nil
}

// OpenTargets is Open without the ledger: a project for what reads only the targets (the
// write target a pipeline asks for while another trueup holds the ledger).
func OpenTargets(ctx context.Context, cfg *config.Config, extra string) (*Project, error) {
	p := newProject(cfg)
	for _, name := range cfg.TargetNames() {
		url, _ := cfg.TargetURL(name)
		e, err := tsql.Open(ctx, url)
		if err != nil {
			p.Close()
			return nil, openError(name, url, err)
		}
		p.Targets[name] = e
		p.Names = append(p.Names, name)
	}
	if extra != "" {
		if _, err := p.OpenTarget(ctx, extra); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// Engine returns a target by name (or the default one for ""), or by a URL that OpenTarget has
// opened.
func (p *Project) Engine(name string) (tsql.Engine, error) {
	if name == "" {
		name = p.Config.DefaultTarget
	}
	if e, ok := p.Targets[name]; ok {
		return e, nil
	}
	return nil, fault.New(fault.Invalid, "unknown target %q (the config has %v)", name, p.Names)
}

// OpenTarget returns a target by name, or by URL (duckdb:PATH, clickhouse://host:port/db): the
// configured target with that URL, else the engine at the URL, opened once and closed with the
// project. Either way it is found under that URL afterwards too (Engine, the targets rules run
// on), so a URL works wherever a target name does.
func (p *Project) OpenTarget(ctx context.Context, name string) (tsql.Engine, error) {
	if e, err := p.Engine(name); err == nil || !tsql.IsURL(name) {
		return e, err
	}
	for _, n := range p.Names {
		if u, _ := p.Config.TargetURL(n); sameTarget(u, name) {
			p.Targets[name] = p.Targets[n]
			return p.Targets[n], nil
		}
	}
	e, err := tsql.Open(ctx, name)
	if err != nil {
		return nil, openError(tsql.Redact(name), name, err)
	}
	p.Targets[name] = e
	return e, nil
}

// Name is the name a target is shown by: the default one's for "".
func (p *Project) Name(target string) string {
	if target == "" {
		return p.Config.DefaultTarget
	}
	return target
}

// Wait returns when the work the project's services started in the background (rules rerun
// after a swap) has ended.
func (p *Project) Wait() { p.background.Wait() }

// Close stops the background work and waits for it, then closes every engine once, then the
// ledger.
func (p *Project) Close() {
	p.bgStop()
	p.Wait()
	closed := map[tsql.Engine]bool{}
	for _, e := range p.Targets {
		if !closed[e] {
			closed[e] = true
			e.Close()
		}
	}
	if p.Ledger != nil {
		p.Ledger.Close()
	}
}

// sameTarget reports whether two target URLs name the same engine: a DuckDB file by its
// absolute path (one process owns a DuckDB file, so it must not be opened twice).
func sameTarget(a, b string) bool {
	abs := func(u string) string {
		if p, rest, ok := tsql.DuckDBFile(u); ok {
			if ap, err := filepath.Abs(p); err == nil {
				return "duckdb:" + ap + rest
			}
		}
		return u
	}
	return a == b || abs(a) == abs(b)
}

// openError is the failure to open target name (at url) for the user: invalid, and named once —
// an engine's open error already begins with the target's (redacted) URL.
func openError(name, url string, err error) error {
	if strings.HasPrefix(err.Error(), tsql.Redact(url)+":") && name == tsql.Redact(url) {
		return fault.New(fault.Invalid, "%v", err)
	}
	return fault.New(fault.Invalid, "target %s: %v", name, err)
}
