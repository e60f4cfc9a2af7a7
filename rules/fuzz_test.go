package rules_test

import (
	"testing"

	"trueup/rules"
)

// FuzzParse: any rule file parses or is refused, never a panic. Seeds: testdata/fuzz/FuzzParse
// (the demo project's rules, one of every kind, and broken variants).
func FuzzParse(f *testing.F) {
	f.Add("-- kind: totals\n-- table: daily_revenue\n-- partition: order_date\n-- measure: sum(revenue)\n-- reference: SELECT order_date, sum(amount) FROM orders_raw GROUP BY order_date\n-- tolerance: 0.1%\n")
	f.Add("-- rule: a\n-- kind: accepted_values\n-- table: t\n-- column: s\n-- values: 'x', -1.5, true\n-- where: id > 0\n-- warn_if: >= 1%\n-- ---\n-- rule: b\n-- kind: schema\n-- columns: id DECIMAL(18,2), name\n-- ordered: true\n-- ---\n-- rule: c\n-- kind: row_count\n-- max: compare_to\n-- compare_to: u\n")
	f.Add("-- rule: p\n-- kind: pattern\n-- table: t\n-- column: s\n-- regex: ^(a|b)+$\n-- negate: true\n-- ---\n-- rule: f\n-- kind: freshness\n-- column: ts\n-- max_age: 1d\n-- group_by: a, b\n-- allow_future: false\n")
	f.Fuzz(func(t *testing.T, text string) {
		r, err := rules.Parse("rules/t/fuzz.sql", text)
		if r == nil && err == nil {
			t.Fatal("no rule and no error")
		}
	})
}
