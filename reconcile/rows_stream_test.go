package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

var streamCols = []tsql.Column{
	{Name: "id", Kind: tsql.TypeInt, Nullable: true},
	{Name: "d", Kind: tsql.TypeDate},
	{Name: "v", Kind: tsql.TypeInt},
	{Name: "s", Kind: tsql.TypeString, Nullable: true},
}

// streamRows are random rows over days 1..days of July 2026: ids repeat now and then, a few are
// NULL; new is old with rows dropped, changed, repeated and added, and days missing or new.
func streamRows(r *rand.Rand, n int) (old, new [][]any) {
	row := func(id any, d int) []any {
		var s any = fmt.Sprintf("s%d", r.Intn(4))
		if r.Intn(10) == 0 {
			s = nil
		}
		return []any{id, day("2026-07-01").AddDate(0, 0, d), int64(r.Intn(3)), s}
	}
	for i := range n {
		var id any = int64(r.Intn(n))
		if r.Intn(25) == 0 {
			id = nil
		}
		old = append(old, row(id, i%28)) // 28 days: more than the 20 one-sided days sampled
	}
	for _, o := range old {
		d := o[1]
		switch x := r.Intn(20); {
		case d == day("2026-07-05"): // a day missing from new
		case x == 0: // dropped
		case x == 1: // changed
			c := append([]any(nil), o...)
			c[2] = c[2].(int64) + 1
			new = append(new, c)
		case x == 2: // twice
			new = append(new, o, o)
		default:
			new = append(new, o)
		}
	}
	for i := range n / 10 {
		new = append(new, row(int64(n+i), r.Intn(30))) // days 29 and 30 are new
	}
	return old, new
}

// multisetLines are the "-" lines of rows old holds more times than new, and the "+" lines of
// the reverse: every differing row, as a plain comparison of the two tables finds them.
func multisetLines(old, new [][]any) []string {
	text := func(r []any) string {
		f := reconcile.Fields{}
		for i, c := range streamCols {
			v := r[i]
			if t, ok := v.(interface{ Format(string) string }); ok {
				v = t.Format("2006-01-02")
			}
			f = append(f, reconcile.Field{Name: c.Name, Value: v})
		}
		return f.Text()
	}
	count := map[string]int{}
	for _, r := range old {
		count[text(r)]++
	}
	for _, r := range new {
		count[text(r)]--
	}
	var out []string
	for k, n := range count {
		for ; n > 0; n-- {
			out = append(out, "- "+k)
		}
		for ; n < 0; n++ {
			out = append(out, "+ "+k)
		}
	}
	sort.Strings(out)
	return out
}

// --rows streams every differing row with no cap (samples stay bounded): what it streams is
// exactly the rows one table holds more times than the other, whatever mix of added, removed,
// changed, duplicate-key, NULL-key and one-sided-partition rows they are: in one DuckDB file,
// in ClickHouse, and across the two both ways; with --where, exactly those of the filtered tables.
func TestRowsStreamEveryDifference(t *testing.T) {
	duck := sqltest.DuckDB(t)
	pairs := map[string][2]tsql.Engine{"duckdb": {duck, duck}}
	if ch := sqltest.ClickHouse(t); ch != nil {
		pairs["clickhouse"] = [2]tsql.Engine{ch, ch}
		pairs["duckdb_to_clickhouse"] = [2]tsql.Engine{duck, ch}
		pairs["clickhouse_to_duckdb"] = [2]tsql.Engine{ch, duck}
	}
	names := []string{"id", "d", "v", "s"}
	for seed := int64(1); seed <= 3; seed++ {
		old, new := streamRows(rand.New(rand.NewSource(seed)), 400)
		loaded := [][][]any{old, new}
		where := ""
		if seed == 2 { // filtered: the rows of the tables filtered first
			where = "v < 2 OR s IS NULL"
			keep := func(rows [][]any) (out [][]any) {
				for _, r := range rows {
					if r[2].(int64) < 2 || r[3] == nil {
						out = append(out, r)
					}
				}
				return out
			}
			old, new = keep(old), keep(new)
		}
		want := multisetLines(old, new)
		for name, e := range pairs {
			t.Run(fmt.Sprintf("%s_seed%d", name, seed), func(t *testing.T) {
				ctx := context.Background()
				for i, tb := range []string{"rs_old", "rs_new"} {
					e[i].DropTable(ctx, tb)
					load(t, e[i], tb, streamCols, names, loaded[i])
				}
				var got []string
				s := reconcile.Spec{Old: reconcile.Side{Engine: e[0], Relation: "rs_old"}, New: reconcile.Side{Engine: e[1], Relation: "rs_new"},
					Key: []string{"id"}, Partition: "d", Samples: 1, Where: where,
					Rows: func(l reconcile.RowLine) error {
						if l.Partition != reconcile.ValueText(l.Values.Get("d")) {
							return fmt.Errorf("line of partition %s: %s", l.Partition, l.Values.Text())
						}
						got = append(got, l.Sign+" "+l.Values.Text())
						return nil
					}}
				r := diff(t, s)
				sort.Strings(got)
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("streamed rows (-want +got):\n%s", d)
				}
				// streaming changes what is printed, not what is found
				s.Rows = nil
				if plain := diff(t, s); plain.Rows != r.Rows || !cmp.Equal(plain.Counts(), r.Counts()) {
					t.Errorf("rows %+v %v streaming, %+v %v without", r.Rows, r.Counts(), plain.Rows, plain.Counts())
				}
				if len(r.Samples.Added) > 1 || len(want) < 50 {
					t.Errorf("%d sample added rows for %d differing rows", len(r.Samples.Added), len(want))
				}
			})
		}
	}
}

// A Rows sink that fails (stdout closed) stops the diff with its error, in one engine and
// across two, after the rows it took.
func TestRowsStreamStops(t *testing.T) {
	duck := sqltest.DuckDB(t)
	pairs := map[string][2]tsql.Engine{"duckdb": {duck, duck}}
	if ch := sqltest.ClickHouse(t); ch != nil {
		pairs["duckdb_to_clickhouse"] = [2]tsql.Engine{duck, ch}
	}
	old, new := streamRows(rand.New(rand.NewSource(7)), 300)
	stopped := errors.New("stdout closed")
	for name, e := range pairs {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			for i, tb := range []string{"rss_old", "rss_new"} {
				e[i].DropTable(ctx, tb)
				load(t, e[i], tb, streamCols, []string{"id", "d", "v", "s"}, [][][]any{old, new}[i])
			}
			took := 0
			_, err := reconcile.Diff(ctx, reconcile.Spec{Old: reconcile.Side{Engine: e[0], Relation: "rss_old"},
				New: reconcile.Side{Engine: e[1], Relation: "rss_new"}, Key: []string{"id"}, Partition: "d",
				Rows: func(reconcile.RowLine) error {
					if took == 3 {
						return stopped
					}
					took++
					return nil
				}})
			if !errors.Is(err, stopped) || took != 3 {
				t.Errorf("error %v after %d rows, want %v after 3", err, took, stopped)
			}
		})
	}
}
