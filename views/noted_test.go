package views_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// lateEngine repoints views with notes as DuckDB does, taking delay first, and then, when lose is
// set, reports an error although its commit landed (as when the answer to a commit is lost).
type lateEngine struct {
	tsql.Engine
	delay time.Duration
	lose  bool
}

func (e *lateEngine) RepointNoted(ctx context.Context, points []tsql.NotedPoint) error {
	time.Sleep(e.delay)
	if err := e.Engine.(tsql.NotedRepointer).RepointNoted(ctx, points); err != nil {
		return err
	}
	if e.lose {
		return errors.New("connection reset by peer")
	}
	return nil
}

// TestNotedOutcome: on DuckDB a swap whose repoint reports an error after its commit landed is
// recorded done (the notes tell), and a swap's recorded duration covers its repoint.
func TestNotedOutcome(t *testing.T) {
	ctx := context.Background()
	real := sqltest.Open(t, sqltest.DuckDBURL(t))
	warehouse(t, real, 100)
	e := &lateEngine{Engine: real, delay: 60 * time.Millisecond, lose: true}
	l := ledgertest.Open(t)
	s := views.New("w", e, l)
	validatedRun(t, s)

	p, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann", Reason: "the fix"})
	if err != nil || p.State != views.PublishDone {
		t.Fatalf("swap whose commit landed: %+v, %v", p, err)
	}
	h, _ := s.History(ctx, "orders", 0)
	if len(h) != 1 || h[0].ID != p.ID || h[0].State != views.PublishDone || h[0].Actor != "ann" {
		t.Fatalf("history: %+v", h)
	}
	if got := states(t, s, "daily_revenue"); got["v2"] != views.StateLive || got["v1"] != views.StatePrevious {
		t.Errorf("daily_revenue states: %v", got)
	}
	if d := h[0].Duration(); d < e.delay {
		t.Errorf("recorded duration %v, shorter than the repoint's %v", d, e.delay)
	}
	var logged bool
	for _, a := range audit(t, l) {
		if a.Action == "view.swap" {
			logged = true
			if ms, _ := a.Params["duration_ms"].(float64); ms < float64(e.delay.Milliseconds()) {
				t.Errorf("audited duration %v ms, shorter than the repoint's %v", ms, e.delay)
			}
		}
	}
	if !logged {
		t.Error("the swap was not audited")
	}
	// The tables are free again and the ledger agrees with the views: a rollback goes through.
	e.lose = false
	if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"}); err != nil {
		t.Errorf("rollback after: %v", err)
	}
}
