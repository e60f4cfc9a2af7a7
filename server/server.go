// Package server is trueup's HTTP face: the pages, the JSON API under /api/v1/, health and
// readiness probes and Prometheus metrics. Handlers are thin: they ask the packages below for
// data, fill a view model from server/page and render it. One handler per file, noun_verb.go.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"trueup/config"
	"trueup/ops"
	tsql "trueup/sql"
)

// DefaultAddr is where the server listens when Options.Addr is empty: loopback only, so nothing
// is exposed to the network until someone asks for it.
const DefaultAddr = "127.0.0.1:8080"

// shutdownTimeout bounds how long Run waits for in-flight requests once its context ends.
const shutdownTimeout = 10 * time.Second

// Target is a named engine connection the server reports on.
type Target struct {
	Name   string
	Engine tsql.Engine
}

// Options configure a Server.
type Options struct {
	Addr    string // host:port; default 127.0.0.1:8080; port 0 picks a free port (see Addr)
	Logger  *slog.Logger
	Targets []Target
	// DefaultTarget is the target a request that names none uses (the config's default).
	DefaultTarget string
	Version       string        // trueup build version shown in the footer
	Notice        string        // optional banner shown on every page
	Rules         RuleService   // the rules, their monitor and history; nil shows no rules
	Notices       NoticeService // what the notice pages, feed and acknowledgements read; nil answers 404
	// Tables swaps, rolls back and lists versions of logical tables; nil answers 404 on the
	// versions pages.
	Tables ops.Tables
	// Queries reads logical tables at versions or as of a time (the query page and API); nil
	// answers 404.
	Queries ops.Queries
	// NoticeOps lists, shows, edits, announces, withdraws and completes change notices and
	// delivers their messages (the notice API and the operator's forms); nil answers 404.
	NoticeOps ops.Notices
	// Backfills plans, previews and runs backfills; nil answers 404.
	Backfills ops.Backfills
	// Diffs keeps reconcile results for the diff pages and API; nil answers 404.
	Diffs DiffService
	// DiffOptions configure the diffs the API runs (ops.WithFingerprints), as a local diff's.
	DiffOptions []ops.DiffOption
	// Auth says who may do what. With no tokens every visitor is the local operator with every
	// right, and the server answers only requests addressed to a loopback name.
	Auth config.Auth
	// Audit is the audit log the audit page lists and logins are recorded in; nil answers 404.
	Audit AuditLog
	// Now is the clock sessions and the login rate limit read; nil is time.Now.
	Now func() time.Time
	// ReadCache lets identical page reads share an answer for this long after it was built,
	// not only while it is being built (see coalesce.go); writes through the server are seen
	// at once. 0: share only reads in flight.
	ReadCache time.Duration
}

// Server serves trueup over HTTP. Build it with New; serve with Run or mount Handler.
type Server struct {
	opt     Options
	log     *slog.Logger
	echo    *echo.Echo
	metrics *metrics
	assets  *assets

	// routes holds "METHOD path" of every registered route, to tell a matched route from a
	// 404 when labelling metrics.
	routes map[string]bool

	tokens      []tokenEntry
	sessions    *sessions
	logins      *loginLimiter
	subscribes  *loginLimiter // subscribe requests per client (subscription.go)
	csrfKey     []byte
	crossOrigin *http.CrossOriginProtection
	flights     flights

	rules ops.Rules // over Options.Rules
	diffs ops.Diffs // over Options.Diffs and the targets; nil without Options.Diffs

	mu        sync.Mutex
	addr      string
	listening chan struct{}
	bound     sync.Once
}

