package backfill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/backfill"
	"trueup/ledger/ledgertest"
	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// monthOrdersFile rebuilds February and March of orders, a month at a time. The live version
// lacks the orders whose id ends in 3, and every order of 2026-03-15: per month that is +11.1%
// and +14.8%; per day, 2026-03-15 would be a day live does not hold at all.
const monthOrdersFile = `-- table: orders
-- partition: day
-- grain: month
-- key: id
-- reason: bug
-- objective: The load dropped every tenth order, and all of 2026-03-15.
-- scope: 2026-02-01..2026-03-31
-- expect: inside scope rows +5..15%, sum(amount) +0..20%; outside scope identical
SELECT id, day, amount FROM orders_raw WHERE day >= $start AND day < $end
`

// monthOrdersLive is the live version as the user had it: on ClickHouse a MergeTree partitioned
// by month (PARTITION BY toYYYYMM(day)); DuckDB has no partitions.
var monthOrdersLive = map[string]string{
	"clickhouse": "CREATE TABLE orders__v1 (id Int64, day Date, amount Float64) ENGINE = MergeTree PARTITION BY toYYYYMM(day) ORDER BY id",
	"duckdb":     "CREATE TABLE orders__v1 (id BIGINT, day DATE, amount DOUBLE)",
}

// loadMonthOrders makes orders_raw (ten orders a day from January to April 2026) and the live
// orders__v1 behind the view orders.
func loadMonthOrders(t *testing.T, e tsql.Engine) {
	t.Helper()
	ctx := context.Background()
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "day", Kind: tsql.TypeDate}, {Name: "amount", Kind: tsql.TypeFloat}}
	var raw, live [][]any
	first, lost := day("2026-01-01"), day("2026-03-15")
	for n := int64(0); n < 1200; n++ { // 120 days
		row := []any{n, first.AddDate(0, 0, int(n/10)), float64(n) * 1.25}
		raw = append(raw, row)
		if n%10 != 3 && !row[1].(time.Time).Equal(lost) {
			live = append(live, row)
		}
	}
	if err := e.CreateTable(ctx, "orders_raw", cols, "", []string{"id"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Insert(ctx, "orders_raw", []string{"id", "day", "amount"}, raw); err != nil {
		t.Fatal(err)
	}
	if err := e.Exec(ctx, monthOrdersLive[e.Info().Kind]); err != nil {
		t.Fatal(err)
	}
	if err := e.Insert(ctx, "orders__v1", []string{"id", "day", "amount"}, live); err != nil {
		t.Fatal(err)
	}
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v1"}}); err != nil {
		t.Fatal(err)
	}
}

// partitionLines are a diff's partitions as the dry run prints them: label, counts, verdict.
func partitionLines(res *reconcile.Result) []string {
	var out []string
	for _, p := range res.Partitions {
		out = append(out, fmt.Sprintf("%s %d→%d %s", p.Partition, p.OldCount, p.NewCount, p.Verdict))
	}
	return out
}

