package sql_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestDropStagingTables drops the staging tables of one table and nothing else: not another
// version's (orders__v20 beside orders__v2), not a view, not a name that only looks alike.
func TestDropStagingTables(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}}
		for _, name := range []string{"orders__v2", "orders__v2__stage_0123456789ab", "orders__v2__stage_abcdefabcdef",
			"orders__v20__stage_0123456789ab", "orders__v2__stage_notstaging"} {
			if err := e.CreateTable(ctx, name, cols, "", []string{"id"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Exec(ctx, "CREATE VIEW "+e.Dialect().Quote("orders__v2__stage_fedcba987654")+" AS SELECT * FROM orders__v2"); err != nil {
			t.Fatal(err)
		}
		dropped, err := tsql.DropStagingTables(ctx, e, "orders__v2")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"orders__v2__stage_0123456789ab", "orders__v2__stage_abcdefabcdef"}, dropped); diff != "" {
			t.Errorf("dropped (-want +got):\n%s", diff)
		}
		rels, err := e.Relations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, r := range rels {
			left = append(left, r.Name)
		}
		want := []string{"orders__v2", "orders__v20__stage_0123456789ab", "orders__v2__stage_fedcba987654", "orders__v2__stage_notstaging"}
		if diff := cmp.Diff(want, left); diff != "" {
			t.Errorf("left (-want +got):\n%s", diff)
		}
	})
}
