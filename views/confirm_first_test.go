package views_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"trueup/fault"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// stallingEngine holds every query once armed, as if the process stopped there. It wraps the
// engine and so hides a DuckDB engine's NotedRepointer: the swap takes the intent path, as on
// ClickHouse, on both engines (on DuckDB the check is inside the repoint's transaction and there
// is no intent to write too early: TestRepointNoted, TestRecoverFromNotes).
type stallingEngine struct {
	tsql.Engine
	mu      sync.Mutex
	armed   bool
	stalled chan struct{} // closed when a query is held
	release chan struct{}
}

func (s *stallingEngine) Query(ctx context.Context, q string, args ...any) (*tsql.Result, error) {
	s.mu.Lock()
	armed := s.armed
	if armed {
		s.armed = false
		close(s.stalled)
	}
	s.mu.Unlock()
	if armed {
		<-s.release
	}
	return s.Engine.Query(ctx, q, args...)
}

// TestNoIntentBeforeTheEngineConfirms: a swap records its intent only after the engine's
// catalog confirmed its plan. A process that stops while reading the catalog — here for a swap
// the engine refuses, the view having been pointed at v2 outside trueup — leaves nothing that
// start-up recovery would carry out or record as published.
func TestNoIntentBeforeTheEngineConfirms(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		warehouse(t, e, 50)
		l := ledgertest.Open(t)
		stall := &stallingEngine{Engine: e, stalled: make(chan struct{}), release: make(chan struct{})}
		s := views.New("w", stall, l)
		record(t, s, "orders", 2, views.StateValidated, 0)
		if _, err := s.Versions(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		pointView(t, e, "orders", 2) // behind trueup's back

		stall.mu.Lock()
		stall.armed = true
		stall.mu.Unlock()
		done := make(chan error, 1)
		go func() {
			_, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
			done <- err
		}()
		select {
		case <-stall.stalled:
		case <-time.After(10 * time.Second):
			t.Fatal("the swap never read the engine")
		}
		time.Sleep(200 * time.Millisecond) // time for anything written alongside to commit

		// the process "restarts": a new service on the same ledger recovers
		if _, err := views.New("w", e, l).Recover(ctx); err != nil {
			t.Errorf("recover: %v", err)
		}
		ps, err := views.New("w", e, l).History(ctx, "orders", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			t.Errorf("recovery settled a publish nobody confirmed: %s %s: %s", p.Kind, p.State, p.Summary())
		}

		close(stall.release)
		if err := <-done; !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "already live") {
			t.Errorf("the stalled swap: %v, want a refusal (v2 is already live)", err)
		}
	})
}
