package views

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
	"trueup/fault"

	"trueup/ledger"
	tsql "trueup/sql"
)

// Sentinel errors callers branch on. ErrNotFound (version.go) is a version that does not exist.
var (
	// ErrConflict is a swap, rollback or retirement refused because another one holds one of its
	// tables. The error is a *ConflictError naming the holder.
	ErrConflict = fault.Named(fault.Conflict, "conflict")
	// ErrValidationFailed is a swap refused by the gate: a version's validation did not pass and
	// no approver override was given.
	ErrValidationFailed = fault.Named(fault.Failed, "validation failed")
	// ErrRefused is a request that cannot be carried out as asked (a retired or unfinished
	// version, another table's version, nothing to roll back); nothing was changed.
	ErrRefused = fault.Named(fault.Invalid, "refused")
)

// ConflictError names who holds a logical table.
type ConflictError struct {
	Table  string
	Holder string // actor
	Kind   string // swap, rollback, retire, recover
	SwapID int64  // 0 before the intent is recorded, and for retirements
	Since  time.Time
	// Recorded is true when the holder is not at work in this process: a lock row in the ledger
	// (an intent a crash left that recovery has not settled), or a publish whose views moved and
	// whose outcome could not be recorded. A restart lets recovery settle it.
	Recorded bool
}

