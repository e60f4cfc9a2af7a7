package backfill_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/backfill"
)

func TestValidationFailures(t *testing.T) {
	pct := 0.0
	for _, tc := range []struct {
		name string
		v    backfill.Validation
		want []string
	}{
		{"passed", backfill.Validation{Passed: true, Rules: []backfill.RuleCheck{{Rule: "r", Severity: "error", Status: "fail"}}}, nil},
		{"rules", backfill.Validation{Rules: []backfill.RuleCheck{
			{Rule: "every_day", Table: "orders__v2", Severity: "error", Status: "fail", Message: "2 days have no rows"},
			{Rule: "fresh", Table: "orders__v2", Severity: "warn", Status: "fail", Message: "stale"},
			{Rule: "unique", Table: "orders__v2", Severity: "error", Status: "error", Message: "no column id"},
			{Rule: "ok", Table: "orders__v2", Severity: "error", Status: "pass"},
		}}, []string{
			"rule every_day on orders__v2 failed: 2 days have no rows",
			"rule unique on orders__v2 could not run: no column id",
		}},
		{"tables", backfill.Validation{Tables: []backfill.TableCheck{
			{New: "orders__v2", Expect: "inside scope rows +0..0%", Changed: []backfill.PartitionSummary{
				{Partition: "2026-07-10", OldCount: 55, NewCount: 58, PctChange: &pct, Verdict: "unexpected", Measure: "sum(amount)", OldTotal: 5148.74, NewTotal: 5339.06},
				{Partition: "2026-07-11", OldCount: 45, NewCount: 45, Verdict: "expected"},
			}},
			{New: "daily_revenue__v2", Expect: "outside scope identical", ExpectationsMet: true},
		}}, []string{
			"orders__v2 does not meet its expectations (inside scope rows +0..0%): 1 partition unexpected: 2026-07-10 (rows 55 → 58, sum(amount) 5148.74 → 5339.06)",
		}},
		{"errors", backfill.Validation{Errors: []string{"validate: nope is neither a rule nor a tag"}}, []string{"validate: nope is neither a rule nor a tag"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, tc.v.Failures()); d != "" {
				t.Errorf("failures (-want +got):\n%s", d)
			}
		})
	}
}
