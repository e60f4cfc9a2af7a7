package rules

import (
	"strings"
	"testing"

	"trueup/fault"
)

// layoutManifest holds what dbt projects lay out and write as they are: one alias in two
// schemas (staging and marts), two versions of a model, an integer argument beyond a float's
// precision, and a test whose entry has a field of another type than dbt writes.
const layoutManifest = `{"nodes": {
 "model.shop.stg_customers": {"resource_type": "model", "name": "stg_customers", "alias": "customers", "schema": "staging", "unique_id": "model.shop.stg_customers"},
 "model.shop.dim_customers": {"resource_type": "model", "name": "dim_customers", "alias": "customers", "schema": "marts", "unique_id": "model.shop.dim_customers"},
 "model.shop.orders.v1": {"resource_type": "model", "name": "orders", "alias": "orders_v1", "version": 1, "schema": "marts", "unique_id": "model.shop.orders.v1"},
 "model.shop.orders.v2": {"resource_type": "model", "name": "orders", "alias": "orders_v2", "version": 2, "schema": "marts", "unique_id": "model.shop.orders.v2"},
 "test.shop.unique_stg_customers_id.x": {"resource_type": "test", "name": "unique_stg_customers_id", "column_name": "id",
  "attached_node": "model.shop.stg_customers", "test_metadata": {"name": "unique", "kwargs": {"column_name": "id"}}},
 "test.shop.unique_dim_customers_id.x": {"resource_type": "test", "name": "unique_dim_customers_id", "column_name": "id",
  "attached_node": "model.shop.dim_customers", "test_metadata": {"name": "unique", "kwargs": {"column_name": "id"}}},
 "test.shop.not_null_orders_v1_id.x": {"resource_type": "test", "name": "not_null_orders_v1_id", "column_name": "id",
  "attached_node": "model.shop.orders.v1", "test_metadata": {"name": "not_null", "kwargs": {"column_name": "id"}}},
 "test.shop.not_null_orders_v2_id.x": {"resource_type": "test", "name": "not_null_orders_v2_id", "column_name": "id",
  "attached_node": "model.shop.orders.v2", "test_metadata": {"name": "not_null", "kwargs": {"column_name": "id"}}},
 "test.shop.big_id_range.x": {"resource_type": "test", "name": "big_id_range", "column_name": "id",
  "attached_node": "model.shop.orders.v2", "test_metadata": {"name": "accepted_range", "namespace": "dbt_utils",
   "kwargs": {"column_name": "id", "max_value": 9007199254740993}}},
 "test.shop.odd_severity.x": {"resource_type": "test", "name": "odd_severity", "column_name": "id",
  "attached_node": "model.shop.orders.v2", "config": {"severity": 5}, "test_metadata": {"name": "not_null", "kwargs": {"column_name": "id"}}}
}}`

// TestImportKeepsTheLayout: the two customers tables are told apart by their schemas (only
// there, where the name alone is two tables), each version of orders gets the folder of its
// own name, 9007199254740993 is written as dbt wrote it, and the test whose entry does not
// read is named with the field, the others coming over.
func TestImportKeepsTheLayout(t *testing.T) {
	imp, err := ImportDBT("target/manifest.json", []byte(layoutManifest))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range imp.Files {
		files[f.Path] = f.Text
	}
	for path, want := range map[string]string{
		"stg_customers/dbt.sql": "-- table: staging.customers\n",
		"dim_customers/dbt.sql": "-- table: marts.customers\n",
		"orders_v1/dbt.sql":     "-- table: orders_v1\n",
		"orders_v2/dbt.sql":     "-- max: 9007199254740993\n",
	} {
		if !strings.Contains(files[path], want) {
			t.Errorf("%s lacks %q:\n%s", path, want, files[path])
		}
	}
	if len(files) != 4 {
		t.Errorf("files %v, want the four above", files)
	}
	if len(imp.Unmapped) != 1 || imp.Unmapped[0].Test != "test.shop.odd_severity.x" ||
		imp.Unmapped[0].Reason != "its entry in the manifest does not read: config.severity is a number, want text" {
		t.Errorf("not imported: %+v", imp.Unmapped)
	}
}

// TestImportRefusesABrokenManifest: a manifest that is not JSON is refused at its line; one of
// another shape says what it is, in JSON's words.
func TestImportRefusesABrokenManifest(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"{\"nodes\": {\n \"a\": tru\n}}", "m.json:2: not JSON: invalid character '\\n' in literal true (expecting 'e')"},
		{"[]", "m.json:1: not a dbt manifest (target/manifest.json): it is a list, want an object"},
		{`{"nodes": {"model.a": {"name": 1}}}`, "m.json:1: model.a does not read: name is a number, want text"},
	} {
		_, err := ImportDBT("m.json", []byte(tc.text))
		if fault.Of(err) != fault.Invalid || err.Error() != tc.want {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
	}
}
