package sql_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestMaterializeAndStoredHash covers the two pieces reconcile asks of a dialect: a subquery read
// twice in one statement, and row hashes of values as stored.
func TestMaterializeAndStoredHash(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		d := e.Dialect()
		loadSales(t, e, "sales")

		t.Run("materialized_subquery_read_twice", func(t *testing.T) {
			with, ref := d.Materialize("picked", "SELECT id FROM sales WHERE id >= 3")
			// ClickHouse resolves a column name to a same-named alias in the same SELECT, and its ORDER BY
			// binds to the last SELECT of a UNION: keep names distinct and sort outside.
			q := with + "SELECT x FROM (SELECT id AS x FROM sales WHERE id IN (SELECT id FROM " + ref + ") UNION ALL " +
				"SELECT id + 10 AS x FROM sales WHERE id IN (SELECT id FROM " + ref + ")) AS u ORDER BY x"
			if got := ids(t, e, q); !cmp.Equal(got, []int64{3, 4, 13, 14}) {
				t.Errorf("got %v", got)
			}
		})

		t.Run("stored_hash_matches_same_types_and_sees_changes", func(t *testing.T) {
			if err := e.CreateTableAs(ctx, "sales_copy", "d", []string{"id"}, "SELECT * FROM sales"); err != nil {
				t.Fatal(err)
			}
			cols, _ := e.Columns(ctx, "sales")
			var names []string
			for _, c := range cols {
				names = append(names, c.Name)
			}
			opt := tsql.HashOptions{Stored: names}
			sum := func(q string) uint64 {
				res, err := e.Query(ctx, "SELECT "+d.HashSum(d.RowHash(cols, opt))+" FROM ("+q+") AS s")
				if err != nil {
					t.Fatal(err)
				}
				return tsql.AsUint64(res.Rows[0][0])
			}
			a, b := sum("SELECT * FROM sales"), sum("SELECT * FROM sales_copy")
			c := sum("SELECT id, d, name, amount, score + 0.001 AS score, ts FROM sales")
			if a != b || a == 0 {
				t.Errorf("copies hash differently: %d vs %d", a, b)
			}
			if a == c {
				t.Error("a changed score left the sum unchanged")
			}
		})

		t.Run("stored_hash_tells_apart_what_differs", func(t *testing.T) {
			// Rows that differ in one value only, of every kind the stored hash takes: each must
			// hash apart from the base row, and a copy of the base row alike.
			cols := []tsql.Column{
				{Name: "id", Kind: tsql.TypeInt},
				{Name: "s", Kind: tsql.TypeString, Nullable: true},
				{Name: "t", Kind: tsql.TypeString},
				{Name: "n", Kind: tsql.TypeInt, Nullable: true},
				{Name: "x", Type: "DECIMAL(18,2)", Kind: tsql.TypeDecimal, Nullable: true},
				{Name: "f", Kind: tsql.TypeFloat},
				{Name: "d", Kind: tsql.TypeDate},
				{Name: "ts", Kind: tsql.TypeTimestamp},
			}
			names := make([]string, len(cols))
			for i, c := range cols {
				names[i] = c.Name
			}
			day := time.Date(2026, 7, 10, 0, 0, 0, 0, time.UTC)
			base := []any{int64(1), "a\x1f", "b", int64(0), 12.30, 1.5, day, day.Add(time.Hour)}
			variants := map[string]func(r []any){
				"copy":              func([]any) {},
				"null_not_empty":    func(r []any) { r[1] = nil },
				"separator_moved":   func(r []any) { r[1], r[2] = "a", "\x1fb" },
				"nul_in_text":       func(r []any) { r[2] = "b\x00" },
				"null_not_zero":     func(r []any) { r[3] = nil },
				"decimal_cent":      func(r []any) { r[4] = 12.31 },
				"decimal_null":      func(r []any) { r[4] = nil },
				"float":             func(r []any) { r[5] = 1.25 },
				"date":              func(r []any) { r[6] = day.AddDate(0, 0, 1) },
				"timestamp_seconds": func(r []any) { r[7] = day.Add(time.Hour + time.Second) },
			}
			opt := tsql.HashOptions{Stored: names}
			hashOf := func(name string, row []any) uint64 {
				if err := e.CreateTable(ctx, name, cols, "", []string{"id"}); err != nil {
					t.Fatal(err)
				}
				if err := e.Insert(ctx, name, names, [][]any{row}); err != nil {
					t.Fatal(err)
				}
				got, err := e.Columns(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				res, err := e.Query(ctx, "SELECT "+d.HashSum(d.RowHash(got, opt))+" FROM "+d.QuoteRelation(name))
				if err != nil {
					t.Fatal(err)
				}
				return tsql.AsUint64(res.Rows[0][0])
			}
			want := hashOf("h_base", base)
			if want == 0 {
				t.Fatal("the base row hashes to 0 (a NULL hash sums to nothing)")
			}
			for name, change := range variants {
				row := slices.Clone(base)
				change(row)
				if got := hashOf("h_"+name, row); (got == want) != (name == "copy") {
					t.Errorf("%s: hash %d, base row %d", name, got, want)
				}
			}
		})

		t.Run("normalised_hash_equates_decimal_and_double", func(t *testing.T) {
			dec := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "x", Type: "DECIMAL(18,2)", Kind: tsql.TypeDecimal}}
			dbl := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "x", Kind: tsql.TypeFloat}}
			for name, cols := range map[string][]tsql.Column{"h_dec": dec, "h_dbl": dbl} {
				if err := e.CreateTable(ctx, name, cols, "", []string{"id"}); err != nil {
					t.Fatal(err)
				}
				if err := e.Insert(ctx, name, []string{"id", "x"}, [][]any{{int64(1), 12.30}, {int64(2), 0.07}}); err != nil {
					t.Fatal(err)
				}
			}
			hash := func(table string) uint64 {
				cols, _ := e.Columns(ctx, table)
				res, err := e.Query(ctx, "SELECT "+d.HashSum(d.RowHash(cols, tsql.HashOptions{}))+" FROM "+d.QuoteRelation(table))
				if err != nil {
					t.Fatal(err)
				}
				return tsql.AsUint64(res.Rows[0][0])
			}
			if a, b := hash("h_dec"), hash("h_dbl"); a != b {
				t.Errorf("DECIMAL and DOUBLE of equal values hash differently: %d vs %d", a, b)
			}
		})
	})
}
