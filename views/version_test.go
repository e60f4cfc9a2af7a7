package views_test

import (
	"context"
	dbsql "database/sql"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"trueup/fault"

	"trueup/ledger/ledgertest"
	"trueup/views"
)

func TestStore(t *testing.T) {
	ctx := context.Background()
	l := ledgertest.Open(t)
	s := views.Store{L: l}
	if n, _ := s.NextNumber(ctx, "w", "orders", []int{1}); n != 2 {
		t.Errorf("next number with v1 in the engine: %d", n)
	}
	v := views.Version{Target: "w", Table: "orders", N: 2, State: views.StateBuilding, BuiltBy: "ann", Backfill: "fix", RunID: 7}
	if err := s.Put(ctx, v); err != nil {
		t.Fatal(err)
	}
	v.State, v.Rows, v.Checksum, v.Validation = views.StateValidated, 10, "123", json.RawMessage(`{"rules":"pass"}`)
	if err := s.Put(ctx, v); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "w", "orders", 2)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != views.StateValidated || got.Rows != 10 || string(got.Validation) != `{"rules":"pass"}` || got.Physical() != "orders__v2" {
		t.Errorf("got %+v", got)
	}
	if n, _ := s.NextNumber(ctx, "w", "orders", []int{1}); n != 3 {
		t.Errorf("next number after v2: %d", n)
	}
	if _, err := s.Get(ctx, "w", "orders", 9); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("missing version: %v", err)
	}
	list, _ := s.List(ctx, "w", "orders")
	if len(list) != 1 {
		t.Errorf("list: %v", list)
	}
}

// Add takes a version number once: a number already recorded is refused and its record kept,
// and inside a transaction the number goes with the transaction.
func TestVersionAddTakesANumberOnce(t *testing.T) {
	ctx := context.Background()
	l := ledgertest.Open(t)
	s := views.Store{L: l}
	ann := views.Version{Target: "w", Table: "daily_revenue", N: 2, State: views.StateBuilding, BuiltBy: "ann", Backfill: "daily_revenue", RunID: 1}
	if err := s.Add(ctx, l.DB(), ann); err != nil {
		t.Fatal(err)
	}

	t.Run("taken_number_is_refused", func(t *testing.T) {
		bob := ann
		bob.BuiltBy, bob.Backfill, bob.RunID = "bob", "fix_dedup_bug", 2
		err := s.Add(ctx, l.DB(), bob)
		if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "daily_revenue v2") {
			t.Errorf("adding daily_revenue v2 again: %v, want fault.ErrConflict naming daily_revenue v2", err)
		}
		if got, _ := s.Get(ctx, "w", "daily_revenue", 2); got.BuiltBy != "ann" || got.RunID != 1 {
			t.Errorf("daily_revenue v2 is now built by %s for run %d, want ann's run 1", got.BuiltBy, got.RunID)
		}
	})

	t.Run("rolled_back_number_is_free", func(t *testing.T) {
		v3 := ann
		v3.N = 3
		err := l.Tx(ctx, func(tx *dbsql.Tx) error {
			if err := s.Add(ctx, tx, v3); err != nil {
				return err
			}
			return errors.New("the run was not recorded")
		})
		if err == nil {
			t.Fatal("the transaction committed")
		}
		if _, err := s.Get(ctx, "w", "daily_revenue", 3); !errors.Is(err, fault.ErrNotFound) {
			t.Errorf("daily_revenue v3 after a rollback: %v, want not found", err)
		}
	})

	t.Run("number_taken_meanwhile_fails_the_commit", func(t *testing.T) {
		v4 := ann
		v4.N = 4
		err := l.Tx(ctx, func(tx *dbsql.Tx) error {
			if err := s.Add(ctx, tx, v4); err != nil {
				return err
			}
			other := v4
			other.BuiltBy, other.RunID = "bob", 2
			return s.Add(ctx, l.DB(), other)
		})
		if err == nil {
			t.Fatal("two records of daily_revenue v4 committed")
		}
		if got, _ := s.Get(ctx, "w", "daily_revenue", 4); got.BuiltBy != "bob" {
			t.Errorf("daily_revenue v4 is built by %q, want bob, who committed first", got.BuiltBy)
		}
	})
}
