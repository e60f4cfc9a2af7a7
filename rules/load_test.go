package rules

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"trueup/fault"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestLoadReportsEverything: parse problems and problems found against the engine (missing
// relations and columns, SQL that does not prepare or returns the wrong columns, unknown
// targets) come back together.
func TestLoadReportsEverything(t *testing.T) {
	fsys := fstest.MapFS{
		"a.sql": {Data: []byte("-- kind: uniqueness\n-- table: nowhere\n-- columns: id\n")},
		"b.sql": {Data: []byte("-- kind: uniqueness\n-- table: orders\n-- columns: id, nope\n")},
		"c.sql": {Data: []byte("-- kind: totals\n-- table: orders\n-- partition: d\n-- measure: sum(no_such_column)\n-- reference: raw\n")},
		"d.sql": {Data: []byte("-- kind: totals\n-- table: orders\n-- partition: d\n-- measure: sum(amount)\n-- reference: SELECT d, sum(amount) FROM no_such_table GROUP BY d\n")},
		"e.sql": {Data: []byte("-- kind: freshness\n-- table: orders\n-- column: region\n-- max_age: 1d\n")},
		"f.sql": {Data: []byte("-- kind: custom\n-- target: elsewhere\nSELECT 1\n")},
		"g.sql": {Data: []byte("-- kind: custom\n\nSELECT * FROM no_such_table\n")},
		"h.sql": {Data: []byte("-- kind: relationships\n-- table: orders\n-- column: customer_id\n-- parent: customers\n-- parent_column: id\n")},
		"i.sql": {Data: []byte("-- kind: schema\n-- table: orders\n-- severity: loud\n")},
		"j.sql": {Data: []byte("-- kind: completeness\n-- table: orders\n-- partition: region\n-- expect: 2026-07-01..2026-07-10\n")},
		// a custom rule's partition names a column of its SELECT's result
		"k.sql": {Data: []byte("-- kind: custom\n-- partition: order_date\nSELECT id, d FROM orders WHERE amount < 0\n")},
		// a totals reference SELECT returns the partition and the value, in the header or after it
		"l.sql": {Data: []byte("-- kind: totals\n-- table: orders\n-- partition: d\n-- measure: sum(amount)\n-- reference: SELECT d FROM raw\n")},
		"m.sql": {Data: []byte("-- kind: totals\n-- table: orders\n-- partition: d\n-- measure: sum(amount)\n\nSELECT d\nFROM raw\n")},
		// the same SELECTs are right where they belong
		"n.sql": {Data: []byte("-- kind: custom\n-- partition: d\nSELECT id, d FROM orders WHERE amount < 0\n")},
		"o.sql": {Data: []byte("-- kind: completeness\n-- table: orders\n-- partition: d\n-- reference: SELECT d FROM raw\n")},
		// an expression cut short
		"p.sql": {Data: []byte("-- kind: expression\n-- table: orders\n-- expression: amount >\n")},
	}
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		loadShop(t, e)
		targets := TargetMap{Default: "shop", Engines: map[string]tsql.Engine{"shop": e}}
		_, err := Load(context.Background(), fsys, "rules", targets)
		var le *LoadError
		if !errors.As(err, &le) || !errors.Is(err, fault.ErrInvalid) {
			t.Fatalf("want a *LoadError, got %v", err)
		}
		want := []string{
			"rules/a.sql:2: table nowhere does not exist in ",
			"rules/b.sql:3: columns nope is not a column of orders (it has id, d, customer_id, region, amount, ts)",
			"rules/c.sql:4: measure does not prepare in ",
			"rules/d.sql:5: reference does not prepare in ",
			"rules/e.sql:3: freshness needs a date or timestamp column; region is ",
			`rules/f.sql:2: unknown target "elsewhere" (have shop)`,
			"rules/g.sql:3: the SELECT does not prepare in ",
			"rules/h.sql:5: parent_column id is not a column of customers (it has customer_id)",
			`rules/i.sql:3: severity "loud": want error or warn`,
			"rules/j.sql:4: expect needs a date or timestamp partition; region is ",
			"rules/k.sql:2: partition order_date is not a column of the SELECT's result (it has id, d)",
			"rules/l.sql:5: the reference SELECT returns 1 column (d); want the partition and the value",
			"rules/m.sql:6: the reference SELECT returns 1 column (d); want the partition and the value",
			"rules/p.sql:3: expression does not prepare in ",
		}
		if len(le.Problems) != len(want) {
			t.Errorf("got %d problems, want %d:\n%v", len(le.Problems), len(want), err)
		}
		for i, p := range le.Problems {
			if i < len(want) && !strings.HasPrefix(p.String(), want[i]) {
				t.Errorf("problem %d:\n got %s\nwant %s…", i, p, want[i])
			}
		}
		// said of the expression as written, not at the ")" trueup closed it with
		if last := le.Problems[len(le.Problems)-1].String(); e.Info().Kind == "duckdb" && !strings.HasSuffix(last, "syntax error at end of input") {
			t.Errorf("the expression cut short: %s", last)
		}
	})
}
