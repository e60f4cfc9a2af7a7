package views

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"trueup/ledger"
)

// tableLocks are the in-process locks of one target's tables. They are kept on the open ledger
// (ledger.Shared), not in the package: every Service on the same ledger and target takes the
// same ones, whoever made it, and they go with the ledger. A lock's entry goes when it is given
// back, so held names only the tables being worked on.
type tableLocks struct {
	mu   sync.Mutex
	held map[string]*holder
	// released counts the locks given back: reads made before taking a lock still hold after
	// it when no holder finished meanwhile.
	released uint64
}

// locksKey keys a target's tableLocks on the ledger.
type locksKey struct{ target string }

// locksOf returns the locks of target's tables for the open ledger l, the same for every Service
// on it: a DuckDB ledger file is open in one process only, so these are all the locks there are.
func locksOf(l *ledger.Ledger, target string) *tableLocks {
	return l.Shared(locksKey{target}, func() any { return &tableLocks{held: map[string]*holder{}} }).(*tableLocks)
}

// holder is who holds a table in this process.
type holder struct {
	actor  string
	kind   string
	since  time.Time
	swapID atomic.Int64 // the ledger intent of the publish, once recorded, for conflict messages
	// kept: the views moved but the ledger could not record it (keepHeld); the tables stay
	// held until a restart lets recovery record it.
	kept bool
	// hooked: the AfterIntent hook ran for this publish (once, though it may be tried twice).
	hooked bool
}

// lock takes every table or none, without waiting: one swap, rollback or retirement per logical
// table at a time, across every Service of the process on the same ledger and target (locksOf).
// An intent's view_locks rows record the same in the ledger, for recovery and for the pages.
//
// A writer inside trueup (Hold: trueup run) holds a table only while it writes a few partitions:
// a publish waits for it, up to writerWait, rather than being refused.
func (s *Service) lock(tables []string, actor, kind string) (*holder, func(), error) {
	for deadline := time.Now().Add(writerWait); ; time.Sleep(20 * time.Millisecond) {
		h, unlock, err := s.tryLock(tables, actor, kind)
		var ce *ConflictError
		if err == nil || !errors.As(err, &ce) || ce.Kind != kindWrite || time.Now().After(deadline) {
			return h, unlock, err
		}
	}
}

// writerWait bounds how long a publish waits for a writer holding its tables (see lock).
const writerWait = 30 * time.Second

// kindWrite is the holder kind of a writer inside trueup (Hold).
const kindWrite = "write"

// tryLock is lock without waiting.
func (s *Service) tryLock(tables []string, actor, kind string) (*holder, func(), error) {
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

// claim is what a swap or rollback notes before it reads what it plans from, so that it takes its
// tables' locks only once it knows them: how many locks had been given back by then, and the
// ledger's lock rows, read meanwhile.
type claim struct {
	s        *Service
	released uint64
	held     func(tables []string) error
}

// claim starts a claim (see claim).
func (s *Service) claim(ctx context.Context) claim {
	return claim{s: s, released: s.releases(), held: s.recordedHolders(ctx)}
}

// lock takes tables for actor (lock), unless a lock row of the ledger holds one of them. fresh
// is false when a holder gave tables back since the claim: what was read before may be stale.
func (c claim) lock(tables []string, actor, kind string) (h *holder, unlock func(), fresh bool, err error) {
	h, unlock, err = c.s.lock(tables, actor, kind)
	if err != nil {
		return nil, nil, false, err
	}
	if err := c.held(tables); err != nil {
		unlock()
		return nil, nil, false, err
	}
	return h, unlock, c.s.releases() == c.released, nil
}

// releases is how many locks have been given back so far (see released).
func (s *Service) releases() uint64 {
	s.locks.mu.Lock()
	defer s.locks.mu.Unlock()
	return s.locks.released
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
	return &ConflictError{Table: table, Holder: h.actor, Kind: h.kind, SwapID: h.swapID.Load(), Since: h.since, Recorded: h.kept}
}

// keepHeld keeps h's tables held when its unlock runs: the views moved and the ledger could not
// record it, so nothing may move them again, nor repair the ledger from them, before recovery
// (at the next start-up) records the publish from the views' notes.
func (s *Service) keepHeld(h *holder) {
	s.locks.mu.Lock()
	h.kept = true
	s.locks.mu.Unlock()
}

// ledgerHolder reads the ledger lock row of one of tables, if any: an intent of another Service
// on this ledger, or one a crash left that recovery could not settle yet.
func (s *Service) ledgerHolder(ctx context.Context, tables ...string) (*ConflictError, error) {
	err := s.recordedHolders(ctx)(tables)
	if c, ok := errors.AsType[*ConflictError](err); ok {
		return c, nil
	}
	return nil, err
}

// recordedHolders starts reading the ledger's lock rows of the target, while the caller reads
// something else. The function it returns waits for them and returns the first that holds one of
// tables as a *ConflictError. A publish that records no intent (noted) takes no lock row,
// but one may be there — an intent a crash left that recovery could not settle — and holds.
func (s *Service) recordedHolders(ctx context.Context) func(tables []string) error {
	var rows []*ConflictError
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		var st *dbsql.Stmt
		if st, err = s.ledger.Prepared(ctx, `SELECT table_name, holder, kind, swap_id, since FROM view_locks
			WHERE target = ?`); err != nil {
			return
		}
		var rs *dbsql.Rows
		if rs, err = st.QueryContext(ctx, s.target); err != nil {
			return
		}
		rows, err = ledger.Collect(rs, func(r ledger.Scanner) (*ConflictError, error) {
			c := &ConflictError{Recorded: true}
			return c, r.Scan(&c.Table, &c.Holder, &c.Kind, &c.SwapID, &c.Since)
		})
	}()
	return func(tables []string) error {
		<-done
		if err != nil {
			return fmt.Errorf("views: read the ledger's locks: %w", err)
		}
		for _, t := range tables { // the first of tables that is held, whatever order the rows came in
			for _, c := range rows {
				if c.Table == t {
					return c
				}
			}
		}
		return nil
	}
}
