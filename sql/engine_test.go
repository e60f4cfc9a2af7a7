package sql_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"trueup/fault"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

var day = func(s string) time.Time { t, _ := time.Parse("2006-01-02", s); return t }

var salesCols = []tsql.Column{
	{Name: "id", Kind: tsql.TypeInt},
	{Name: "d", Kind: tsql.TypeDate},
	{Name: "name", Kind: tsql.TypeString, Nullable: true},
	{Name: "amount", Type: "DECIMAL(18,2)", Kind: tsql.TypeDecimal},
	{Name: "score", Kind: tsql.TypeFloat, Nullable: true},
	{Name: "ts", Kind: tsql.TypeTimestamp},
}

func salesRows() [][]any {
	at := time.Date(2026, 7, 10, 13, 14, 15, 0, time.UTC)
	return [][]any{
		{int64(1), day("2026-07-10"), "ann", 12.30, 0.5, at},
		{int64(2), day("2026-07-10"), nil, 7.00, nil, at.Add(time.Hour)},
		{int64(3), day("2026-07-11"), "o'brien", 1.25, 2.25, at.Add(24 * time.Hour)},
		{int64(4), day("2026-07-12"), "zoë", 100.10, -1.5, at.Add(48 * time.Hour)},
	}
}

func loadSales(t *testing.T, e tsql.Engine, table string) {
	t.Helper()
	ctx := context.Background()
	if err := e.CreateTable(ctx, table, salesCols, "d", []string{"id"}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := e.Insert(ctx, table, []string{"id", "d", "name", "amount", "score", "ts"}, salesRows()); err != nil {
		t.Fatalf("insert: %v", err)
	}
}

func ids(t *testing.T, e tsql.Engine, q string, args ...any) []int64 {
	t.Helper()
	res, err := e.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []int64
	for _, r := range res.Rows {
		out = append(out, tsql.AsInt64(r[0]))
	}
	return out
}

func TestEngine(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		d := e.Dialect()
		loadSales(t, e, "sales")

		t.Run("typed_values_round_trip", func(t *testing.T) {
			res, err := e.Query(ctx, "SELECT id, d, name, amount, score FROM sales ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			got := res.Rows[2]
			want := []any{int64(3), day("2026-07-11"), "o'brien", tsql.Decimal("1.25"), 2.25}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("row 3 (-want +got):\n%s", diff)
			}
			if res.Rows[1][2] != nil || res.Rows[1][4] != nil {
				t.Errorf("NULLs came back as %v, %v", res.Rows[1][2], res.Rows[1][4])
			}
		})

		// Values read as the engine prints them, not as its driver hands them over: a UUID as
		// its canonical text, integers beyond 64 bits with every digit; on DuckDB a TIME as a
		// time of day and an INTERVAL in words; a timestamp shown keeps its nanoseconds.
		t.Run("values_read_as_the_engine_prints_them", func(t *testing.T) {
			q := "SELECT toUUID('dcb509da-228d-4957-879a-a310bfe23128'), toUInt64('18446744073709551615')"
			want := []any{"dcb509da-228d-4957-879a-a310bfe23128", uint64(18446744073709551615)}
			if e.Info().Kind == "duckdb" {
				q = "SELECT CAST('dcb509da-228d-4957-879a-a310bfe23128' AS UUID), CAST(18446744073709551615 AS UBIGINT), " +
					"CAST('123456789012345678901234567' AS HUGEINT), TIME '12:00:13.25', INTERVAL '1 year 2 months 3 days 4 hours', " +
					"INTERVAL 13 MINUTE, TIMESTAMP_NS '2026-03-01 10:00:00.000000001'"
				want = append(want, tsql.Decimal("123456789012345678901234567"), "12:00:13.25", "1 year 2 months 3 days 04:00:00", "00:13:00",
					time.Date(2026, 3, 1, 10, 0, 0, 1, time.UTC))
			}
			res, err := e.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, res.Rows[0]); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
			if got := tsql.ShownText(time.Date(2026, 3, 1, 10, 0, 0, 1, time.UTC)); got != "2026-03-01 10:00:00.000000001" {
				t.Errorf("a timestamp with nanoseconds shows as %s", got)
			}
		})

		// Decimals come back exactly, as their digits without trailing fractional zeros, fast
		// path (an int64 mantissa) and wide alike, and as a float they are what the engine itself
		// casts them to. A double cannot tell 1234567890123456.78 from …79: a Decimal can.
		t.Run("decimals_read_exactly", func(t *testing.T) {
			values := []struct{ typ, text string }{
				{"Decimal(18,2)", "-12345.67"}, {"Decimal(18,2)", "0.10"}, {"Decimal(9,4)", "3.1416"},
				{"Decimal(18,6)", "999999999999.999999"}, {"Decimal(18,0)", "-900719925474099"},
				{"Decimal(18,2)", "1234567890123456.78"}, {"Decimal(18,2)", "1234567890123456.79"},
				{"Decimal(18,2)", "-0.00"}, {"Decimal(18,4)", "-0.0500"},
			}
			if e.Info().Kind == "duckdb" { // ClickHouse 18.16 has Decimal128 behind a setting
				values = append(values, struct{ typ, text string }{"Decimal(38,10)", "12345678901234567890.0123456789"})
			}
			for _, v := range values {
				x := "CAST('" + v.text + "' AS " + v.typ + ")"
				res, err := e.Query(ctx, "SELECT "+x+", "+d.ToFloat(x))
				if err != nil {
					t.Fatalf("%s: %v", x, err)
				}
				got, cast := res.Rows[0][0], res.Rows[0][1]
				want := strings.TrimRight(strings.TrimRight(v.text, "0"), ".")
				if !strings.Contains(v.text, ".") {
					want = v.text
				}
				if want == "-0" || want == "" {
					want = "0"
				}
				dec, ok := got.(tsql.Decimal)
				if !ok || dec.String() != want {
					t.Errorf("%s read as %#v, want the Decimal %s", x, got, want)
				}
				if ok && dec.Float64() != cast {
					t.Errorf("%s as a float is %v, the engine casts it to %#v", x, dec.Float64(), cast)
				}
			}
		})

		t.Run("date_window_binding", func(t *testing.T) {
			q, args, err := tsql.Expand(d, "SELECT id FROM sales WHERE d >= $start AND d < $end ORDER BY id",
				tsql.Window{Column: "d", Type: tsql.TypeDate, Start: day("2026-07-10"), End: day("2026-07-11")}.Params())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{1, 2}, ids(t, e, q, args...)); diff != "" {
				t.Errorf("ids in window (-want +got):\n%s", diff)
			}
		})

		t.Run("string_binding_is_not_sql", func(t *testing.T) {
			ph, arg := d.Bind(tsql.String("x' OR '1'='1"))
			if got := ids(t, e, "SELECT id FROM sales WHERE name = "+ph, arg); len(got) != 0 {
				t.Errorf("injection matched rows %v", got)
			}
			ph, arg = d.Bind(tsql.String("o'brien"))
			if got := ids(t, e, "SELECT id FROM sales WHERE name = "+ph, arg); !cmp.Equal(got, []int64{3}) {
				t.Errorf("quote in value: got %v", got)
			}
		})

		t.Run("quoted_identifiers", func(t *testing.T) {
			odd := `we"ird name`
			cols := []tsql.Column{{Name: odd, Kind: tsql.TypeInt}}
			if err := e.CreateTable(ctx, "odd table", cols, "", nil); err != nil {
				t.Fatal(err)
			}
			if err := e.Insert(ctx, "odd table", []string{odd}, [][]any{{int64(7)}}); err != nil {
				t.Fatal(err)
			}
			if got := ids(t, e, "SELECT "+d.Quote(odd)+" FROM "+d.QuoteRelation("odd table")); !cmp.Equal(got, []int64{7}) {
				t.Errorf("got %v", got)
			}
		})

		t.Run("relations_and_columns", func(t *testing.T) {
			if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "sales_live", Table: "sales"}}); err != nil {
				t.Fatal(err)
			}
			rels, err := e.Relations(ctx)
			if err != nil {
				t.Fatal(err)
			}
			found := map[string]bool{}
			for _, r := range rels {
				found[r.Name] = r.View
			}
			if v, ok := found["sales"]; !ok || v {
				t.Errorf("sales: present=%v view=%v", ok, v)
			}
			if v, ok := found["sales_live"]; !ok || !v {
				t.Errorf("sales_live: present=%v view=%v", ok, v)
			}
			cols, err := e.Columns(ctx, "sales")
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, c := range cols {
				kinds = append(kinds, c.Name+":"+c.Kind.String())
			}
			want := []string{"id:int", "d:date", "name:string", "amount:decimal", "score:float", "ts:timestamp"}
			if diff := cmp.Diff(want, kinds); diff != "" {
				t.Errorf("columns (-want +got):\n%s", diff)
			}
			if _, err := e.Columns(ctx, "no_such_table"); !errors.Is(err, fault.ErrNotFound) {
				t.Errorf("missing relation: got %v, want fault.ErrNotFound", err)
			}
		})

		t.Run("check_rejects_bad_sql", func(t *testing.T) {
			if err := e.Check(ctx, "SELECT id FROM sales"); err != nil {
				t.Errorf("good query: %v", err)
			}
			if err := e.Check(ctx, "SELECT nope FROM sales"); err == nil {
				t.Error("unknown column passed the check")
			}
		})

		t.Run("replace_partition_is_atomic_and_idempotent", func(t *testing.T) {
			if err := e.CreateTableAs(ctx, "sales2", "d", []string{"id"}, "SELECT * FROM sales"); err != nil {
				t.Fatal(err)
			}
			w := tsql.Window{Column: "d", Type: tsql.TypeDate, Start: day("2026-07-10"), End: day("2026-07-11")}
			q, args, err := tsql.Expand(d, "SELECT id + 100 AS id, d, name, amount, score, ts FROM sales WHERE d >= $start AND d < $end", w.Params())
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				n, err := e.ReplacePartition(ctx, "sales2", w, q, args...)
				if err != nil {
					t.Fatal(err)
				}
				if n != 2 {
					t.Errorf("replace reported %d rows, want 2", n)
				}
			}
			if got := ids(t, e, "SELECT id FROM sales2 ORDER BY id"); !cmp.Equal(got, []int64{3, 4, 101, 102}) {
				t.Errorf("after replacing twice: %v", got)
			}
			// A transform returning nothing empties the partition.
			if _, err := e.ReplacePartition(ctx, "sales2", w, "SELECT * FROM sales WHERE 1 = 0"); err != nil {
				t.Fatal(err)
			}
			if got := ids(t, e, "SELECT id FROM sales2 ORDER BY id"); !cmp.Equal(got, []int64{3, 4}) {
				t.Errorf("after emptying: %v", got)
			}
			// Rows a transform returns outside the window never land.
			if _, err := e.ReplacePartition(ctx, "sales2", w, "SELECT * FROM sales"); err != nil {
				t.Fatal(err)
			}
			if got := ids(t, e, "SELECT id FROM sales2 ORDER BY id"); !cmp.Equal(got, []int64{1, 2, 3, 4}) {
				t.Errorf("after out-of-window rows: %v", got)
			}
		})

		t.Run("replace_partitions_writes_each_from_its_own_window", func(t *testing.T) {
			if err := e.CreateTableAs(ctx, "sales4", "d", []string{"id"}, "SELECT * FROM sales"); err != nil {
				t.Fatal(err)
			}
			var writes []tsql.PartitionWrite
			for _, from := range []string{"2026-07-10", "2026-07-11"} {
				w := tsql.Window{Column: "d", Type: tsql.TypeDate, Start: day(from), End: day(from).AddDate(0, 0, 1)}
				// the transform reads a window of two days: only its own partition's rows land
				q, args, err := tsql.Expand(d, "SELECT id + 100 AS id, d, name, amount, score, ts FROM sales WHERE d >= $start AND d < $end + INTERVAL 1 DAY", w.Params())
				if err != nil {
					t.Fatal(err)
				}
				writes = append(writes, tsql.PartitionWrite{Window: w, Query: q, Args: args})
			}
			for i := 0; i < 2; i++ {
				n, err := e.ReplacePartitions(ctx, "sales4", writes)
				if err != nil {
					t.Fatal(err)
				}
				if !cmp.Equal(n, []int64{2, 1}) { // sales has 2 rows on 07-10, 1 on 07-11
					t.Errorf("replace reported %v rows, want [2 1]", n)
				}
			}
			if got := ids(t, e, "SELECT id FROM sales4 ORDER BY id"); !cmp.Equal(got, []int64{4, 101, 102, 103}) {
				t.Errorf("after replacing twice: %v", got)
			}
		})

		t.Run("replace_partition_of_a_month_over_daily_partitions", func(t *testing.T) {
			// A window wider than the table's partitions replaces each of them: July's three days
			// (07-10, 07-11, 07-12) all take the transform's rows, and a day the transform no longer
			// returns is emptied.
			if err := e.CreateTableAs(ctx, "sales5", "d", []string{"id"}, "SELECT * FROM sales"); err != nil {
				t.Fatal(err)
			}
			w := tsql.Window{Column: "d", Type: tsql.TypeDate, Start: day("2026-07-01"), End: day("2026-08-01")}
			q, args, err := tsql.Expand(d, "SELECT id + 100 AS id, d, name, amount, score, ts FROM sales WHERE d >= $start AND d < $end AND amount < 100", w.Params())
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				n, err := e.ReplacePartition(ctx, "sales5", w, q, args...)
				if err != nil {
					t.Fatal(err)
				}
				if n != 3 {
					t.Errorf("replace reported %d rows, want 3", n)
				}
			}
			if got := ids(t, e, "SELECT id FROM sales5 ORDER BY id"); !cmp.Equal(got, []int64{101, 102, 103}) {
				t.Errorf("after replacing July: %v, want 101 102 103 (07-12 emptied)", got)
			}
		})

		if e.Info().Kind == "clickhouse" {
			t.Run("replace_partition_by_the_tables_own_key", func(t *testing.T) {
				// A table partitioned by month: a day's window rebuilds the month from its other
				// days as they are and the day's new rows, twice alike; a month's window replaces
				// the month.
				if err := e.Exec(ctx, "CREATE TABLE sales6 ENGINE = MergeTree PARTITION BY toYYYYMM(d) ORDER BY id AS SELECT * FROM sales"); err != nil {
					t.Fatal(err)
				}
				dayW := tsql.Window{Column: "d", Type: tsql.TypeDate, Start: day("2026-07-11"), End: day("2026-07-12")}
				q, args, err := tsql.Expand(d, "SELECT id + 100 AS id, d, name, amount, score, ts FROM sales WHERE d >= $start AND d < $end", dayW.Params())
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 2; i++ {
					if n, err := e.ReplacePartition(ctx, "sales6", dayW, q, args...); err != nil || n != 1 {
						t.Fatalf("a day's window over a monthly partition: %d rows, %v", n, err)
					}
					if got := ids(t, e, "SELECT id FROM sales6 ORDER BY id"); !cmp.Equal(got, []int64{1, 2, 4, 103}) {
						t.Errorf("after replacing 07-11 (%d): %v, want 1 2 4 103", i+1, got)
					}
				}
				monthW := tsql.Window{Column: "d", Type: tsql.TypeDate, Start: day("2026-07-01"), End: day("2026-08-01")}
				q, args, err = tsql.Expand(d, "SELECT id + 100 AS id, d, name, amount, score, ts FROM sales WHERE d >= $start AND d < $end", monthW.Params())
				if err != nil {
					t.Fatal(err)
				}
				if n, err := e.ReplacePartition(ctx, "sales6", monthW, q, args...); err != nil || n != 4 {
					t.Fatalf("a month's window: %d rows, %v", n, err)
				}
				if got := ids(t, e, "SELECT id FROM sales6 ORDER BY id"); !cmp.Equal(got, []int64{101, 102, 103, 104}) {
					t.Errorf("after replacing the month: %v", got)
				}
			})
		}

		t.Run("copy_partitions_skips_excluded", func(t *testing.T) {
			if err := e.CreateTableLike(ctx, "sales3", "sales"); err != nil {
				t.Fatal(err)
			}
			ex := []tsql.Window{{Column: "d", Type: tsql.TypeDate, Start: day("2026-07-11"), End: day("2026-07-12")}}
			if err := e.CopyPartitions(ctx, "sales3", "sales", "d", ex); err != nil {
				t.Fatal(err)
			}
			if got := ids(t, e, "SELECT id FROM sales3 ORDER BY id"); !cmp.Equal(got, []int64{1, 2, 4}) {
				t.Errorf("copied: %v", got)
			}
		})

		t.Run("repoint_views_together", func(t *testing.T) {
			if err := e.CreateTableAs(ctx, "a__v1", "", nil, "SELECT 1 AS x"); err != nil {
				t.Fatal(err)
			}
			if err := e.CreateTableAs(ctx, "a__v2", "", nil, "SELECT 2 AS x"); err != nil {
				t.Fatal(err)
			}
			if err := e.CreateTableAs(ctx, "b__v1", "", nil, "SELECT 10 AS x"); err != nil {
				t.Fatal(err)
			}
			if err := e.CreateTableAs(ctx, "b__v2", "", nil, "SELECT 20 AS x"); err != nil {
				t.Fatal(err)
			}
			steps := [][]tsql.ViewPoint{
				{{View: "a", Table: "a__v1"}, {View: "b", Table: "b__v1"}},
				{{View: "a", Table: "a__v2"}, {View: "b", Table: "b__v2"}},
			}
			want := [][]int64{{1, 10}, {2, 20}}
			for i, s := range steps {
				if err := e.RepointViews(ctx, s); err != nil {
					t.Fatal(err)
				}
				got := append(ids(t, e, "SELECT x FROM a"), ids(t, e, "SELECT x FROM b")...)
				if !cmp.Equal(got, want[i]) {
					t.Errorf("step %d: %v", i, got)
				}
				src, err := e.ViewSource(ctx, "a")
				if err != nil || src != s[0].Table {
					t.Errorf("view source of a: %q, %v", src, err)
				}
			}
			rels, _ := e.Relations(ctx)
			for _, r := range rels {
				if strings.Contains(r.Name, "__next_") || strings.Contains(r.Name, "__old_") {
					t.Errorf("left behind: %s", r.Name)
				}
			}
		})

		t.Run("hash_sum_is_order_independent_and_sees_changes", func(t *testing.T) {
			cols, _ := e.Columns(ctx, "sales")
			sum := func(q string) uint64 {
				res, err := e.Query(ctx, "SELECT "+d.HashSum(d.RowHash(cols, tsql.HashOptions{}))+" FROM ("+q+") AS s")
				if err != nil {
					t.Fatal(err)
				}
				return tsql.AsUint64(res.Rows[0][0])
			}
			a := sum("SELECT * FROM sales ORDER BY id")
			b := sum("SELECT * FROM sales ORDER BY id DESC")
			c := sum("SELECT id, d, name, amount * 2 AS amount, score, ts FROM sales")
			if a != b || a == 0 {
				t.Errorf("order changed the sum: %d vs %d", a, b)
			}
			if a == c {
				t.Error("a changed amount left the sum unchanged")
			}
		})
	})
}