func (e *ConflictError) Error() string {
	op := e.Kind
	if e.SwapID != 0 {
		op = fmt.Sprintf("%s #%d", e.Kind, e.SwapID)
	}
	msg := fmt.Sprintf("%s is held by %s (%s, since %s): try again when it has finished",
		e.Table, e.Holder, op, e.Since.UTC().Format(time.RFC3339))
	if e.Recorded {
		msg += " (if no trueup is working on it, a restart lets recovery settle it)"
	}
	return msg
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool {
	return target == ErrConflict || errors.Is(ErrConflict, target)
}

// Listener hears about publishes after their outcome is recorded: notices implement it to
// complete or withdraw the notices of a backfill. An error is logged and audited; the swap or
// rollback it reports on has happened all the same.
type Listener interface {
	Published(ctx context.Context, p Publish) error
	// RolledBack reports a rollback p, which took back the swap p.Undoes.
	RolledBack(ctx context.Context, p Publish, reason string) error
}

// Hooks run at the moments a crash is most interesting. They exist for tests that kill the
// process there; production code leaves them nil.
type Hooks struct {
	AfterIntent  func(p Publish) // the tables are held, the intent is in the ledger (ClickHouse), the views are untouched
	AfterRepoint func(p Publish) // the views are repointed, the outcome is not recorded yet
	AfterOutcome func(p Publish) // the outcome is recorded, the listener has not heard of it yet
}

// Service swaps, rolls back and retires the versions of the logical tables of one target.
// Make one per target; the Services of one ledger and target share their table locks.
type Service struct {
	target     string
	engine     tsql.Engine
	ledger     *ledger.Ledger
	store      Store
	listener   Listener
	keep       int
	autoRetire bool
	hooks      Hooks
	log        *slog.Logger

	locks *tableLocks
}

// tableLocks are the in-process locks of one target's tables, shared by every Service on the
// same ledger and target (locksOf).
type tableLocks struct {
	mu   sync.Mutex
	held map[string]*holder
	// released counts the locks given back: reads made before taking a lock still hold after
	// it when no holder finished meanwhile.
	released uint64
}

var lockRegistry struct {
	mu sync.Mutex
	m  map[*ledger.Ledger]map[string]*tableLocks
}

// locksOf returns the locks of target's tables for the open ledger l, the same for every Service
// on it: a DuckDB ledger file is open in one process only, so these are all the locks there are.
func locksOf(l *ledger.Ledger, target string) *tableLocks {
	lockRegistry.mu.Lock()
	defer lockRegistry.mu.Unlock()
	if lockRegistry.m == nil {
		lockRegistry.m = map[*ledger.Ledger]map[string]*tableLocks{}
	}
	if lockRegistry.m[l] == nil {
		lockRegistry.m[l] = map[string]*tableLocks{}
	}
	if lockRegistry.m[l][target] == nil {
		lockRegistry.m[l][target] = &tableLocks{held: map[string]*holder{}}
	}
	return lockRegistry.m[l][target]
}

// Option configures New.
type Option func(*Service)

// WithListener tells l about every publish and rollback.
func WithListener(l Listener) Option { return func(s *Service) { s.listener = l } }

// WithRetention keeps keep versions of each table besides the live one and the rollback target
// (0 keeps everything); with auto, older ones are retired after each swap.
func WithRetention(keep int, auto bool) Option {
	return func(s *Service) { s.keep, s.autoRetire = keep, auto }
}

// WithHooks installs crash-test hooks.
func WithHooks(h Hooks) Option { return func(s *Service) { s.hooks = h } }

// WithLogger logs listener failures and recoveries to log (default slog.Default()).
func WithLogger(log *slog.Logger) Option { return func(s *Service) { s.log = log } }

// New returns the service for the target named target, served by engine e, recording in l.
func New(target string, e tsql.Engine, l *ledger.Ledger, opts ...Option) *Service {
	s := &Service{target: target, engine: e, ledger: l, store: Store{L: l}, log: slog.Default(), locks: locksOf(l, target)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Target is the name of the service's target.
func (s *Service) Target() string { return s.target }

// Engine is the target's engine.
func (s *Service) Engine() tsql.Engine { return s.engine }

// Store is the version records of the ledger.
func (s *Service) Store() Store { return s.store }

// holder is who holds a table in this process.
type holder struct {
	actor  string
	kind   string
	since  time.Time
	swapID int64
	// kept: the views moved but the ledger could not record it (keepHeld); the tables stay
	// held until a restart lets recovery record it.
	kept bool
	// hooked: the AfterIntent hook ran for this publish (once, though it may be tried twice).
	hooked bool
}

// lock takes every table or none, without waiting: one swap, rollback or retirement per logical
// table at a time, across every Service of the process on the same ledger and target (locksOf).
// An intent's view_locks rows record the same in the ledger, for recovery and for the pages.
func (s *Service) lock(tables []string, actor, kind string) (*holder, func(), error) {
	s.locks.mu.Lock()
	defer s.locks.mu.Unlock()
	for _, t := range tables {
		if h, ok := s.locks.held[t]; ok {
			return nil, nil, h.conflict(t)
		}
	}
	h := &holder{actor: actor, kind: kind, since: s.ledger.Now()}
	for _, t := range tables {
		s.locks.held[t] = h
	}
	tables = slices.Clone(tables)
	return h, func() {
		s.locks.mu.Lock()
		defer s.locks.mu.Unlock()
		if h.kept {
			return
		}
		freed := false
		for _, t := range tables {
			if s.locks.held[t] == h {
				delete(s.locks.held, t)
				freed = true
			}
		}
		if freed {
			s.locks.released++
		}
	}, nil
}

// releases is how many locks have been given back so far (see released).
func (s *Service) releases() uint64 {
	s.locks.mu.Lock()
	defer s.locks.mu.Unlock()
	return s.locks.released
}

// setSwapID names the ledger intent of a held lock, for conflict messages.
func (s *Service) setSwapID(h *holder, id int64) {
	s.locks.mu.Lock()
	h.swapID = id
	s.locks.mu.Unlock()
}

// Held reports who holds table in this process, if anyone.
func (s *Service) Held(table string) (*ConflictError, bool) {
	s.locks.mu.Lock()
	defer s.locks.mu.Unlock()
	h, ok := s.locks.held[table]
	if !ok {
		return nil, false
	}
	return h.conflict(table), true
}

// conflict is the error a request for table gets while h holds it.
func (h *holder) conflict(table string) *ConflictError {
	return &ConflictError{Table: table, Holder: h.actor, Kind: h.kind, SwapID: h.swapID, Since: h.since, Recorded: h.kept}
}

// keepHeld keeps h's tables held when its unlock runs: the views moved and the ledger could not
// record it, so nothing may move them again, nor repair the ledger from them, before recovery
// (at the next start-up) records the publish from the views' notes.
func (s *Service) keepHeld(h *holder) {
	s.locks.mu.Lock()
	h.kept = true
	s.locks.mu.Unlock()
}

// refusal is a refused request: its message is meant for the operator as it is (no package
// prefix: the edges show it unchanged), and it matches its sentinel with errors.Is.
type refusal struct {
	msg  string
	kind error
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.kind }

func refusef(format string, args ...any) error {
	return &refusal{fmt.Sprintf(format, args...), ErrRefused}
}

func notFoundf(format string, args ...any) error {
	return &refusal{fmt.Sprintf(format, args...), ErrNotFound}
}
