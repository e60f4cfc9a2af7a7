package rules

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/fixtures"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestDemoRules runs the rules the demo project ships over the demo warehouse: the totals rule
// comparing daily_revenue with orders_raw fails on exactly the nine days of the planted bug,
// and every other error-severity rule passes.
func TestDemoRules(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		if err := fixtures.Warehouse(ctx, e, fixtures.Options{}); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := fixtures.WriteProject(dir, e.Info().Target); err != nil {
			t.Fatal(err)
		}
		targets := TargetMap{Default: "warehouse", Engines: map[string]tsql.Engine{"warehouse": e}}
		set, err := Load(ctx, os.DirFS(filepath.Join(dir, "rules")), "rules", targets)
		if err != nil {
			t.Fatal(err)
		}
		// a day after the demo data ends, so the freshness rule passes too
		clock := func() time.Time { return fixtures.End.Add(6 * time.Hour) }
		run := NewRunner(targets, WithClock(clock)).Run(ctx, set.Rules)
		var nine []string
		for d := fixtures.BugStart; d.Before(fixtures.BugEnd); d = d.AddDate(0, 0, 1) {
			nine = append(nine, d.Format("2006-01-02"))
		}
		for _, r := range run.Results {
			switch {
			case r.Rule == "matches_raw":
				if r.Status != StatusFail || cmp.Diff(nine, r.FailingPartitions) != "" {
					t.Errorf("matches_raw: %s on %v, want fail on %v (%s)", r.Status, r.FailingPartitions, nine, r.Message)
				}
			case r.Status != StatusPass:
				t.Errorf("%s (%s): %s %s, sample %v", r.Rule, r.Kind, r.Status, r.Message, r.Sample)
			}
		}
		if len(run.Results) < 6 {
			t.Errorf("the demo ships %d rules, want at least the six of the issue", len(run.Results))
		}
		t.Logf("%d demo rules in %d queries", len(run.Results), run.Queries)
	})
}
