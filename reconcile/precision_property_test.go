package reconcile_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// propRows are random rows (id, ts, x, s) and a new version of them: rows dropped, added, and
// changed by amounts around every precision (1 µs, 1 ms, 0.4 s, 1 s; 1e-6 .. 1).
func propRows(r *rand.Rand, n int) (old, new [][]any) {
	base := time.Date(2026, 7, 10, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		ts := base.Add(time.Duration(r.Int64N(86400e6)) * time.Microsecond)
		x := math.Round(r.Float64()*1e8) / 1e6 // up to 100 with 6 decimals
		var s any = fmt.Sprintf("s%d", r.IntN(5))
		if r.IntN(10) == 0 {
			s = nil
		}
		old = append(old, []any{int64(i), ts, x, s})
	}
	for _, row := range old {
		if r.IntN(15) == 0 {
			continue // removed
		}
		c := append([]any(nil), row...)
		switch r.IntN(6) {
		case 0:
			c[1] = c[1].(time.Time).Add([]time.Duration{time.Microsecond, time.Millisecond, 400 * time.Millisecond, time.Second}[r.IntN(4)])
		case 1:
			c[2] = c[2].(float64) + []float64{1e-6, 1e-4, 1e-2, 1}[r.IntN(4)]
		case 2:
			c[3] = "changed"
		}
		new = append(new, c)
	}
	for i := 0; i < n/10; i++ {
		new = append(new, []any{int64(n + i), base.Add(time.Duration(i) * time.Hour), float64(i), "added"})
	}
	return old, new
}

var propCols = []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate}, {Name: "ts", Kind: tsql.TypeTimestamp, Nullable: true},
	{Name: "x", Kind: tsql.TypeFloat, Nullable: true}, {Name: "s", Kind: tsql.TypeString, Nullable: true}}

// loadTyped loads rows into table with ts and x cast to the given engine types.
func loadTyped(t *testing.T, e tsql.Engine, table, tsType, xType string, rows [][]any) {
	t.Helper()
	withDay := make([][]any, len(rows))
	for i, r := range rows {
		withDay[i] = []any{r[0], time.Date(2026, 7, 10, 0, 0, 0, 0, time.UTC), r[1], r[2], r[3]}
	}
	load(t, e, table+"_raw", propCols, []string{"id", "d", "ts", "x", "s"}, withDay)
	if e.Info().Kind == "duckdb" {
		exec(t, e, "CREATE TABLE "+table+" AS SELECT id, CAST(ts AS "+tsType+") AS ts, CAST(x AS "+xType+") AS x, s FROM "+table+"_raw")
		return
	}
	exec(t, e, "CREATE TABLE "+table+" ENGINE = Memory AS SELECT id, ts, to"+xType+"(x) AS x, s FROM "+table+"_raw")
}

// readBack reads (id, ts, x, s) of a table as the engine holds them.
func readBack(t *testing.T, e tsql.Engine, table string) [][]any {
	t.Helper()
	res, err := e.Query(context.Background(), "SELECT id, ts, x, s FROM "+e.Dialect().QuoteRelation(table))
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]any, len(res.Rows))
	for i, r := range res.Rows {
		var x any
		if r[2] != nil {
			x = tsql.AsFloat(r[2])
		}
		var ts any
		if r[1] != nil {
			ts = tsql.AsTime(r[1]).UTC()
		}
		out[i] = []any{tsql.AsInt64(r[0]), ts, x, r[3]}
	}
	return out
}

