package views_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// blindEngine repoints the views and then reports an error, as when the answer to the repoint
// is lost, and from then on cannot be read (the connection is gone). It wraps the engine and so
// hides a DuckDB engine's NotedRepointer: the swap takes the intent, repoint, outcome path of
// ClickHouse on both engines.
type blindEngine struct {
	tsql.Engine
	mu    sync.Mutex
	armed bool // the next RepointViews loses its answer
	blind bool
}

func (e *blindEngine) RepointViews(ctx context.Context, points []tsql.ViewPoint) error {
	if err := e.Engine.RepointViews(ctx, points); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.armed {
		e.blind = true
		return errors.New("read tcp: connection reset by peer")
	}
	return nil
}

func (e *blindEngine) Query(ctx context.Context, q string, args ...any) (*tsql.Result, error) {
	e.mu.Lock()
	blind := e.blind
	e.mu.Unlock()
	if blind {
		return nil, errors.New("dial tcp: connection refused")
	}
	return e.Engine.Query(ctx, q, args...)
}

// TestRepointAnswerLostKeepsTheIntent: when the repoint reports an error and the views cannot be
// read back, nobody knows whether they moved. The publish stays an intent with its tables held (a
// second swap or rollback is refused, naming the first); after a restart recovery reads the views
// and records it done, so the ledger and the views agree and the swap can be rolled back.
func TestRepointAnswerLostKeepsTheIntent(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, real tsql.Engine) {
		ctx := context.Background()
		warehouse(t, real, 50)
		makeVersion(t, real, "orders", 3, 50, 3)
		path := filepath.Join(t.TempDir(), "state.duckdb")
		l := ledgertest.OpenAt(t, path)
		e := &blindEngine{Engine: real}
		s := views.New("w", e, l)
		validatedRun(t, s)
		record(t, s, "orders", 3, views.StateValidated, 0)

		e.armed = true
		_, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann", Reason: "the fix"})
		if err == nil || !strings.Contains(err.Error(), "stay held") {
			t.Fatalf("swap whose answer was lost: %v, want an error saying the tables stay held", err)
		}
		for _, table := range []string{"orders", "daily_revenue"} {
			if src := source(t, real, table); src != views.Physical(table, 2) {
				t.Fatalf("%s reads %s, want v2 (the views did move)", table, src)
			}
		}
		h, err := s.History(ctx, "orders", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 1 || h[0].State != views.PublishIntent {
			t.Fatalf("history: %+v, want the swap still an intent (not failed: the views moved)", h)
		}
		_, err = views.New("w", real, l).Swap(ctx, views.SwapRequest{Table: "orders", To: "v3", Actor: "bob"})
		var ce *views.ConflictError
		if !errors.As(err, &ce) || ce.Holder != "ann" {
			t.Fatalf("second swap while the first is unsettled: %v, want a conflict naming ann", err)
		}

		// Restart: a new process opens the ledger and recovers from the views.
		l.Close()
		l = ledgertest.OpenAt(t, path)
		s = views.New("w", real, l)
		if _, err := views.Recover(ctx, s); err != nil {
			t.Fatal(err)
		}
		h, _ = s.History(ctx, "orders", 0)
		if len(h) != 1 || h[0].State != views.PublishDone || h[0].Actor != "ann" {
			t.Fatalf("history after recovery: %+v, want the swap done by ann", h)
		}
		if got := states(t, s, "orders"); got["v2"] != views.StateLive || got["v1"] != views.StatePrevious {
			t.Errorf("orders states after recovery: %v", got)
		}
		if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"}); err != nil {
			t.Fatalf("rollback after recovery: %v", err)
		}
		for _, table := range []string{"orders", "daily_revenue"} {
			if src := source(t, real, table); src != views.Physical(table, 1) {
				t.Errorf("after the rollback %s reads %s, want v1", table, src)
			}
		}
	})
}
