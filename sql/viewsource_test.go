package sql

import (
	"strings"
	"testing"
)

// TestViewSource: the relation a plain SELECT * view reads is found whatever its quoting — the
// definitions DuckDB and ClickHouse store for names that need quotes — and views of another
// shape are refused.
func TestViewSource(t *testing.T) {
	for _, tc := range []struct{ name, def, want string }{
		{"plain", `CREATE VIEW orders AS SELECT * FROM orders__v1;`, "orders__v1"},
		{"duckdb_quoted", `CREATE VIEW "order-lines" AS SELECT * FROM "order-lines__v1";`, "order-lines__v1"},
		{"duckdb_doubled_quote", `CREATE VIEW "a""b" AS SELECT * FROM main."a""b__v2";`, `a"b__v2`},
		{"non_ascii", `CREATE VIEW umsätze AS SELECT * FROM umsätze__v3`, "umsätze__v3"},
		{"clickhouse_database_needs_quotes", "CREATE VIEW `zz-exp-views`.orders (`id` Int64) AS SELECT * FROM `zz-exp-views`.orders__v1", "orders__v1"},
		{"clickhouse_backslash_escape", "CREATE VIEW db.`a\\`b` AS SELECT * FROM db.`a\\`b__v1`", "a`b__v1"},
		{"trailing_comment", "CREATE VIEW o AS SELECT * FROM o__v1 -- by hand\n", "o__v1"},
		{"lower_case", "create view o as select * from o__v1", "o__v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := viewSource(tc.def)
			if err != nil || got != tc.want {
				t.Errorf("viewSource(%s) = %q, %v; want %q", tc.def, got, err, tc.want)
			}
		})
	}
	for _, def := range []string{
		`CREATE VIEW o AS SELECT id FROM o__v1`,
		`CREATE VIEW o AS SELECT * FROM o__v1 WHERE id > 1`,
		`CREATE VIEW o AS SELECT * FROM o__v1 JOIN p__v1 USING (id)`,
		`CREATE VIEW o AS SELECT * FROM (SELECT * FROM o__v1)`,
		`CREATE VIEW o AS SELECT * FROM range(3)`,
	} {
		if got, err := viewSource(def); err == nil || !strings.Contains(err.Error(), "not a plain SELECT * FROM relation") {
			t.Errorf("viewSource(%s) = %q, %v; want a refusal", def, got, err)
		}
	}
}
