package rules

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/fault"
)

func TestParseEveryKind(t *testing.T) {
	tests := []struct {
		name, text string
		check      func(t *testing.T, r *Rule)
	}{
		{"completeness_range", `-- kind: completeness
-- table: orders
-- partition: order_date
-- expect: 2026-06-01..2026-08-31
-- not_null: order_id, customer_id
-- min_rows: 100
-- tags: daily, finance
-- schedule: 0 6 * * *
`, func(t *testing.T, r *Rule) {
			want := &Expect{From: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 8, 31, 0, 0, 0, 0, time.UTC)}
			if diff := cmp.Diff(want, r.Expect); diff != "" {
				t.Errorf("expect (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"order_id", "customer_id"}, r.NotNull); diff != "" {
				t.Errorf("not_null (-want +got):\n%s", diff)
			}
			if r.MinRows != 100 || r.Schedule == nil || !r.HasTag("finance") {
				t.Errorf("min_rows %d, schedule %v, tags %v", r.MinRows, r.Schedule, r.Tags)
			}
		}},
		{"completeness_reference_body", `-- kind: completeness
-- table: orders
-- partition: order_date

SELECT DISTINCT order_date
FROM orders_raw;
`, func(t *testing.T, r *Rule) {
			if r.Reference.Select != "SELECT DISTINCT order_date\nFROM orders_raw" || r.Reference.Line != 5 {
				t.Errorf("reference %q at line %d", r.Reference.Select, r.Reference.Line)
			}
		}},
		{"totals_relative_tolerance", `-- kind: totals
-- rule: matches_raw
-- table: daily_revenue
-- partition: order_date
-- measure: sum(revenue)
-- reference: SELECT order_date, sum(amount) FROM orders_raw GROUP BY order_date
-- tolerance: 0.1%
-- severity: warn
`, func(t *testing.T, r *Rule) {
			if r.Name != "matches_raw" || r.Severity != SeverityWarn || r.Tolerance != (Tolerance{0.001, true}) {
				t.Errorf("name %s severity %s tolerance %+v", r.Name, r.Severity, r.Tolerance)
			}
			if !strings.HasPrefix(r.Reference.Select, "SELECT order_date") {
				t.Errorf("reference %+v", r.Reference)
			}
		}},
		{"distribution_defaults", `-- kind: distribution
-- table: orders
-- partition: order_date
-- dimension: region
-- threshold: 5%
`, func(t *testing.T, r *Rule) {
			if r.Measure != "count(*)" || r.Baseline != 7 || r.Threshold != 0.05 {
				t.Errorf("measure %s baseline %d threshold %v", r.Measure, r.Baseline, r.Threshold)
			}
		}},
		{"relationships_default_parent_column", `-- kind: relationships
-- table: orders
-- column: customer_id
-- parent: customers
`, func(t *testing.T, r *Rule) {
			if r.ParentCol != "customer_id" {
				t.Errorf("parent_column %q", r.ParentCol)
			}
		}},
		{"freshness_days", `-- kind: freshness
-- table: orders
-- column: ordered_at
-- max_age: 1d12h
`, func(t *testing.T, r *Rule) {
			if r.MaxAge != 36*time.Hour {
				t.Errorf("max_age %s", r.MaxAge)
			}
		}},
		{"custom_with_comments", `-- kind: custom
-- A plain comment without a key is fine.
-- description: no negative amounts
SELECT order_id, amount -- trailing comment
FROM orders WHERE amount < 0
`, func(t *testing.T, r *Rule) {
			if r.BodyLine != 4 || !strings.Contains(r.Body, "amount < 0") {
				t.Errorf("body at line %d: %q", r.BodyLine, r.Body)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse("rules/x/"+tt.name+".sql", tt.text)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, r)
		})
	}
}

