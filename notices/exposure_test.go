package notices_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/ledger"
	"trueup/ledger/ledgertest"
	"trueup/notices"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

func TestParseExposureErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"not_read_only", "-- title: Bad\nDELETE FROM daily_revenue\n",
			[]string{"x.sql:2: exposure SQL: SQL starts with DELETE: want a single read-only SELECT or WITH"}},
		{"two_statements", "-- title: Bad\nSELECT 1 FROM t; DROP TABLE t\n",
			[]string{"x.sql:2: exposure SQL: more than one statement: want a single SELECT"}},
		{"hidden_write", "-- title: Bad\nWITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x\n",
			[]string{"x.sql:2: exposure SQL: SQL contains INSERT: want a read-only SELECT"}},
		{"every_problem_at_once", "-- titel: Revenue\n-- tables: daily_revenue, orders\n-- tables: x\nSELECT sum(revenue) FROM daily_revenue\n",
			[]string{
				"x.sql:1: unknown key titel (allowed: title, owner, audience, tables, target, labels)",
				"x.sql:1: missing key title",
				"x.sql:2: table orders is not read by the query (it reads daily_revenue)",
				"x.sql:3: duplicate key tables (first on line 2)",
			}},
		{"no_body", "-- title: Empty\n", []string{"x.sql:1: exposure SQL: empty SQL: want a SELECT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ps := notices.ParseExposure("x.sql", tc.text)
			ps.Sort()
			var got []string
			for _, p := range ps {
				got = append(got, p.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadDemoExposures(t *testing.T) {
	xs, err := notices.LoadExposures(os.DirFS("../fixtures/project/exposures"), "exposures")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range xs {
		got = append(got, x.Name+" "+x.Title+" "+strings.Join(x.Tables, ","))
	}
	want := []string{"board_revenue Board revenue by month daily_revenue", "region_revenue Revenue by region region_summary"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("demo exposures (-want +got):\n%s", diff)
	}
	if r := notices.Reading(xs, []string{"orders", "daily_revenue"}); len(r) != 1 || r[0].Name != "board_revenue" {
		t.Errorf("exposures reading daily_revenue: %v", r)
	}
}

// dailyRevenue builds daily_revenue__v1 behind the view daily_revenue, and daily_revenue__v2
// with July's planted-bug days corrected: the shape of the demo after a backfill's build.
func dailyRevenue(t *testing.T, e tsql.Engine) {
	ctx := context.Background()
	cols := []tsql.Column{
		{Name: "order_date", Kind: tsql.TypeDate},
		{Name: "order_count", Kind: tsql.TypeInt},
		{Name: "revenue", Type: "DECIMAL(18,2)", Kind: tsql.TypeDecimal},
	}
	for v, bump := range map[string]float64{"daily_revenue__v1": 0, "daily_revenue__v2": 1} {
		if err := e.CreateTable(ctx, v, cols, "order_date", []string{"order_date"}); err != nil {
			t.Fatal(err)
		}
		var rows [][]any
		for d := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC); d.Before(time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)); d = d.AddDate(0, 0, 1) {
			count, rev := int64(100), 1000.0
			if d.Month() == time.July && d.Day() >= 10 && d.Day() <= 18 {
				count, rev = count+int64(5*bump), rev+50*bump
			}
			rows = append(rows, []any{d, count, rev})
		}
		if err := e.Insert(ctx, v, []string{"order_date", "order_count", "revenue"}, rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "daily_revenue", Table: "daily_revenue__v1"}}); err != nil {
		t.Fatal(err)
	}
}

func TestEvaluateExposure(t *testing.T) {
	xs, err := notices.LoadExposures(os.DirFS("../fixtures/project/exposures"), "exposures")
	if err != nil {
		t.Fatal(err)
	}
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		dailyRevenue(t, e)
		targets := targetMap{e}
		if err := notices.CheckExposures(ctx, xs[:1], targets); err != nil {
			t.Fatalf("the demo exposure does not prepare: %v", err)
		}
		got := notices.EvaluateExposures(ctx, xs, targets, map[string]int{"daily_revenue": 2})
		if len(got) != 1 {
			t.Fatalf("%d exposures evaluated, want board_revenue only", len(got))
		}
		c := got[0]
		want := notices.ExposureChange{
			Exposure: "board_revenue", Title: "Board revenue by month", Owner: "finance-data@example.com",
			Audience: []string{"finance", "executive team"}, Labels: []string{"month"}, Values: []string{"revenue", "orders"},
			Rows: []notices.ExposureRow{
				{Label: "July 2026", Column: "revenue", Before: f(31000), After: f(31450)},
				{Label: "July 2026", Column: "orders", Before: f(3100), After: f(3145)},
			},
			Unchanged: 4,
		}
		if diff := cmp.Diff(want, c); diff != "" {
			t.Errorf("board revenue change (-want +got):\n%s", diff)
		}
		if p, _ := c.Rows[0].PctChange(); notices.Pct(p) != "+1.5%" {
			t.Errorf("July change %s, want +1.5%%", notices.Pct(p))
		}

		t.Run("a_table_named_with_its_schema", func(t *testing.T) {
			// main.daily_revenue (DuckDB) or db.daily_revenue (ClickHouse) is the same table: the
			// new numbers are read from the new version, not from the live one again.
			current, err := tsql.CurrentQualifiers(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			x := *xs[0]
			x.SQL = strings.Replace(x.SQL, "FROM daily_revenue", "FROM "+current[0]+".daily_revenue", 1)
			got, err := x.Evaluate(ctx, e, map[string]string{"daily_revenue": "daily_revenue__v2"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Rows, got.Rows); diff != "" {
				t.Errorf("%s (-want +got):\n%s", x.SQL, diff)
			}
		})

		t.Run("draft_evaluates_the_exposures_itself", func(t *testing.T) {
			l := ledgertest.Open(t, ledger.WithClock(newClock().Now))
			svc := notices.New(l, notices.Options{Exposures: xs, Targets: targets})
			n, err := svc.Draft(ctx, notices.Evidence{Backfill: "fix", RunID: 1, Tables: []string{"daily_revenue"},
				Versions: map[string]int{"daily_revenue": 2}})
			if err != nil {
				t.Fatal(err)
			}
			if len(n.Evidence.Exposures) != 1 || len(n.Evidence.Exposures[0].Rows) != 2 {
				t.Fatalf("draft evidence exposures %+v", n.Evidence.Exposures)
			}
			if want := "- Board revenue by month (seen by finance and executive team): July 2026 revenue 31K → "; !strings.Contains(n.Body, want) {
				t.Errorf("draft body lacks %q:\n%s", want, n.Body)
			}
		})
		t.Run("new_version_not_built_yet", func(t *testing.T) {
			got := notices.EvaluateExposures(ctx, xs, targets, map[string]int{"daily_revenue": 3})
			if len(got) != 1 || got[0].Error == "" || len(got[0].Rows) != 0 {
				t.Errorf("evaluating against a missing version: %+v", got)
			}
		})
		t.Run("sql_the_engine_cannot_prepare", func(t *testing.T) {
			bad, _ := notices.ParseExposure("exposures/bad.sql", "-- title: Bad\nSELECT no_such_column FROM daily_revenue\n")
			err := notices.CheckExposures(ctx, []*notices.Exposure{bad}, targets)
			if err == nil || !strings.HasPrefix(err.Error(), "exposures/bad.sql:2: exposure SQL does not prepare") {
				t.Errorf("check: %v", err)
			}
		})
	})
}

type targetMap struct{ e tsql.Engine }

func (m targetMap) Engine(string) (tsql.Engine, error) { return m.e, nil }
