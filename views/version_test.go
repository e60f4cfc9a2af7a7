package views_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"trueup/ledger"
	"trueup/views"
)

func TestStore(t *testing.T) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
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
	if _, err := s.Get(ctx, "w", "orders", 9); !errors.Is(err, views.ErrNotFound) {
		t.Errorf("missing version: %v", err)
	}
	list, _ := s.List(ctx, "w", "orders")
	if len(list) != 1 {
		t.Errorf("list: %v", list)
	}
}
