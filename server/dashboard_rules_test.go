package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/PuerkitoBio/goquery"

	"trueup/monitor"
	"trueup/rules"
	"trueup/server"
)

// kindStale is the kind of builtInRunner's own results, as app's stale-writer check adds them.
const kindStale rules.Kind = "written_after_live"

// builtInRunner is a rules runner that adds, as app's stale-writer check does, a failing
// error-severity result of its own beside the rules' ("sales.written_after_live").
type builtInRunner struct{ *rules.Runner }

func (r builtInRunner) Run(ctx context.Context, rs []*rules.Rule) *rules.Run {
	run := r.Runner.Run(ctx, rs)
	run.Results = append(run.Results, rules.Result{Rule: "sales.written_after_live", Kind: kindStale, Severity: rules.SeverityError,
		Status: rules.StatusFail, Violations: 3, FailingPartitions: []string{"2026-07-02"}, Sample: []rules.Row{}, Target: "w", Table: "sales",
		At: time.Now().UTC(), Message: "sales__v1 changed after it stopped being live: 2026-07-02 +3 rows not visible to readers"})
	return run
}

// TestDashboardFailsWhatCheckFails: the dashboard's failing rules are exactly the
// error-severity results a check reports as failed, the built-in stale-writer result among
// them, and its warnings are listed apart, not counted as failures.
func TestDashboardFailsWhatCheckFails(t *testing.T) {
	set, targets, l := salesRules(t, "'2026-07-02'", fstest.MapFS{
		"sales/daily_totals.sql": {Data: []byte("-- kind: totals\n-- table: sales\n-- partition: d\n-- measure: sum(amount)\n-- reference: sales_ref\n")},
		"sales/big.sql":          {Data: []byte("-- kind: custom\n-- severity: warn\nSELECT * FROM sales WHERE amount >= 10\n")},
		"sales/positive.sql":     {Data: []byte("-- kind: custom\nSELECT * FROM sales WHERE amount <= 0\n")},
	})
	m := monitor.New(set.Rules, builtInRunner{rules.NewRunner(targets)}, rules.NewStore(l), monitor.NewLedgerSlots(l), monitor.WithBuiltIn(kindStale))
	ts := serve(t, server.Options{Rules: m})

	// What `trueup --server URL check` runs and reports.
	resp, body := call(t, "POST", ts.URL+"/api/v1/check", "", `{}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("check: %d %s", resp.StatusCode, body)
	}
	var run rules.Run
	if err := json.Unmarshal([]byte(body), &run); err != nil {
		t.Fatal(err)
	}
	var failed, warned []string
	for _, r := range run.Results {
		switch {
		case r.Severity == rules.SeverityError && r.Status != rules.StatusPass:
			failed = append(failed, r.Rule)
		case r.Severity == rules.SeverityWarn && r.Status == rules.StatusFail:
			warned = append(warned, r.Rule)
		}
	}
	slices.Sort(failed)
	if strings.Join(failed, " ") != "daily_totals sales.written_after_live" || strings.Join(warned, " ") != "big" {
		t.Fatalf("the check itself failed %q and warned of %q: the fixture is off", failed, warned)
	}

	doc := getPage(t, ts.URL+"/", http.StatusOK)
	names := func(s *goquery.Selection) []string {
		var out []string
		s.Each(func(_ int, li *goquery.Selection) { out = append(out, li.AttrOr("data-name", "")) })
		return out
	}
	rulesBox := doc.Find(`[data-testid="work-rules"]`)
	listed := names(rulesBox.Find(`[data-testid="work-item"]`).Not(`[data-testid="work-warnings"] *`))
	if strings.Join(listed, " ") != strings.Join(failed, " ") {
		t.Errorf("dashboard's failing rules %q, the check failed %q", listed, failed)
	}
	if got := text(rulesBox.Find(`[data-testid="work-rules-count"]`)); got != "(2)" {
		t.Errorf("failing rules count %q, want (2)", got)
	}
	if got := names(rulesBox.Find(`[data-testid="work-warnings"] [data-testid="work-item"]`)); strings.Join(got, " ") != strings.Join(warned, " ") {
		t.Errorf("dashboard's warnings %q, the check warned of %q", got, warned)
	}
	// The built-in result has no rule page: it leads to its table's, which says what to do.
	if href := rulesBox.Find(`[data-name="sales.written_after_live"] a`).AttrOr("href", ""); href != "/tables/sales?target=w" {
		t.Errorf("the stale writer's result links to %q", href)
	}
	if href := rulesBox.Find(`[data-name="daily_totals"] a`).AttrOr("href", ""); href != "/rules/daily_totals" {
		t.Errorf("daily_totals links to %q", href)
	}
}
