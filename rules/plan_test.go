package rules

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

var update = flag.Bool("update", false, "rewrite golden files")

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
		got := b.String()
		path := filepath.Join("testdata", "plan."+e.Dialect().Name()+".golden.sql")
		if *update {
			os.MkdirAll("testdata", 0o755)
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if diff := cmp.Diff(string(want), got); diff != "" {
			t.Errorf("plan differs from %s (-want +got; -update rewrites it):\n%s", path, diff)
		}
		for _, pr := range plan.Rules {
			if len(pr.Queries) == 0 || pr.Judge == "" || pr.Error != "" {
				t.Errorf("%s: queries %v, judge %q, error %q", pr.Rule, pr.Queries, pr.Judge, pr.Error)
			}
		}
	})
}
