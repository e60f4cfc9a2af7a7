package backfill

import (
	"fmt"
	"strconv"
	"strings"

	"trueup/reconcile"
	"trueup/rules"
)

// Why a run's validation did not pass, in the operator's words, for backfill run and status (text
// and JSON) and the backfill's page: the ledger keeps the evidence (Validation), this reads it.

// Failures say why v did not pass, one reason each: an error-severity rule that failed or could
// not run on the new versions, a table whose diff with live misses its expectations (with the
// partitions that missed them), a step that could not run. None when it passed.
func (v *Validation) Failures() []string {
	if v.Passed {
		return nil
	}
	var out []string
	for _, r := range v.Rules {
		if r.Severity == string(rules.SeverityWarn) || r.Status == string(rules.StatusPass) {
			continue
		}
		what := "failed"
		if r.Status != string(rules.StatusFail) {
			what = "could not run"
		}
		line := fmt.Sprintf("rule %s on %s %s", r.Rule, r.Table, what)
		if r.Message != "" {
			line += ": " + r.Message
		}
		out = append(out, line)
	}
	for _, t := range v.Tables {
		if t.ExpectationsMet {
			continue
		}
		line := fmt.Sprintf("%s does not meet its expectations (%s)", t.New, t.Expect)
		var missed []string
		for _, p := range t.Changed {
			if p.Verdict == reconcile.VerdictUnexpected {
				missed = append(missed, p.String())
			}
		}
		if len(missed) > 0 {
			line += fmt.Sprintf(": %d %s unexpected: %s", len(missed), map[bool]string{true: "partition", false: "partitions"}[len(missed) == 1], abbreviate(missed, 5))
		}
		out = append(out, line)
	}
	return append(out, v.Errors...)
}

// String is how a changed partition moved: "2026-07-12 (rows 940 → 990, sum(amount) 1200.5 → 1260)".
func (p PartitionSummary) String() string {
	s := fmt.Sprintf("%s (rows %d → %d", p.Partition, p.OldCount, p.NewCount)
	if p.Measure != "" {
		s += fmt.Sprintf(", %s %s → %s", p.Measure, strconv.FormatFloat(float64(p.OldTotal), 'f', -1, 64), strconv.FormatFloat(float64(p.NewTotal), 'f', -1, 64))
	}
	return s + ")"
}

func abbreviate(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(", … (%d more)", len(items)-n)
}