// TestMonthGrainComparesMonths: a backfill with grain: month is compared and judged a month at
// a time, in the dry run and in the validation, as backfill/README says ("at the backfill's
// grain"). The dry run used to list 59 day rows, and judged each day against the expectations:
// 2026-03-15, missing from live, was a day live did not hold, unexpected, though its month
// changed as expected.
func TestMonthGrainComparesMonths(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		loadMonthOrders(t, e)
		r, diffs := soleBackfill(t, e, "backfills/fix_orders.sql", monthOrdersFile)
		inScope := []string{"2026-02 252→280 expected", "2026-03 270→310 expected"}

		t.Run("dry_run_lists_months", func(t *testing.T) {
			pv, err := r.DryRun(ctx, "fix_orders", nil)
			if err != nil {
				t.Fatal(err)
			}
			if pv.Plan.Scope != "2026-02..2026-03" || !cmp.Equal(pv.Plan.Partitions, []string{"2026-02", "2026-03"}) {
				t.Errorf("plan scope %q, partitions %v", pv.Plan.Scope, pv.Plan.Partitions)
			}
			if len(pv.Tables) != 1 {
				t.Fatalf("dry run tables: %+v", pv.Tables)
			}
			res := pv.Tables[0].Result
			if diff := cmp.Diff(inScope, partitionLines(res)); diff != "" {
				t.Errorf("dry run partitions (-want +got):\n%s", diff)
			}
			if !pv.OK || !res.ExpectationsMet {
				t.Errorf("ok %v, expectations met %v", pv.OK, res.ExpectationsMet)
			}
			var added int64
			for _, p := range res.Partitions {
				if p.Rows != nil {
					added += p.Rows.Added
				}
			}
			if added != 68 {
				t.Errorf("rows added %d, want 68 (28 + 31 orders ending in 3, 9 more of 2026-03-15)", added)
			}
		})

		t.Run("validation_judges_months", func(t *testing.T) {
			done := runToEnd(t, ctx, r, "fix_orders", backfill.RunOptions{Actor: "ann"})
			if done.State != backfill.RunValidated {
				t.Fatalf("run ended %s: %s %s", done.State, done.Error, done.Validation)
			}
			var v backfill.Validation
			if err := json.Unmarshal(done.Validation, &v); err != nil || len(v.Tables) != 1 {
				t.Fatalf("validation %s: %v", done.Validation, err)
			}
			var changed []string
			for _, p := range v.Tables[0].Changed {
				changed = append(changed, fmt.Sprintf("%s %d→%d %s", p.Partition, p.OldCount, p.NewCount, p.Verdict))
			}
			if diff := cmp.Diff(inScope, changed); diff != "" {
				t.Errorf("validation's changed partitions (-want +got):\n%s", diff)
			}
			saved, err := diffs.Get(ctx, v.Tables[0].DiffID)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"2026-01 279→279 unchanged", inScope[0], inScope[1], "2026-04 270→270 unchanged"}
			if diff := cmp.Diff(want, partitionLines(saved)); diff != "" {
				t.Errorf("validation diff, every partition (-want +got):\n%s", diff)
			}
		})
	})
}

// TestPlanScopeShowsItsLastPartition: the plan's scope names its first and last partitions at
// the backfill's grain. A month scope 2026-02-01..2026-03-31 showed as 2026-02-01..2026-03-01,
// and an hour scope as the dates alone (2026-03-05..2026-03-05: 2 hour partitions).
func TestPlanScopeShowsItsLastPartition(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "ts", Kind: tsql.TypeTimestamp}}
		var rows [][]any
		for h := range 59 * 24 { // every hour of February and March 2026
			rows = append(rows, []any{int64(h), time.Date(2026, 2, 1, h, 30, 0, 0, time.UTC)})
		}
		for _, tbl := range []string{"events_raw", "events__v1"} {
			if err := e.CreateTable(ctx, tbl, cols, "", []string{"id"}); err != nil {
				t.Fatal(err)
			}
			if err := e.Insert(ctx, tbl, []string{"id", "ts"}, rows); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "events", Table: "events__v1"}}); err != nil {
			t.Fatal(err)
		}
		file := "-- table: events\n-- partition: ts\n-- grain: %s\n-- key: id\n-- reason: late-data\n-- objective: reload\n%s" +
			"SELECT id, ts FROM events_raw WHERE ts >= $start AND ts < $end\n"
		flags, err := backfill.ParseScope("2026-02-01", "2026-03-31")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, grain, scope string
			override           *backfill.Scope
			want               string
			n                  int
		}{
			{"month_scope_of_dates", "month", "2026-02-01..2026-03-31", nil, "2026-02..2026-03", 2},
			{"month_scope_of_months", "month", "2026-02..2026-03", nil, "2026-02..2026-03", 2},
			{"month_from_to_flags", "month", "2026-02-01..2026-02-01", flags, "2026-02..2026-03", 2},
			{"hour_scope_of_hours", "hour", "2026-03-05T10:00..2026-03-05T11:00", nil, "2026-03-05T10:00..2026-03-05T11:00", 2},
			{"hour_scope_of_a_date", "hour", "2026-03-05..2026-03-05", nil, "2026-03-05T00:00..2026-03-05T23:00", 24},
			{"day_scope", "day", "2026-03-01..2026-03-05", nil, "2026-03-01..2026-03-05", 5},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b, ps := backfill.Parse("backfills/events.sql", fmt.Sprintf(file, tc.grain, "-- scope: "+tc.scope+"\n"))
				if len(ps) > 0 {
					t.Fatal(ps)
				}
				pl := backfill.Planner{Set: backfill.NewSet(b), Engine: e, Target: "warehouse"}
				p, err := pl.Plan(ctx, b, tc.override)
				if err != nil {
					t.Fatal(err)
				}
				// as `backfill plan` prints it
				got := fmt.Sprintf("%s: %d %s", p.Scope, len(p.Partitions), p.Grain)
				if want := fmt.Sprintf("%s: %d %s", tc.want, tc.n, tc.grain); got != want {
					t.Errorf("scope %s, want %s", got, want)
				}
				if p.Blocked() {
					t.Errorf("findings %+v", p.Findings)
				}
				if last := p.Partitions[len(p.Partitions)-1]; !strings.HasSuffix(tc.want, ".."+last) {
					t.Errorf("last partition %s, scope %s", last, p.Scope)
				}
			})
		}
	})
}

