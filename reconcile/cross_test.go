package reconcile_test

import (
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// manyRows are 40 days of 500 orders.
func manyRows() [][]any {
	var rows [][]any
	for d := 0; d < 40; d++ {
		dt := day("2026-06-01").AddDate(0, 0, d)
		for i := 0; i < 500; i++ {
			id := int64(d*500 + i)
			var name any = fmt.Sprintf("c%d", id%97)
			if id%50 == 0 {
				name = nil
			}
			rows = append(rows, []any{id, dt, name, float64(id%1000) / 4, float64(id%13) * 0.1})
		}
	}
	return rows
}

// TestCrossEngine puts the old version in DuckDB and the new one in ClickHouse, with a handful of
// planted differences, and expects exactly those back while moving few rows.
func TestCrossEngine(t *testing.T) {
	engines := sqltest.Engines(t)
	if len(engines) < 2 {
		t.Skip("needs both engines")
	}
	duck, ch := engines[0], engines[1]
	old := manyRows()
	planted := edit(old, func(r []any) []any {
		switch r[0].(int64) {
		case 777, 15001: // removed
			return nil
		case 1234: // amount changed
			r[3] = 1.0
		case 10000: // NULL name gets a value
			r[2] = "now named"
		case 9999: // a value becomes NULL
			r[2] = nil
		case 3333: // float changed beyond the scale
			r[4] = r[4].(float64) + 0.5
		}
		return r
	})
	planted = append(planted,
		[]any{int64(100000), day("2026-06-03"), "added", 5.0, 0.5},
		[]any{int64(100001), day("2026-06-20"), "added", 6.0, nil},
		old[4321], // a duplicate of an unchanged row
	)
	load(t, duck, "old_t", orderCols, orderNames, old)
	// ClickHouse holds amount as Float64 rather than Decimal: equal values must still agree.
	chCols := append([]tsql.Column(nil), orderCols...)
	chCols[3] = tsql.Column{Name: "amount", Kind: tsql.TypeFloat}
	load(t, ch, "new_t", chCols, orderNames, planted)

	s := reconcile.Spec{
		Old:       reconcile.Side{Engine: duck, Relation: "old_t"},
		New:       reconcile.Side{Engine: ch, Relation: "new_t"},
		Key:       []string{"id"},
		Partition: "d",
		Measures:  []string{"amount"},
	}
	r := diff(t, s)
	if !r.CrossEngine {
		t.Fatal("not run as a cross-engine diff")
	}
	var found []string
	for _, x := range r.Samples.Removed {
		found = append(found, fmt.Sprintf("removed %v", x.Key.Get("id")))
	}
	for _, x := range r.Samples.Added {
		found = append(found, fmt.Sprintf("added %v", x.Key.Get("id")))
	}
	for _, x := range r.Samples.Changed {
		for _, c := range x.Columns {
			found = append(found, fmt.Sprintf("changed %v %s %v→%v", x.Key.Get("id"), c.Column, c.Old, c.New))
		}
	}
	for _, x := range r.Samples.Duplicates {
		found = append(found, fmt.Sprintf("duplicate %v %d/%d", x.Key.Get("id"), x.OldRows, x.NewRows))
	}
	sort.Strings(found)
	want := []string{
		"added 100000",
		"added 100001",
		"changed 10000 name <nil>→now named",
		"changed 1234 amount 58.5→1",
		"changed 3333 score 0.5→1",
		"changed 9999 name c8→<nil>",
		"duplicate 4321 1/2",
		"removed 15001",
		"removed 777",
	}
	if diff := cmp.Diff(want, found); diff != "" {
		t.Errorf("planted differences (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(reconcile.RowCounts{Added: 2, Removed: 2, Changed: 4, DuplicateKeys: 1}, r.Rows); diff != "" {
		t.Errorf("row counts (-want +got):\n%s", diff)
	}
	differing := 0
	for _, p := range r.Partitions {
		if !p.ChecksumMatch {
			differing++
		}
	}
	if differing != 7 || len(r.Partitions) != 40 {
		t.Errorf("%d of %d partitions differ, want 7 of 40: %v", differing, len(r.Partitions), overview(r))
	}
	if limit := int64(len(old)) * 3 / 100; r.RowsTransferred > limit {
		t.Errorf("%d rows crossed between engines, want at most %d (3%% of %d)", r.RowsTransferred, limit, len(old))
	}
	t.Logf("rows transferred: %d of %d", r.RowsTransferred, len(old)+len(planted))

	// Huge numbers, NaN and infinities in either engine, each way round: one change among them.
	t.Run("huge_and_special_numbers_both_ways", func(t *testing.T) {
		special := []any{2e13, math.NaN(), math.Inf(1), math.Inf(-1), 1e19, -1e25, 1.7e308}
		withScores := func(changed bool) [][]any {
			return edit(old, func(r []any) []any {
				if id := r[0].(int64); id >= 100 && id < 100+int64(len(special)) {
					r[4] = special[id-100]
					if changed && id == 100 {
						r[4] = 3e13
					}
				}
				return r
			})
		}
		load(t, duck, "special_duck", orderCols, orderNames, withScores(false))
		load(t, ch, "special_ch", chCols, orderNames, withScores(true))
		for _, way := range []struct {
			name     string
			old, new reconcile.Side
			from, to float64
		}{
			{"duckdb_to_clickhouse", reconcile.Side{Engine: duck, Relation: "special_duck"}, reconcile.Side{Engine: ch, Relation: "special_ch"}, 2e13, 3e13},
			{"clickhouse_to_duckdb", reconcile.Side{Engine: ch, Relation: "special_ch"}, reconcile.Side{Engine: duck, Relation: "special_duck"}, 3e13, 2e13},
		} {
			t.Run(way.name, func(t *testing.T) {
				s := s
				s.Old, s.New = way.old, way.new
				r := diff(t, s)
				if r.Rows != (reconcile.RowCounts{Changed: 1}) || len(r.Samples.Changed) != 1 {
					t.Fatalf("want one changed row: %+v %v", r.Rows, overview(r))
				}
				c := r.Samples.Changed[0]
				if c.Key.Get("id") != int64(100) || len(c.Columns) != 1 || c.Columns[0].Old != way.from || c.Columns[0].New != way.to {
					t.Errorf("changed %v %+v, want id 100 score %v→%v", c.Key, c.Columns, way.from, way.to)
				}
			})
		}
	})

	// A composite key, a tolerance, a missing day and expectations, across engines.
	t.Run("composite_key_tolerance_missing_day_expectations", func(t *testing.T) {
		load(t, ch, "later_ch", chCols, orderNames, append(edit(old, func(r []any) []any {
			switch {
			case r[1].(time.Time).Equal(day("2026-07-10")): // the last day is missing
				return nil
			case r[0].(int64) == 5:
				r[4] = r[4].(float64) + 0.004 // within the tolerance
			}
			return r
		}), []any{int64(200000), day("2026-06-02"), "late", 1.0, nil}, []any{int64(200001), day("2026-06-02"), "late", 2.0, nil}))
		for _, tc := range []struct {
			expect string
			met    bool
		}{
			{"inside 2026-06-02 rows +0..1%; outside identical", false},
			{"inside 2026-06-02 rows +0..1%; inside 2026-07-10 any; outside identical", true},
		} {
			s := s
			s.New.Relation = "later_ch"
			s.Key = []string{"d", "id"}
			s.Tolerance = map[string]reconcile.Tolerance{"score": {Abs: 0.01}}
			exp, err := reconcile.ParseExpectations(tc.expect)
			if err != nil {
				t.Fatal(err)
			}
			s.Expect = exp
			r := diff(t, s)
			if r.ExpectationsMet != tc.met || r.Rows != (reconcile.RowCounts{Added: 2, Removed: 500}) {
				t.Errorf("%s: met=%v rows %+v", tc.expect, r.ExpectationsMet, r.Rows)
			}
			verdicts := map[string]string{}
			for _, p := range r.Partitions {
				if p.Verdict != reconcile.VerdictUnchanged {
					verdicts[p.Partition] = p.Presence + " " + p.Verdict
				}
			}
			missing := "old_only unexpected"
			if tc.met {
				missing = "old_only expected"
			}
			if diff := cmp.Diff(map[string]string{"2026-06-02": "both expected", "2026-07-10": missing}, verdicts); diff != "" {
				t.Errorf("%s: verdicts (-want +got):\n%s", tc.expect, diff)
			}
		}
	})

	// A key repeated alike on both sides is no difference across engines either.
	t.Run("key_repeated_alike", func(t *testing.T) {
		// a small day, so its rows cross together: id 900001 twice, id 900002 changed
		small := func(id int64) []any { return []any{id, day("2026-08-01"), "s", 1.0, nil} }
		twice := append(edit(old, func(r []any) []any { return r }), small(900001), small(900001), small(900002))
		load(t, duck, "twice_duck", orderCols, orderNames, twice)
		load(t, ch, "twice_ch", chCols, orderNames, edit(twice, func(r []any) []any {
			if r[0].(int64) == 900002 {
				r[2] = "changed"
			}
			return r
		}))
		s := s
		s.Old.Relation, s.New.Relation = "twice_duck", "twice_ch"
		r := diff(t, s)
		if r.Rows != (reconcile.RowCounts{Changed: 1}) {
			t.Errorf("want only id 900002 changed: %+v %v", r.Rows, r.Samples.Duplicates)
		}
	})

	t.Run("identical_across_engines", func(t *testing.T) {
		load(t, ch, "same_t", chCols, orderNames, old)
		s := s
		s.New.Relation = "same_t"
		r := diff(t, s)
		if r.Differs || r.RowsTransferred != 0 {
			t.Errorf("identical data across engines: differs=%v transferred=%d %v", r.Differs, r.RowsTransferred, r.Differing())
		}
	})
}

// Rows whose key has a NULL are matched whole, by the portable row hash, so a DuckDB LIST and a
// ClickHouse Array holding the same values must hash alike, of every element type the row
// comparison matches across the engines (numbers, text with quotes and commas, dates,
// timestamps, lists of lists, a STRUCT and a Tuple, lists holding a NULL, empty lists). The same
// rows on both sides are no difference, and the partition's checksums agree; a row with a NULL
// key that only new holds is the one row --rows prints.
func TestNullKeyListsAcrossEngines(t *testing.T) {
	engines := sqltest.Engines(t)
	if len(engines) < 2 {
		t.Skip("needs both engines")
	}
	duck, ch := engines[0], engines[1]
	rows := []string{
		`(1, [1, 2], ['a, b', NULL, '''q'], [1.5, 0.1], [1.10], [DATE '2026-01-02'], [TIMESTAMP '2026-01-02 03:04:05'], [[1], [2, 3]], {'a': 1, 'b': 'x'}, [NULL])`,
		`(NULL, [1, 2], ['[x]', ''], [-2.25], [], [DATE '2026-01-03'], [], [[], [4]], {'a': 2, 'b': 'y, z'}, [])`,
		`(NULL, [], [], [], [3.00, 0.5], [], [TIMESTAMP '2026-01-02 00:00:00'], [], {'a': NULL, 'b': NULL}, [NULL, 7])`,
	}
	exec(t, duck, "CREATE TABLE nkl (id BIGINT, li INTEGER[], ls VARCHAR[], lf DOUBLE[], ld DECIMAL(10,2)[], ldt DATE[], lts TIMESTAMP[], "+
		"ln INTEGER[][], st STRUCT(a INTEGER, b VARCHAR), lnu INTEGER[])",
		"INSERT INTO nkl VALUES "+rows[0]+", "+rows[1]+", "+rows[2])
	exec(t, ch, "CREATE TABLE nkl (id Nullable(Int64), li Array(Int32), ls Array(Nullable(String)), lf Array(Float64), ld Array(Decimal(10, 2)), "+
		"ldt Array(Date), lts Array(DateTime), ln Array(Array(Int32)), st Tuple(Nullable(Int32), Nullable(String)), lnu Array(Nullable(Int32))) ENGINE = MergeTree ORDER BY tuple()",
		// one statement a row: 18.16 does not unify the types of a UNION's empty arrays
		`INSERT INTO nkl SELECT toInt64(1), [1, 2], ['a, b', NULL, '\'q'], [1.5, 0.1], [toDecimal64(1.10, 2)], [toDate('2026-01-02')],
			[toDateTime('2026-01-02 03:04:05', 'UTC')], [[1], [2, 3]], tuple(1, 'x'), [NULL]`,
		`INSERT INTO nkl SELECT NULL, [1, 2], ['[x]', ''], [-2.25], [], [toDate('2026-01-03')], [], [emptyArrayInt32(), [4]], tuple(2, 'y, z'), []`,
		`INSERT INTO nkl SELECT NULL, [], [], [], [toDecimal64(3.00, 2), toDecimal64(0.5, 2)], [], [toDateTime('2026-01-02 00:00:00', 'UTC')],
			arrayFilter(x -> 0, [[toInt32(0)]]), tuple(NULL, NULL), [NULL, 7]`)

	s := reconcile.Spec{Old: reconcile.Side{Engine: duck, Relation: "nkl"}, New: reconcile.Side{Engine: ch, Relation: "nkl"}, Key: []string{"id"}}
	var lines []string
	s.Rows = func(l reconcile.RowLine) error {
		lines = append(lines, l.Sign+" "+l.Values.Text())
		return nil
	}
	r := diff(t, s)
	if r.Differs || r.Rows != (reconcile.RowCounts{}) || len(lines) > 0 || len(r.Partitions) != 1 || !r.Partitions[0].ChecksumMatch {
		t.Errorf("the same rows: differs %v, rows %+v, printed %q, partitions %s", r.Differs, r.Rows, lines, overview(r))
	}

	exec(t, ch, `INSERT INTO nkl SELECT NULL, [5], ['new'], [], [], [], [], arrayFilter(x -> 0, [[toInt32(0)]]), tuple(3, 'n'), []`)
	lines = nil
	r = diff(t, s)
	want := []string{`+ id=NULL li=[5] ls=["new"] lf=[] ld=[] ldt=[] lts=[] ln=[] st=[3,"n"] lnu=[]`}
	if d := cmp.Diff(want, lines); d != "" || r.Rows != (reconcile.RowCounts{NullKeyAdded: 1}) {
		t.Errorf("a row with a NULL key only new holds: rows %+v, printed (-want +got):\n%s", r.Rows, d)
	}
}

// TestListsOfUUIDsAndBooleansAcrossEngines: a DuckDB UUID[] and a ClickHouse Array(UUID), a
// DuckDB BOOLEAN[] and a ClickHouse Array(UInt8) holding the same values compare equal row by
// row: of a row whose other column changed, only that column is reported changed.
func TestListsOfUUIDsAndBooleansAcrossEngines(t *testing.T) {
	engines := sqltest.Engines(t)
	if len(engines) < 2 {
		t.Skip("needs both engines")
	}
	duck, ch := engines[0], engines[1]
	const u = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
	exec(t, duck, "CREATE TABLE lub (id BIGINT, lu UUID[], lb BOOLEAN[], v INTEGER)",
		"INSERT INTO lub VALUES (1, ['"+u+"'], [true, false], 1), (2, [], [true], 2)")
	exec(t, ch, "CREATE TABLE lub (id Int64, lu Array(UUID), lb Array(UInt8), v Int32) ENGINE = MergeTree ORDER BY id",
		"INSERT INTO lub SELECT toInt64(1), [toUUID('"+u+"')], [toUInt8(1), toUInt8(0)], toInt32(10)",
		"INSERT INTO lub SELECT toInt64(2), arrayFilter(x -> 0, [toUUID('"+u+"')]), [toUInt8(1)], toInt32(2)")
	r := diff(t, reconcile.Spec{Old: reconcile.Side{Engine: duck, Relation: "lub"}, New: reconcile.Side{Engine: ch, Relation: "lub"}, Key: []string{"id"}})
	if r.Rows != (reconcile.RowCounts{Changed: 1}) || len(r.ChangedColumns) != 1 || r.ChangedColumns["v"] != 1 {
		t.Errorf("rows %+v, changed columns %v; want one row changed, in v alone", r.Rows, r.ChangedColumns)
	}
}
