package rules

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"trueup/internal/golden"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestPlanGolden keeps the fused SQL of the shop rules per engine in testdata, so a change to
// what trueup sends is seen in review.
func TestPlanGolden(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		loadShop(t, e)
		targets := TargetMap{Default: "shop", Engines: map[string]tsql.Engine{"shop": e}}
		set, err := Load(ctx, shopRules, "rules", targets)
		if err != nil {
			t.Fatal(err)
		}
		plan := NewRunner(targets).Plan(set.Rules)
		var b strings.Builder
		for i, q := range plan.Queries {
			fmt.Fprintf(&b, "-- query %d\n%s;\n\n", i+1, q.SQL)
		}
		golden.Check(t, "plan."+e.Dialect().Name()+".golden.sql", b.String())
		for _, pr := range plan.Rules {
			if len(pr.Queries) == 0 || pr.Judge == "" || pr.Error != "" {
				t.Errorf("%s: queries %v, judge %q, error %q", pr.Rule, pr.Queries, pr.Judge, pr.Error)
			}
		}
	})
}