// TestTimezoneColumnPartitionsByUTCDay: a ClickHouse DateTime('Europe/Berlin') column (or a
// DateTime on a server whose timezone is not UTC) is partitioned by UTC days, as the windows
// that bound $start and $end are: the day a backfill rebuilds is the day its transform reads.
// The partitions were the column's Berlin days while $start/$end were UTC midnights: the dry run
// of 2026-07-03 showed 44 rows there and 4 changed rows in 2026-07-04, "unexpected", and the
// run left 4 rows of the Berlin 2026-07-03 unfixed and changed 4 rows of 2026-07-04.
func TestTimezoneColumnPartitionsByUTCDay(t *testing.T) {
	e := sqltest.ClickHouse(t)
	if e == nil {
		t.Skip("no ClickHouse server")
	}
	ctx := context.Background()
	for _, q := range []string{
		"CREATE TABLE clicks_raw (id Int64, ts DateTime('Europe/Berlin'), n Int64) ENGINE = MergeTree ORDER BY id",
		"CREATE TABLE clicks__v1 (id Int64, ts DateTime('Europe/Berlin'), n Int64) ENGINE = MergeTree PARTITION BY toYYYYMM(ts) ORDER BY id",
		// a row every half hour from 2026-07-01 00:00 UTC (02:00 in Berlin), five days
		"INSERT INTO clicks_raw SELECT number, toDateTime('2026-07-01 00:00:00', 'UTC') + number * 1800, 2 FROM system.numbers LIMIT 240",
		"INSERT INTO clicks__v1 SELECT id, ts, 1 FROM clicks_raw",
	} {
		if err := e.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "clicks", Table: "clicks__v1"}}); err != nil {
		t.Fatal(err)
	}
	r, _ := soleBackfill(t, e, "backfills/fix_clicks.sql", `-- table: clicks
-- partition: ts
-- key: id
-- reason: bug
-- objective: n was halved on 2026-07-03.
-- scope: 2026-07-03..2026-07-03
-- expect: inside scope rows +0..0%, sum(n) +100..100%; outside scope identical
SELECT id, ts, n FROM clicks_raw WHERE ts >= $start AND ts < $end
`)
	pv, err := r.DryRun(ctx, "fix_clicks", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pv.Tables) != 1 {
		t.Fatalf("dry run tables: %+v", pv.Tables)
	}
	if diff := cmp.Diff([]string{"2026-07-03 48→48 expected"}, partitionLines(pv.Tables[0].Result)); diff != "" || !pv.OK {
		t.Errorf("dry run ok %v, partitions (-want +got):\n%s", pv.OK, diff)
	}
	done := runToEnd(t, ctx, r, "fix_clicks", backfill.RunOptions{Actor: "ann"})
	if done.State != backfill.RunValidated {
		t.Errorf("run ended %s: %s %s", done.State, done.Error, done.Validation)
	}
	res, err := e.Query(ctx, "SELECT toString(min(ts), 'UTC'), toString(max(ts), 'UTC'), count() FROM clicks__v2 WHERE n = 2")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(res.Rows)
	if want := "[[2026-07-03 00:00:00 2026-07-03 23:30:00 48]]"; got != want {
		t.Errorf("rows rebuilt in clicks__v2 (first, last, count): %s, want %s", got, want)
	}
}