// New builds a server with every route registered. It does no I/O.
func New(opt Options) *Server {
	if opt.Addr == "" {
		opt.Addr = DefaultAddr
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Auth.FourEyes && opt.Tables != nil {
		var approvers []string
		for _, t := range opt.Auth.Tokens {
			if t.Role == config.RoleApprover {
				approvers = append(approvers, t.Name)
			}
		}
		opt.Tables = ops.FourEyes(opt.Tables, approvers)
	}
	s := &Server{
		opt:         opt,
		log:         opt.Logger,
		metrics:     newMetrics(opt.Version),
		assets:      loadAssets(),
		routes:      map[string]bool{},
		listening:   make(chan struct{}),
		tokens:      newTokens(opt.Auth.Tokens),
		sessions:    newSessions(opt.Now),
		logins:      newLoginLimiter(opt.Now),
		subscribes:  newWindowLimiter(opt.Now, subscribeBurst, subscribeWindow),
		csrfKey:     []byte(newSecret()),
		crossOrigin: http.NewCrossOriginProtection(),
	}
	s.rules = ops.NewRules(opt.Rules)
	if opt.Diffs != nil {
		targets := make([]ops.Target, len(opt.Targets))
		for i, t := range opt.Targets {
			targets[i] = ops.Target{Name: t.Name, Engine: t.Engine}
		}
		s.diffs = ops.NewDiffs(opt.Diffs, ops.NamedTargets(targets, opt.DefaultTarget), opt.DiffOptions...)
	}
	s.metrics.reg.MustRegister(ruleCollector{opt.Rules})
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	// The peer's own address: a client cannot pick its login rate-limit bucket by sending
	// X-Forwarded-For.
	e.IPExtractor = echo.ExtractIPDirect()
	// Outermost first: the request log and the metrics see the status the error handler chose;
	// every response, refusals included, carries the security headers; who the request acts as
	// is known before the CSRF check and the role check read it; identical reads in flight at
	// once are answered once. Path parameters are unescaped before anything reads them. A
	// write's query is checked once its caller may make it, before anything is done.
	e.Use(unescapeParams, s.logRequests, s.countRequests, s.recoverErrors, s.secure, s.loopbackHost, s.authenticate, s.checkCSRF, s.authorize, s.checkWriteQuery, s.coalesce)
	s.registerRoutes(e)
	for _, r := range e.Routes() {
		s.routes[r.Method+" "+r.Path] = true
	}
	if missing := s.unlistedWrites(); len(missing) > 0 {
		s.log.Warn("write routes with no role in writeRoles: only approvers may use them", "routes", missing)
	}
	s.echo = e
	return s
}

// Handler returns the server's http.Handler, e.g. for httptest.
func (s *Server) Handler() http.Handler { return s.echo }

// Addr returns the address Run is listening on (with the real port when Options.Addr asked for
// port 0), or "" before it has bound.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Listening is closed once Run has bound its address; Addr is valid from then on.
func (s *Server) Listening() <-chan struct{} { return s.listening }

// Run listens on Options.Addr and serves until ctx is cancelled, as Serve does.
func (s *Server) Run(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.opt.Addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", s.opt.Addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln (bound already: `trueup serve` binds before it opens anything, so a busy
// port fails before the ledger is touched) until ctx is cancelled, then shuts down gracefully:
// it stops accepting connections and waits up to 10 s for in-flight requests. It returns nil
// after a clean shutdown, and closes ln. Serve or Run is meant to be called once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	addr := ln.Addr().String()
	s.mu.Lock()
	s.addr = addr
	s.mu.Unlock()
	s.bound.Do(func() { close(s.listening) })

	// A slow or stalled client cannot hold a connection for long. Writes get minutes: a dry run
	// or a rule run answers when it is done.
	srv := &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      5 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.log.Info("listening", "url", "http://"+addr+"/")
	if !loopback(addr) {
		s.log.Warn("listening beyond loopback: anyone who can reach this address can use the server", "addr", addr)
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("server: serve: %w", err)
	case <-ctx.Done():
	}

	s.log.Info("shutting down", "timeout", shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("server: shutdown: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("server: serve: %w", err)
	}
	s.log.Info("stopped")
	return nil
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
