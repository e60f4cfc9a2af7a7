package views

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"trueup/fault"

	"trueup/ledger"
	tsql "trueup/sql"
)

// The views' errors are of the kinds of package fault: a version that does not exist is
// NotFound; a swap, rollback or retirement another one holds a table of is Conflict (a
// *ConflictError naming the holder), as is a stale confirmation (Stale); a swap the gate
// refused (a validation did not pass, no approver override) is Failed; a request that cannot
// be carried out as asked (a retired or unfinished version, another table's version, nothing to
// roll back) is Invalid. Nothing was changed by any of them.

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

// Is makes errors.Is(err, fault.ErrConflict) true.
func (e *ConflictError) Is(target error) bool {
	return target == fault.ErrConflict || errors.Is(fault.ErrConflict, target)
}

// Listener hears about publishes after their outcome is recorded: notices implement it to
// complete or withdraw the notices of a backfill, and say which notices they moved (the publish
// reports them). An error is logged and audited; the swap or rollback it reports on has
// happened all the same.
type Listener interface {
	Published(ctx context.Context, p Publish) ([]NoticeMove, error)
	// RolledBack reports a rollback p, which took back the swap p.Undoes.
	RolledBack(ctx context.Context, p Publish, reason string) ([]NoticeMove, error)
}

// Foreseer is a Listener that can say, before a publish, what hearing of it will do: the change
// notices it will move. The confirmation step and the dry runs show it (Plan.Notices); the
// listener decides it by the same reckoning when it hears of the publish, so what was shown is
// what happens.
type Foreseer interface {
	Foresee(ctx context.Context, p Publish) ([]NoticeMove, error)
}

// NoticeMove is one change notice a publish moves: from the state it is in to the one it takes.
type NoticeMove struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
	From  string `json:"from"`
	To    string `json:"to"`
}

func (m NoticeMove) String() string {
	return fmt.Sprintf("notice %d %q (%s) becomes %s", m.ID, m.Title, m.From, m.To)
}

// Done says the move was made: `notice 1 "…": draft → completed`.
func (m NoticeMove) Done() string {
	return fmt.Sprintf("notice %d %q: %s → %s", m.ID, m.Title, m.From, m.To)
}

// Hooks run at the moments a crash is most interesting. They exist for tests that kill the
// process there; production code leaves them nil.
type Hooks struct {
	AfterCarry   func(p Publish) // ClickHouse: what live gained is carried into the versions p makes live, no intent yet
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

	locks    *tableLocks
	strategy strategy // how the engine carries out a publish: noted or intentFirst
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
	s.strategy = strategyOf(s)
	return s
}

// Target is the name of the service's target.
func (s *Service) Target() string { return s.target }

// Engine is the target's engine.
func (s *Service) Engine() tsql.Engine { return s.engine }

// Store is the version records of the ledger.
func (s *Service) Store() Store { return s.store }

// refusal is a refused request: its message is meant for the operator as it is (no package
// prefix: the edges show it unchanged), and it matches its sentinel with errors.Is.
type refusal struct {
	msg  string
	kind error
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.kind }

// refusef is a refusal of the request itself: a name, a time or a table trueup cannot take
// (bad input, exit 2 and 422).
func refusef(format string, args ...any) error {
	return &refusal{fmt.Sprintf(format, args...), fault.ErrInvalid}
}

// conflictf is a refusal because the table is already in the state asked for (or not in the one
// a request needs): a conflict, exit 1 and 409, as for every "already in that state".
func conflictf(format string, args ...any) error {
	return &refusal{fmt.Sprintf(format, args...), fault.ErrConflict}
}

func notFoundf(format string, args ...any) error {
	return &refusal{fmt.Sprintf(format, args...), fault.ErrNotFound}
}
