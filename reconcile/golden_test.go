package reconcile_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"trueup/internal/golden"
	"trueup/reconcile"
	"trueup/sql/sqltest"
)

// TestOutputsGolden pins the JSON document and the text table of one diff with every kind of
// finding: an expected rise, a change outside the window, a removed row, a new partition.
func TestOutputsGolden(t *testing.T) {
	e := sqltest.DuckDB(t)
	newRows := edit(baseRows(), func(r []any) []any {
		switch r[0].(int64) {
		case 2:
			return nil
		case 10:
			r[3] = 1.0
		}
		return r
	})
	newRows = append(newRows, []any{int64(50), day("2026-07-11"), "late", 3.5, 0.25}, []any{int64(60), day("2026-07-13"), "next", 9.0, nil})
	load(t, e, "old_t", orderCols, orderNames, baseRows())
	load(t, e, "new_t", orderCols, orderNames, newRows)
	s := spec(e)
	s.Old.Target, s.New.Target = "warehouse", "warehouse"
	s.Expect, _ = reconcile.ParseExpectations("inside 2026-07-10..2026-07-11 rows -25..25%, removed 0..1; outside identical")
	r := diff(t, s)
	r.Started, r.ElapsedMS = time.Date(2026, 7, 20, 6, 0, 0, 0, time.UTC), 0

	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "result.golden.json", append(js, '\n'))

	var text bytes.Buffer
	if err := r.WriteText(&text, reconcile.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "result.golden.txt", text.Bytes())
}
