package rules

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// olderManifest is a dbt 1.4 manifest (no attached_node: a relationships test lists its parent
// first among the nodes it depends on), with a not_null test on a column whose name holds a
// space and one whose where: is Jinja.
const olderManifest = `{"metadata": {"dbt_version": "1.4.6"}, "sources": {}, "nodes": {
 "model.shop.orders": {"resource_type": "model", "name": "orders", "unique_id": "model.shop.orders"},
 "model.shop.customers": {"resource_type": "model", "name": "customers", "unique_id": "model.shop.customers"},
 "test.shop.relationships_orders_customer_id.x": {"resource_type": "test", "name": "relationships_orders_customer_id",
  "column_name": "customer_id", "depends_on": {"nodes": ["model.shop.customers", "model.shop.orders"]},
  "test_metadata": {"name": "relationships", "kwargs": {"column_name": "customer_id", "field": "id",
   "model": "{{ get_where_subquery(ref('orders')) }}", "to": "ref('customers')"}}},
 "test.shop.not_null_orders_order_date.x": {"resource_type": "test", "name": "not_null_orders_order_date",
  "column_name": "order date", "depends_on": {"nodes": ["model.shop.orders"]},
  "test_metadata": {"name": "not_null", "kwargs": {"column_name": "order date", "model": "{{ get_where_subquery(ref('orders')) }}"}}},
 "test.shop.not_null_orders_recent.x": {"resource_type": "test", "name": "not_null_orders_recent",
  "column_name": "customer_id", "depends_on": {"nodes": ["model.shop.orders"]}, "config": {"where": "id > {{ var('start') }}"},
  "test_metadata": {"name": "not_null", "kwargs": {"column_name": "customer_id", "model": "{{ get_where_subquery(ref('orders')) }}"}}}
}}`

// TestImportOlderManifest: a relationships test of a manifest without attached_node goes on the
// model it refs, not on its parent (which checked customers against itself and always passed); a
// column whose name holds a space is written quoted, so the rules load and run; a test whose
// where: is Jinja is not imported, with the reason.
func TestImportOlderManifest(t *testing.T) {
	imp, err := ImportDBT("manifest.json", []byte(olderManifest))
	if err != nil {
		t.Fatal(err)
	}
	if len(imp.Files) != 1 || imp.Files[0].Path != "orders/dbt.sql" {
		t.Fatalf("files %+v, want one for orders", imp.Files)
	}
	text := imp.Files[0].Text
	for _, want := range []string{"-- parent: customers", `-- not_null: "order date"`} {
		if !strings.Contains(text, want) {
			t.Errorf("orders/dbt.sql lacks %q:\n%s", want, text)
		}
	}
	if len(imp.Unmapped) != 1 || !strings.Contains(imp.Unmapped[0].Reason, "its where: config is Jinja") {
		t.Errorf("not imported %+v, want the Jinja where", imp.Unmapped)
	}
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		for table, cols := range map[string][]tsql.Column{
			"orders":    {{Name: "id", Kind: tsql.TypeInt}, {Name: "customer_id", Kind: tsql.TypeInt}, {Name: "order date", Kind: tsql.TypeDate, Nullable: true}},
			"customers": {{Name: "id", Kind: tsql.TypeInt}},
		} {
			if err := e.CreateTable(ctx, table, cols, "", []string{"id"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Insert(ctx, "customers", []string{"id"}, [][]any{{int64(1)}}); err != nil {
			t.Fatal(err)
		}
		if err := e.Insert(ctx, "orders", []string{"id", "customer_id", "order date"},
			[][]any{{int64(1), int64(1), day("2026-07-01")}, {int64(2), int64(99), nil}}); err != nil {
			t.Fatal(err)
		}
		targets := TargetMap{Default: "shop", Engines: map[string]tsql.Engine{"shop": e}}
		set, err := Load(ctx, fstest.MapFS{"orders/dbt.sql": {Data: []byte(text)}}, "rules", targets)
		if err != nil {
			t.Fatalf("the imported rules do not load: %v\n%s", err, text)
		}
		got := map[string]string{}
		for _, r := range NewRunner(targets, WithClock(runClock)).Run(ctx, set.Rules).Results {
			got[r.Rule] = string(r.Status) + " " + r.Message
		}
		if !strings.HasPrefix(got["relationships_orders_customer_id"], "fail") || !strings.HasPrefix(got["not_null_orders_order_date"], "fail") {
			t.Errorf("verdicts %v: want the orphan customer 99 and the undated order found", got)
		}
	})
}