// TestDryRunOfACoarserDownstream: a day's fix of orders with a downstream table of months: the
// dry run computes March from the whole month, the day rebuilt and the others as live holds
// them, as the run does (it computed March from the one day rebuilt: 10 orders, not 280).
func TestDryRunOfACoarserDownstream(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		loadMonthOrders(t, e)
		month := map[string]string{"duckdb": "CAST(date_trunc('month', day) AS DATE)", "clickhouse": "toStartOfMonth(day)"}[e.Info().Kind]
		monthly := "SELECT " + month + " AS m, count(*) AS n FROM orders WHERE day >= $start AND day < $end GROUP BY " + month
		create := map[string]string{
			"duckdb":     "CREATE TABLE monthly__v1 AS SELECT " + month + " AS m, count(*) AS n FROM orders__v1 GROUP BY " + month,
			"clickhouse": "CREATE TABLE monthly__v1 ENGINE = MergeTree PARTITION BY m ORDER BY m AS SELECT " + month + " AS m, count() AS n FROM orders__v1 GROUP BY m",
		}[e.Info().Kind]
		if err := e.Exec(ctx, create); err != nil {
			t.Fatal(err)
		}
		if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "monthly", Table: "monthly__v1"}}); err != nil {
			t.Fatal(err)
		}
		up, ps := backfill.Parse("backfills/fix_day.sql", `-- table: orders
-- partition: day
-- key: id
-- reason: bug
-- objective: 2026-03-15 was lost.
-- scope: 2026-03-15..2026-03-15
-- downstream: monthly
SELECT id, day, amount FROM orders_raw WHERE day >= $start AND day < $end
`)
		down, ps2 := backfill.Parse("backfills/monthly.sql", "-- table: monthly\n-- partition: m\n-- grain: month\n-- key: m\n"+monthly+"\n")
		if len(ps)+len(ps2) > 0 {
			t.Fatal(ps, ps2)
		}
		l := ledgertest.OpenAt(t, filepath.Join(t.TempDir(), "state.duckdb"))
		r := backfill.NewRunner(backfill.Planner{Set: backfill.NewSet(up, down), Engine: e, Target: "warehouse"},
			backfill.Store{L: l}, backfill.Validator{Diffs: reconcile.NewStore(l)})
		pv, err := r.DryRun(ctx, "fix_day", nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, pt := range pv.Tables {
			for _, c := range pt.Result.Samples.Changed {
				for _, col := range c.Columns {
					got = append(got, fmt.Sprintf("%s %v→%v", pt.Table, col.Old, col.New))
				}
			}
		}
		if diff := cmp.Diff([]string{"monthly 270→280"}, got); diff != "" {
			t.Errorf("the dry run's changed values (-want +got):\n%s", diff)
		}
		done := runToEnd(t, ctx, r, "fix_day", backfill.RunOptions{Actor: "ann"})
		res, err := e.Query(ctx, "SELECT n FROM monthly__v2 WHERE m = "+map[string]string{"duckdb": "DATE '2026-03-01'", "clickhouse": "toDate('2026-03-01')"}[e.Info().Kind])
		if err != nil || len(res.Rows) != 1 || tsql.AsInt64(res.Rows[0][0]) != 280 {
			t.Errorf("the run wrote March as %v (%v, run %s), want 280 orders", res, err, done.State)
		}
	})
}

// TestFullRebuildPlansEveryPartition: a full rebuild covers every partition live holds and the
// ones its scope adds (2026-03-15, which live lacks: it was not built), and a row of live whose
// day is NULL is no partition (the plan named a partition 0001-01-01, missing from the input,
// and was blocked).
func TestFullRebuildPlansEveryPartition(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		loadMonthOrders(t, e)
		if e.Info().Kind == "duckdb" { // the ClickHouse table's day is not Nullable
			if err := e.Exec(ctx, "INSERT INTO orders__v1 (id, day, amount) SELECT 9001, NULL, 1"); err != nil {
				t.Fatal(err)
			}
		}
		r, _ := soleBackfill(t, e, "backfills/rebuild.sql", `-- table: orders
-- partition: day
-- key: id
-- reason: migration
-- mode: full-rebuild
-- objective: Rebuild orders from the raw orders.
-- scope: 2026-01-01..2026-04-30
-- expect: everywhere any
SELECT id, day, amount FROM orders_raw WHERE day >= $start AND day < $end
`)
		plan, err := r.Planner.Plan(ctx, r.Planner.Set.All()[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Blocked() || len(plan.Partitions) != 120 || plan.Partitions[0] != "2026-01-01" || !slices.Contains(plan.Partitions, "2026-03-15") {
			t.Fatalf("plan: blocked %v, %d partitions %v…; want the 120 days, 2026-03-15 among them", plan.Blocked(), len(plan.Partitions), plan.Partitions[:min(3, len(plan.Partitions))])
		}
		done := runToEnd(t, ctx, r, "rebuild", backfill.RunOptions{Actor: "ann"})
		res, err := e.Query(ctx, "SELECT count(*) FROM orders__v2 WHERE day IS NOT NULL")
		if err != nil || tsql.AsInt64(res.Rows[0][0]) != 1200 {
			t.Errorf("v2 holds %v dated orders (%v; run %s %s), want the 1200 raw ones", res, err, done.State, done.Error)
		}
	})
}
