package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"trueup/fault"
	"trueup/ledger"
	"trueup/ledger/ledgertest"
	"trueup/reconcile"
	"trueup/sql/sqltest"
)

func TestStore(t *testing.T) {
	ctx := context.Background()
	e := sqltest.DuckDB(t)
	load(t, e, "old_t", orderCols, orderNames, baseRows())
	load(t, e, "new_t", orderCols, orderNames, edit(baseRows(), func(r []any) []any {
		if r[0].(int64) == 5 {
			r[3] = 1.0
		}
		if r[0].(int64) == 9 {
			return nil
		}
		return r
	}))
	r := diff(t, spec(e))

	l := ledgertest.Open(t)
	s := reconcile.NewStore(l)
	id, err := s.Save(ctx, r, "cli", "ann")
	if err != nil {
		t.Fatal(err)
	}
	if id != 1 || r.ID != 1 {
		t.Errorf("id %d, result id %d", id, r.ID)
	}

	got, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	r.Label = "cli" // read back with the label it was saved with
	want, _ := json.Marshal(r)
	have, _ := json.Marshal(got)
	if string(want) != string(have) {
		t.Errorf("stored diff differs from the one saved:\nsaved  %s\nloaded %s", want, have)
	}
	if p := got.Partition("2026-07-11"); p == nil || p.Samples == nil || len(p.Samples.Changed) != 1 {
		t.Errorf("drill-down samples of 2026-07-11 not kept: %+v", p)
	}

	list, err := s.List(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != id || list[0].Label != "cli" || list[0].Unexpected != 2 ||
		list[0].Rows != r.Rows || list[0].New.Relation != "new_t" || list[0].ExpectationsMet {
		t.Errorf("list: %+v", list)
	}
	if _, err := s.Get(ctx, 99); !errors.Is(err, fault.ErrNotFound) || fault.Message(err) != "There is no diff 99." {
		t.Errorf("missing diff: %v", err)
	}
	entries, err := l.AuditLog(ctx, ledger.AuditFilter{Action: "reconcile.diff"})
	if err != nil || len(entries) != 1 || entries[0].Actor != "ann" || entries[0].Target != "new_t" {
		t.Errorf("audit: %+v %v", entries, err)
	}
}
