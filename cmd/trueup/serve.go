package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"trueup/backfill"
	"trueup/config"
	"trueup/monitor"
	"trueup/notices"
	"trueup/ops"
	"trueup/reconcile"
	"trueup/rules"
	"trueup/server"
	"trueup/sqlfile"
)

func runServe(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	addr := fs.String("addr", "", "listen address (default from the config, else 127.0.0.1:8080)")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	return listenAndServe(ctx, e, *addr)
}

// listenAndServe serves the project of e's config on addr (else the config's address): the
// address is bound first, so a busy port fails before anything is opened or written. Each of also
// runs once the project is open, before anything is served (the demo starts its pipeline there).
func listenAndServe(ctx context.Context, e *env, addr string, also ...func(context.Context, *app) error) error {
	cfg, err := loadConfig(e.globals)
	if err != nil {
		return err
	}
	ln, err := listen(ctx, cfg, addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	a, err := openConfigured(ctx, e.globals, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	for _, f := range also {
		if err := f(ctx, a); err != nil {
			return err
		}
	}
	return serve(ctx, e, a, ln)
}

// listen binds the address serve is to listen on (--addr, else the config's), before anything
// is opened: a port another process holds fails here, with nothing written to the ledger.
// Without tokens only a loopback address is bound.
func listen(ctx context.Context, cfg *config.Config, addr string) (net.Listener, error) {
	if addr == "" {
		addr = cfg.Server.Addr
	}
	if len(cfg.Auth.Tokens) == 0 {
		if err := loopbackOnly(addr); err != nil {
			return nil, err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		cause := err.Error()
		var se *os.SyscallError
		if errors.As(err, &se) {
			cause = se.Err.Error()
		}
		return nil, usagef("serve: cannot listen on %s: %s", addr, cause)
	}
	return ln, nil
}

// noTokensNotice is the banner of a server without tokens: the demo, or a project that has not
// set up auth yet.
const noTokensNotice = "No API tokens are configured: trueup listens on loopback only and every visitor is treated as the local operator."

// readCache is how long an answer to a page read is shared with identical reads (see
// server.Options.ReadCache): what changes on its own shows at most this late.
const readCache = 500 * time.Millisecond

// serve runs the HTTP server for an open project on ln (see listen) until ctx ends.
func serve(ctx context.Context, e *env, a *app, ln net.Listener) error {
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	p, err := openServed(ctx, e, a, ln.Addr().String(), log)
	if err != nil {
		return err
	}
	defer p.close()
	reloadOnHangup(ctx, e, a, p, log)
	run := func(ctx context.Context) error {
		return runBeside(ctx, p.schedules, func(ctx context.Context) error { return p.srv.Serve(ctx, ln) })
	}
	return runWithMonitor(ctx, p.mon, func(ctx context.Context) error { return runWithOutbox(ctx, p.ntc, run) })
}

// runBeside runs bg beside fg until fg returns, then stops bg and waits for it; the error is
// fg's, else bg's. A nil bg runs fg alone.
func runBeside(ctx context.Context, bg, fg func(context.Context) error) error {
	if bg == nil {
		return fg(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- bg(ctx) }()
	err := fg(ctx)
	cancel()
	if berr := <-done; err == nil {
		err = berr
	}
	return err
}

// served is a project wired for serving: the HTTP server, and the monitor and notices outbox
// that run beside it.
type served struct {
	srv   *server.Server
	mon   *monitor.Monitor
	ntc   *notices.Service
	close func()
	// schedules runs the backfills with a schedule: header as the pipeline (nil: none)
	schedules func(context.Context) error
	backfills *backfill.Service // nil: the project has no backfills/
}

// openServed wires the project's services into a server listening on addr (not yet running).
func openServed(ctx context.Context, e *env, a *app, addr string, log *slog.Logger) (*served, error) {
	var targets []server.Target
	for _, name := range a.Names {
		targets = append(targets, server.Target{Name: name, Engine: a.Targets[name]})
	}
	ntc, err := openNotices(ctx, e, a, log)
	if err != nil {
		return nil, err
	}
	// a rule's alerts go to the subscribers of its table, through the notices outbox: every
	// alert not handed on yet, at start-up and after each run, whichever process raised it
	mon, err := openMonitor(ctx, e, a, ntc.Outbox(), log)
	if err != nil {
		return nil, err
	}
	tables, services, err := openTables(ctx, a, ntc, mon, log)
	if err != nil {
		return nil, err
	}
	p := &served{mon: mon, ntc: ntc, close: func() {}}
	opts := server.Options{
		Addr:    addr,
		Logger:  log,
		Targets: targets,
		// A request that names no target uses the config's default, as the CLI does.
		DefaultTarget: a.Config.DefaultTarget,
		Version:       version,
		Rules:         mon,
		Notices:       ntc,
		NoticeOps:     ops.NewNotices(ntc),
		Tables:        tables,
		Queries:       ops.NewQueries(services, a.Config.DefaultTarget, ntc.Exposures()),
		Auth:          a.Config.Auth,
		Audit:         a.Ledger,
		// Many people on the same page share one build of it for half a second.
		ReadCache:   readCache,
		Diffs:       reconcile.NewStore(a.Ledger),
		DiffOptions: []ops.DiffOption{ops.WithFingerprints(a.Ledger)},
	}
	if dirExists(a.Config.ProjectDir("backfills")) {
		r, err := newBackfillRunner(ctx, e, a, ntc, log)
		if err != nil {
			return nil, err
		}
		bf := &backfill.Service{Runner: r, Log: log}
		p.close, p.backfills = bf.Close, bf
		p.schedules = func(ctx context.Context) error {
			return r.RunSchedules(ctx, monitor.WallClock(), func(sr backfill.ScheduledRun) {
				if sr.Err != nil {
					log.Error("scheduled pipeline run failed", "backfill", sr.Backfill, "slot", sr.Slot, "err", sr.Err)
					return
				}
				log.Info("scheduled pipeline run", "backfill", sr.Backfill, "slot", sr.Slot, "run", sr.Run.RunID, "windows", strings.Join(sr.Run.Windows, ","))
			})
		}
		opts.Backfills = ops.NewBackfills(bf)
	}
	if len(a.Config.Auth.Tokens) == 0 {
		opts.Notice = noTokensNotice
	}
	p.srv = server.New(opts)
	return p, nil
}

// reloadOnHangup reloads the rule set and the backfill files whenever the process gets SIGHUP
// (`kill -HUP`, or what a deploy runs after changing rules/ or backfills/), until ctx ends.
func reloadOnHangup(ctx context.Context, e *env, a *app, p *served, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reloadRules(ctx, e, a, p.mon, log)
				if p.backfills != nil {
					reloadBackfills(ctx, e, a, p.backfills, log)
				}
			}
		}
	}()
}

// reloadRules loads and validates the project's rules again and hands them to the monitor. A
// set with problems is refused as serve refuses it at start-up, each problem on stderr, and the
// running set stays.
func reloadRules(ctx context.Context, e *env, a *app, mon *monitor.Monitor, log *slog.Logger) {
	var set []*rules.Rule
	if dir := a.Config.ProjectDir("rules"); dirExists(dir) {
		loaded, err := loadRulesFor(ctx, e, "reload", dir, projectTargets(e, a))
		if err != nil {
			log.Error("rules not reloaded; the running rules stay", "err", err)
			return
		}
		set = loaded.Rules
	}
	if err := mon.Replace(ctx, set); err != nil {
		log.Error("rules not reloaded; the running rules stay", "err", err)
		return
	}
	log.Info("rules reloaded", "rules", len(set))
}

// reloadBackfills loads and checks the project's backfill files again, as serve does at
// start-up, and hands them to the backfill service with the rules their validations run. Files
// with problems are refused, each problem on stderr as path:line: message, and so is a reload
// while a run is building; the running files stay.
func reloadBackfills(ctx context.Context, e *env, a *app, bf *backfill.Service, log *slog.Logger) {
	set, rs, err := a.ReloadBackfills(ctx, e.globals.target)
	var ps sqlfile.Problems
	if errors.As(err, &ps) {
		for _, p := range ps {
			fmt.Fprintln(e.stderr, p)
		}
		err = fmt.Errorf("%d %s in the backfill files", len(ps), pluralWord(len(ps), "problem", "problems"))
	}
	if err == nil {
		err = bf.Reload(set, rs)
	}
	if err != nil {
		log.Error("backfills not reloaded; the running backfill files stay", "err", err)
		return
	}
	log.Info("backfills reloaded", "backfills", len(set.All()))
}
