package sql_test

import (
	"context"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestViewCatalog reads, in one query, the views and tables a swap looks at: named ones and
// those starting with a prefix, with the relation each view reads, and nothing else.
func TestViewCatalog(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}}
		for _, table := range []string{"orders__v1", "orders__v2", "ordersx", "other"} {
			if err := e.CreateTable(ctx, table, cols, "", []string{"id"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v2"}, {View: "other_view", Table: "other"}}); err != nil {
			t.Fatal(err)
		}
		got, err := tsql.ViewCatalog(ctx, e, []string{"orders", "missing"}, []string{"orders__v"})
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
		want := []tsql.CatalogEntry{
			{Relation: tsql.Relation{Name: "orders", View: true}, Source: "orders__v2"},
			{Relation: tsql.Relation{Name: "orders__v1"}},
			{Relation: tsql.Relation{Name: "orders__v2"}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("catalog (-want +got):\n%s", diff)
		}
	})
}