// TestPortableHashAgrees loads the same rows into both engines and compares the portable
// row hashes row by row.
func TestPortableHashAgrees(t *testing.T) {
	engines := sqltest.Engines(t)
	if len(engines) < 2 {
		t.Skip("needs both engines")
	}
	ctx := context.Background()
	var sums []map[int64]uint64
	for _, e := range engines {
		loadSales(t, e, "sales")
		cols, _ := e.Columns(ctx, "sales")
		res, err := e.Query(ctx, "SELECT id, "+e.Dialect().RowHash(cols, tsql.HashOptions{Portable: true})+" FROM sales")
		if err != nil {
			t.Fatal(err)
		}
		m := map[int64]uint64{}
		for _, r := range res.Rows {
			m[tsql.AsInt64(r[0])] = tsql.AsUint64(r[1])
		}
		sums = append(sums, m)
	}
	if diff := cmp.Diff(sums[0], sums[1]); diff != "" {
		t.Errorf("portable hashes differ (-duckdb +clickhouse):\n%s", diff)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, url, want string }{
		{"empty", "", "empty target URL"},
		{"unknown_scheme", "postgres://x", "unknown scheme"},
		{"duckdb_missing_dir", "duckdb:/no/such/dir/x.duckdb", "does not exist"},
		{"clickhouse_unreachable", "clickhouse://127.0.0.1:1/default", "clickhouse://127.0.0.1:1/default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := tsql.Open(ctx, tc.url)
			if err == nil {
				e.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line containing %q", err, tc.want)
			}
		})
	}
}

