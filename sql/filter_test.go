package sql

import "testing"

func TestSimpleFilter(t *testing.T) {
	for _, c := range []struct {
		name, text, rel, cond string
	}{
		{"columns", "SELECT order_id, order_date, amount FROM orders WHERE amount < 0", "orders", "amount < 0"},
		{"star_quoted", "select * from \"Orders\" where \"amount\" is null or region = 'x;y'\n;", "Orders", "\"amount\" is null or region = 'x;y'"},
		{"functions_in_condition", "SELECT id FROM t WHERE coalesce(a, 0) > length(b) -- trailing comment\n", "t", "coalesce(a, 0) > length(b)"},
		{"expression_in_list", "SELECT amount * 2 FROM orders WHERE amount < 0", "", ""},
		{"alias_in_list", "SELECT amount AS a FROM orders WHERE amount < 0", "", ""},
		{"aggregate", "SELECT count(*) FROM orders WHERE amount < 0", "", ""},
		{"no_where", "SELECT id FROM orders", "", ""},
		{"table_alias", "SELECT id FROM orders o WHERE o.amount < 0", "", ""},
		{"qualified_relation", "SELECT id FROM main.orders WHERE amount < 0", "", ""},
		{"join", "SELECT id FROM orders WHERE amount < 0 AND id IN (SELECT id FROM refunds)", "", ""},
		{"group", "SELECT id FROM orders WHERE amount < 0 GROUP BY id", "", ""},
		{"limit", "SELECT id FROM orders WHERE amount < 0 LIMIT 5", "", ""},
		{"distinct", "SELECT DISTINCT id FROM orders WHERE amount < 0", "", ""},
		{"union", "SELECT id FROM orders WHERE amount < 0 UNION ALL SELECT id FROM orders WHERE id < 0", "", ""},
		{"window", "SELECT id FROM orders WHERE row_number() OVER () > 1", "", ""},
		{"with", "WITH x AS (SELECT 1) SELECT id FROM orders WHERE amount < 0", "", ""},
		{"two_statements", "SELECT id FROM orders WHERE amount < 0; SELECT 1", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rel, cond, ok := SimpleFilter(c.text)
			if ok != (c.rel != "") || rel != c.rel || cond != c.cond {
				t.Errorf("SimpleFilter(%q) = %q, %q, %v; want %q, %q", c.text, rel, cond, ok, c.rel, c.cond)
			}
		})
	}
}
