package rules_test

import (
	"testing"

	"trueup/rules"
)

// FuzzParse: any rule file parses or is refused, never a panic. Seeds: testdata/fuzz/FuzzParse
// (the demo project's rules, one of every kind, and broken variants).
func FuzzParse(f *testing.F) {
	f.Add("-- kind: totals\n-- table: daily_revenue\n-- partition: order_date\n-- measure: sum(revenue)\n-- reference: SELECT order_date, sum(amount) FROM orders_raw GROUP BY order_date\n-- tolerance: 0.1%\n")
	f.Fuzz(func(t *testing.T, text string) {
		r, err := rules.Parse("rules/t/fuzz.sql", text)
		if r == nil && err == nil {
			t.Fatal("no rule and no error")
		}
	})
}