// TestParseBrokenSet checks that every problem of a rule set comes back at once, each at its
// file and line, in file then line order.
func TestParseBrokenSet(t *testing.T) {
	fsys := fstest.MapFS{
		"orders/a.sql": {Data: []byte(`-- kind: uniqueness
-- table: orders
-- colums: order_id
-- severity: fatal
-- table: orders2
`)},
		"orders/b.sql": {Data: []byte(`-- kind: totals
-- table: daily_revenue
-- partition: order_date
-- measure: sum(revenue); DROP TABLE x
-- reference: SELECT 1; SELECT 2
-- tolerance: -3
-- schedule: 0 25 * * *
`)},
		"orders/c.sql": {Data: []byte(`-- kind: custom
-- rule: a
DELETE FROM orders
`)},
		"orders/d.sql": {Data: []byte(`-- kind: freshness
-- table: orders
-- column: ordered_at
-- max_age: soon
SELECT 1
`)},
		"orders/e.sql": {Data: []byte("-- kind: sameness\n")},
		"orders/f.sql": {Data: []byte("SELECT 1\n")},
		"README.md":    {Data: []byte("not a rule")},
		"orders/g.sql": {Data: []byte("-- kind: distribution\n-- table: orders\n-- partition: d\n-- dimension: region\n-- threshold: 150%\n-- baseline: 0\n")},
		"orders/h.sql": {Data: []byte("-- kind: completeness\n-- table: orders\n-- expect: 2026-08-01..2026-07-01\n")},
		"orders/i.sql": {Data: []byte("-- kind: custom\n-- rule: has space\nSELECT 1\n")},
		"orders/j.sql": {Data: []byte("-- kind: accepted_values\n-- table: orders\n-- column: status\n-- values: 'a', 'b\n-- where: id IN (SELECT id FROM x)\n")},
	}
	_, err := ParseFS(fsys, "rules")
	if !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("want fault.ErrInvalid, got %v", err)
	}
	want := []string{
		"rules/orders/a.sql:1: kind uniqueness needs columns:",
		"rules/orders/a.sql:3: unknown key colums for kind uniqueness (it takes table, columns, partition, grain, nulls, where)",
		"rules/orders/a.sql:4: severity \"fatal\": want error or warn",
		"rules/orders/a.sql:5: duplicate key table (first on line 2)",
		"rules/orders/b.sql:4: measure \"sum(revenue); DROP TABLE x\": a semicolon: want one expression",
		"rules/orders/b.sql:5: reference: more than one statement: want a single SELECT",
		"rules/orders/b.sql:6: tolerance \"-3\": want a number 0 or more, absolute (5) or relative (0.1%)",
		"rules/orders/b.sql:7: schedule: hour: 25 is out of range 0-23",
		"rules/orders/c.sql:2: rule a is already defined in rules/orders/a.sql:1",
		"rules/orders/c.sql:3: SQL starts with DELETE: want a single read-only SELECT or WITH",
		"rules/orders/d.sql:4: max_age \"soon\": want a duration such as 36h, 2d or 1d12h",
		"rules/orders/d.sql:5: kind freshness takes no SQL after the header (for your own SQL use kind: custom)",
		"rules/orders/e.sql:1: kind \"sameness\": want one of completeness, uniqueness, totals, distribution, relationships, freshness, schema, accepted_values, accepted_range, expression, row_count, not_constant, pattern, equality, custom",
		"rules/orders/f.sql:1: missing kind: (one of completeness, uniqueness, totals, distribution, relationships, freshness, schema, accepted_values, accepted_range, expression, row_count, not_constant, pattern, equality, custom)",
		"rules/orders/g.sql:5: threshold \"150%\": want a share change between 0% and 100%, e.g. 5%",
		"rules/orders/g.sql:6: baseline \"0\": want the number of trailing partitions, 1 to 366",
		"rules/orders/h.sql:1: completeness with expected partitions (expect: or a reference) needs partition:",
		"rules/orders/h.sql:3: expect \"2026-08-01..2026-07-01\": ends before it starts",
		"rules/orders/i.sql:2: rule name \"has space\": use letters, digits, _, . and - (rename the file or set rule:)",
		"rules/orders/j.sql:4: values \"'a', 'b\": 'b has no closing quote",
		"rules/orders/j.sql:5: where \"id IN (SELECT id FROM x)\": SELECT in an expression: want one over the table's own columns, such as sum(amount) or status = 'paid', no subquery",
	}
	got := strings.Split(err.Error(), "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestReadOnlySelect(t *testing.T) {
	tests := []struct {
		name, sql, wantErr string
	}{
		{"select", "SELECT 1", ""},
		{"with", "WITH x AS (SELECT 1 AS a) SELECT a FROM x;", ""},
		{"parenthesised", "(SELECT 1) UNION ALL (SELECT 2)", ""},
		{"keyword_in_string", "SELECT 'DROP TABLE x; --' AS s", ""},
		{"keyword_in_comment", "SELECT 1 -- DELETE later\n", ""},
		{"two_statements", "SELECT 1; SELECT 2", "more than one statement"},
		{"insert", "INSERT INTO t SELECT 1", "starts with INSERT"},
		{"hidden_write", "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", "contains DELETE"},
		{"quoted_keyword_column", `SELECT "delete" FROM t`, ""},
		{"attach", "SELECT 1; ATTACH 'x.db'", "more than one statement"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readOnlySelect(tt.sql)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRollupOf(t *testing.T) {
	tests := map[string]string{
		"sum(amount)":                  "sum",
		"count(*)":                     "sum",
		"count()":                      "sum",
		"MIN(order_date)":              "min",
		"max(ts)":                      "max",
		"count(DISTINCT customer_id)":  "",
		"sum(a) / sum(b)":              "",
		"sum(amount) filter (where x)": "",
		"avg(amount)":                  "",
	}
	for expr, want := range tests {
		if got := rollupOf(expr); got != want {
			t.Errorf("rollupOf(%q) = %q, want %q", expr, got, want)
		}
	}
}