// TestNormalizeNumbers: a number's canonical text is the same in both engines for every double,
// huge ones, NaN and infinities included, and different numbers keep different texts.
func TestNormalizeNumbers(t *testing.T) {
	ctx := context.Background()
	values := []float64{0, -1.5, 0.1234567, 12345.678, 8.9e12, 9e12, 2e13, -3e13, 1.2345678901234567e17,
		1e19, -1e25, 1.7e308, math.NaN(), math.Inf(1), math.Inf(-1)}
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "x", Kind: tsql.TypeFloat, Nullable: true}}
	var texts []map[int64]string
	for _, e := range sqltest.Engines(t) {
		if err := e.CreateTable(ctx, "nums", cols, "", []string{"id"}); err != nil {
			t.Fatal(err)
		}
		rows := [][]any{{int64(len(values)), nil}}
		for i, v := range values {
			rows = append(rows, []any{int64(i), v})
		}
		if err := e.Insert(ctx, "nums", []string{"id", "x"}, rows); err != nil {
			t.Fatal(err)
		}
		d := e.Dialect()
		res, err := e.Query(ctx, "SELECT id, "+d.Normalize(cols[1], 6)+", "+d.RowHash(cols[1:], tsql.HashOptions{})+" FROM nums")
		if err != nil {
			t.Fatalf("%s: %v", e.Info().Kind, err)
		}
		got := map[int64]string{}
		seen, hashes := map[string]int64{}, map[uint64]int64{}
		for _, r := range res.Rows {
			id := tsql.AsInt64(r[0])
			if r[1] == nil {
				if id != int64(len(values)) {
					t.Errorf("%s: %v normalised to NULL", e.Info().Kind, values[id])
				}
				continue
			}
			s := tsql.AsText(r[1])
			got[id] = s
			if other, dup := seen[s]; dup {
				t.Errorf("%s: %v and %v both normalise to %q", e.Info().Kind, values[other], values[id], s)
			}
			seen[s] = id
			h := tsql.AsUint64(r[2])
			if other, dup := hashes[h]; dup {
				t.Errorf("%s: %v and %v hash alike", e.Info().Kind, values[other], values[id])
			}
			hashes[h] = id
		}
		for id, want := range map[int64]string{0: "0", 1: "-1500000", 3: "12345678000", 6: "200000000000000e13", 7: "-300000000000000e13", 12: "nan", 13: "inf", 14: "-inf"} {
			if got[id] != want {
				t.Errorf("%s: %v normalised to %q, want %q", e.Info().Kind, values[id], got[id], want)
			}
		}
		texts = append(texts, got)
	}
	if len(texts) == 2 {
		if diff := cmp.Diff(texts[0], texts[1]); diff != "" {
			t.Errorf("canonical texts differ (-duckdb +clickhouse):\n%s", diff)
		}
	}
}
