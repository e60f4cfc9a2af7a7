package sql_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// Describe gives a query's columns as Columns gives a table's, without running the query: the
// columns of SELECT * FROM a table are the table's, a bound parameter is typed, and the rows
// are not read (a query that would fail on a row does not fail).
func TestDescribe(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		loadSales(t, e, "sales")
		d := e.Dialect()
		table, err := e.Columns(ctx, "sales")
		if err != nil {
			t.Fatal(err)
		}
		start, arg := d.Bind(tsql.Date(day("2026-07-10")))
		got, err := e.Describe(ctx, "SELECT * FROM sales WHERE d >= "+start+" -- a trailing comment", arg)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(table, got); diff != "" {
			t.Errorf("columns of SELECT * (-table +query):\n%s", diff)
		}
		got, err = e.Describe(ctx, "SELECT id, "+d.ToText("id")+" AS id_text, "+d.ToFloat("amount")+" AS amount FROM sales")
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]tsql.Type{}
		for _, c := range got {
			kinds[c.Name] = c.Kind
		}
		if want := map[string]tsql.Type{"id": tsql.TypeInt, "id_text": tsql.TypeString, "amount": tsql.TypeFloat}; !cmp.Equal(want, kinds) {
			t.Errorf("kinds %v, want %v (%+v)", kinds, want, got)
		}
		if _, err := e.Describe(ctx, "SELECT nope FROM sales"); err == nil {
			t.Error("a query naming a missing column was described")
		}
	})
}