// referenceSets is a plain SQL FULL JOIN of the two sides' stored values (loaded into one DuckDB
// file as TIMESTAMP and DOUBLE) at the stated precisions: ids added, removed and changed.
func referenceSets(t *testing.T, old, new [][]any, prec map[string]string) map[string][]int64 {
	t.Helper()
	ref := sqltest.DuckDB(t)
	cols := []tsql.Column{propCols[0], propCols[2], propCols[3], propCols[4]}
	for name, rows := range map[string][][]any{"ro": old, "rn": new} {
		if err := ref.CreateTable(context.Background(), name, cols, "", []string{"id"}); err != nil {
			t.Fatal(err)
		}
		if len(rows) > 0 {
			if err := ref.Insert(context.Background(), name, []string{"id", "ts", "x", "s"}, rows); err != nil {
				t.Fatal(err)
			}
		}
	}
	var digits int
	switch prec["ts"] {
	case "seconds":
		digits = 0
	case "milliseconds":
		digits = 3
	case "microseconds":
		digits = 6
	default:
		t.Fatalf("ts precision %q", prec["ts"])
	}
	tsAt := func(side string) string {
		return fmt.Sprintf("floor(epoch_us(%s.ts) / 1e%d)", side, 6-digits)
	}
	var places int
	px := prec["x"]
	float32s := strings.HasPrefix(px, "float32, ")
	if _, err := fmt.Sscanf(strings.TrimPrefix(px, "float32, "), "%d decimals", &places); err != nil {
		t.Fatalf("x precision %q", px)
	}
	xAt := func(side string) string {
		x := side + ".x"
		if float32s {
			x = "CAST(CAST(" + x + " AS REAL) AS DOUBLE)"
		}
		return fmt.Sprintf("round(%s * 1e%d)", x, places)
	}
	q := "SELECT coalesce(o.id, n.id), CASE WHEN o.id IS NULL THEN 'added' WHEN n.id IS NULL THEN 'removed' ELSE 'changed' END " +
		"FROM ro AS o FULL JOIN rn AS n ON o.id = n.id WHERE o.id IS NULL OR n.id IS NULL OR " +
		tsAt("o") + " IS DISTINCT FROM " + tsAt("n") + " OR " + xAt("o") + " IS DISTINCT FROM " + xAt("n") + " OR o.s IS DISTINCT FROM n.s"
	res, err := ref.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int64{"added": {}, "removed": {}, "changed": {}}
	for _, r := range res.Rows {
		k := tsql.AsText(r[1])
		out[k] = append(out[k], tsql.AsInt64(r[0]))
	}
	for _, ids := range out {
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	}
	return out
}

func resultSets(r *reconcile.Result) map[string][]int64 {
	out := map[string][]int64{"added": {}, "removed": {}, "changed": {}}
	id := func(k reconcile.Fields) int64 { return tsql.AsInt64(k.Get("id")) }
	for _, a := range r.Samples.Added {
		out["added"] = append(out["added"], id(a.Key))
	}
	for _, a := range r.Samples.Removed {
		out["removed"] = append(out["removed"], id(a.Key))
	}
	for _, c := range r.Samples.Changed {
		out["changed"] = append(out["changed"], id(c.Key))
	}
	for _, ids := range out {
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	}
	return out
}

// For random tables of mixed timestamp and number types, in one DuckDB file, in two, and across
// DuckDB and ClickHouse, the added, removed and changed rows trueup finds are those a plain SQL
// FULL JOIN finds comparing the stored values at the precisions trueup says it used.
func TestPrecisionProperty(t *testing.T) {
	duckTS := []string{"TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMP_MS", "TIMESTAMP_S"}
	duckX := []string{"DOUBLE", "REAL", "DECIMAL(12,3)", "DECIMAL(14,5)"}
	ch := sqltest.ClickHouse(t)
	for seed := uint64(1); seed <= 8; seed++ {
		r := rand.New(rand.NewPCG(seed, 20))
		oldRows, newRows := propRows(r, 300)
		oldTS, oldX := duckTS[r.IntN(4)], duckX[r.IntN(4)]
		newTS, newX := duckTS[r.IntN(4)], duckX[r.IntN(4)]
		where := []string{"same_file", "two_files"}
		if ch != nil {
			where = append(where, "clickhouse")
		}
		for _, w := range where {
			t.Run(fmt.Sprintf("seed%d_%s", seed, w), func(t *testing.T) {
				old := sqltest.DuckDB(t)
				new, nx, nt := old, newX, newTS
				switch w {
				case "two_files":
					new = sqltest.DuckDB(t)
				case "clickhouse":
					new, nt, nx = ch, "DateTime", []string{"Float64", "Float32"}[seed%2]
				}
				loadTyped(t, old, fmt.Sprintf("po%d", seed), oldTS, oldX, oldRows)
				loadTyped(t, new, fmt.Sprintf("pn%d", seed), nt, nx, newRows)
				res := diff(t, reconcile.Spec{
					Old: reconcile.Side{Engine: old, Relation: fmt.Sprintf("po%d", seed)}, New: reconcile.Side{Engine: new, Relation: fmt.Sprintf("pn%d", seed)},
					Key: []string{"id"}, Samples: 100000})
				want := referenceSets(t, readBack(t, old, fmt.Sprintf("po%d", seed)), readBack(t, new, fmt.Sprintf("pn%d", seed)), res.Precision)
				if d := cmp.Diff(want, resultSets(res)); d != "" {
					t.Errorf("old %s %s, new %s %s, precision %v: sets differ (-sql +trueup):\n%s", oldTS, oldX, nt, nx, res.Precision, d)
				}
			})
		}
	}
}
