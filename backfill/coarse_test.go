package backfill_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/backfill"
	"trueup/fault"
	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// salesFile is a day-grain backfill of sales over nine days of July; the live version lacks
// the rows whose id ends in 3, which the transform has.
const salesFile = `-- table: sales
-- partition: d
-- grain: day
-- key: id
-- reason: bug
-- objective: The load dropped every tenth sale from 2026-07-10 to 2026-07-18.
-- scope: 2026-07-10..2026-07-18
-- expect: inside scope rows +5..15%, sum(amount) +0..20%; outside scope identical
SELECT id, d, shipped, region, amount FROM sales_raw WHERE d >= $start AND d < $end
`

// loadSalesTables makes sales_raw (62 days of July and August, 10 rows a day) and the live
// sales__v1 with clause as its PARTITION BY (on ClickHouse), behind the view sales.
func loadSalesTables(t *testing.T, e tsql.Engine, clause string) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		"CREATE TABLE sales_raw (id UInt64, d Date, shipped Date, region String, amount Float64) ENGINE = MergeTree ORDER BY id",
		"INSERT INTO sales_raw (id, d, shipped, region, amount) SELECT number, toDate('2026-07-01') + intDiv(number, 10), toDate('2026-07-01') + intDiv(number, 10) + 3, if(number % 2 = 0, 'eu', 'us'), number * 1.25 FROM system.numbers LIMIT 620",
		"CREATE TABLE sales__v1 (id UInt64, d Date, shipped Date, region String, amount Float64) ENGINE = MergeTree " + clause + " ORDER BY id",
		"INSERT INTO sales__v1 (id, d, shipped, region, amount) SELECT id, d, shipped, region, amount FROM sales_raw WHERE id % 10 != 3",
		"CREATE VIEW sales AS SELECT * FROM sales__v1",
	} {
		if err := e.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// salesRunner is a runner over the sales backfill (file may edit it) with no rules.
func salesRunner(t *testing.T, e tsql.Engine, file string) *backfill.Runner {
	t.Helper()
	return salesRunnerAt(t, e, file, filepath.Join(t.TempDir(), "state.duckdb"))
}

// salesRunnerAt is salesRunner with its ledger at state.
func salesRunnerAt(t *testing.T, e tsql.Engine, file, state string) *backfill.Runner {
	t.Helper()
	b, ps := backfill.Parse("backfills/fix_sales.sql", file)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	l := ledgertest.OpenAt(t, state)
	pl := backfill.Planner{Set: backfill.NewSet(b), Engine: e, Target: "warehouse"}
	return backfill.NewRunner(pl, backfill.Store{L: l}, backfill.Validator{})
}

// salesDays is each day's portable hash sum and row count of rel's columns of the transform.
func salesDays(t *testing.T, e tsql.Engine, rel, where string) map[string]string {
	t.Helper()
	d := e.Dialect()
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate}, {Name: "region", Kind: tsql.TypeString}, {Name: "amount", Kind: tsql.TypeFloat}}
	res, err := e.Query(context.Background(), "SELECT toString(d), "+d.HashSum(d.RowHash(cols, tsql.HashOptions{Portable: true}))+", count() FROM "+rel+" "+where+" GROUP BY d")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range res.Rows {
		out[tsql.AsText(r[0])] = fmt.Sprintf("%d/%d", tsql.AsUint64(r[1]), tsql.AsInt64(r[2]))
	}
	return out
}

// checkRebuilt fails unless version rel has the live sales__v1's rows on every day outside the
// scope, byte for byte (by checksum), and the transform's on the nine days inside it.
func checkRebuilt(t *testing.T, e tsql.Engine, rel string) {
	t.Helper()
	checkRebuiltScope(t, e, rel, "2026-07-10", "2026-07-18")
}

// checkRebuiltScope is checkRebuilt for the scope from..to.
func checkRebuiltScope(t *testing.T, e tsql.Engine, rel, from, to string) {
	t.Helper()
	scoped := func(day string) bool { return day >= from && day <= to }
	live, got, want := salesDays(t, e, "sales__v1", ""), salesDays(t, e, rel, ""), salesDays(t, e, "sales_raw", "")
	if len(got) != 62 {
		t.Errorf("%s has %d days, want 62", rel, len(got))
	}
	for day, h := range want {
		switch {
		case scoped(day) && got[day] != h:
			t.Errorf("%s %s: %s, want the transform's %s", rel, day, got[day], h)
		case scoped(day) && got[day] == live[day]:
			t.Errorf("%s %s: not rebuilt", rel, day)
		case !scoped(day) && got[day] != live[day]:
			t.Errorf("%s %s: %s, want live's %s unchanged", rel, day, got[day], live[day])
		}
	}
}

// TestCoarsePartitions (ClickHouse): a day-scope backfill of a table partitioned by month, by
// week, by the day itself, by a tuple with a region, or not at all rebuilds the nine scoped days
// and leaves every other day byte-identical; the plan states the coarse partitions; a rerun
// gives the same version; a whole-table rewrite above the limit needs AllowFullRewrite; a key
// the days cannot be placed in is refused, nothing written.
func TestCoarsePartitions(t *testing.T) {
	t.Parallel() // long: beside the package's other long tests
	ctx := context.Background()
	month := "9 days in 1 month partition: 2026-07 (9 days rebuilt, 22 carried from live)"
	for _, tc := range []struct {
		name, clause, text string
	}{
		{"to_yyyymm", "PARTITION BY toYYYYMM(d)", month},
		{"to_start_of_month", "PARTITION BY toStartOfMonth(d)", month},
		{"tuple_with_region", "PARTITION BY (toYYYYMM(d), region)", month},
		{"to_monday", "PARTITION BY toMonday(d)", "9 days in 2 week partitions: week of 2026-07-06 (3 days rebuilt, 4 carried from live), week of 2026-07-13 (6 days rebuilt, 1 carried from live)"},
		{"raw_column", "PARTITION BY d", ""},
		{"no_partition_by", "", "9 days in 1 partition, the whole table (sales__v1 has no PARTITION BY): a whole-table rebuild, 558 rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := sqltest.ClickHouse(t)
			if e == nil {
				t.Skip("partition keys are ClickHouse's")
			}
			loadSalesTables(t, e, tc.clause)
			r := salesRunner(t, e, salesFile)
			b, _ := r.Planner.Set.Get("fix_sales")
			p, err := r.Planner.Plan(ctx, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if p.Blocked() {
				t.Fatalf("blocked: %+v", p.Findings)
			}
			switch {
			case tc.text == "" && len(p.Layouts) > 0:
				t.Errorf("a table partitioned by the day: layouts %+v, want none", p.Layouts)
			case tc.text != "" && (len(p.Layouts) != 1 || !strings.HasPrefix(p.Layouts[0].Text, tc.text)):
				t.Errorf("plan layouts %+v\nwant %q", p.Layouts, tc.text)
			}
			// the dry run compares at the backfill's grain: nine days of 9 rows now, 10 rebuilt
			pv, err := r.DryRun(ctx, "fix_sales", nil)
			if err != nil {
				t.Fatal(err)
			}
			var days []string
			for _, part := range pv.Tables[0].Result.Partitions {
				if part.OldCount != 9 || part.NewCount != 10 {
					t.Errorf("dry run %s: %d rows live, %d rebuilt, want 9 and 10", part.Partition, part.OldCount, part.NewCount)
				}
				days = append(days, part.Partition)
			}
			if !pv.OK || len(days) != 9 || days[0] != "2026-07-10" || days[8] != "2026-07-18" {
				t.Errorf("dry run: ok %v, partitions %v, want the nine days", pv.OK, days)
			}
			var versions []string
			for i := 0; i < 2; i++ { // a second run rebuilds the same version
				run, err := r.Start(ctx, "fix_sales", backfill.RunOptions{})
				if err != nil {
					t.Fatal(err)
				}
				done, err := r.Execute(ctx, run.ID, backfill.ExecOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if done.State != backfill.RunValidated {
					t.Fatalf("run %d: %s %s", run.ID, done.State, done.Error)
				}
				rel := fmt.Sprintf("sales__v%d", done.Tables[0].Version)
				checkRebuilt(t, e, rel)
				versions = append(versions, rel)
			}
			if a, b := salesDays(t, e, versions[0], ""), salesDays(t, e, versions[1], ""); !cmp.Equal(a, b) {
				t.Errorf("%s and %s differ: %s", versions[0], versions[1], cmp.Diff(a, b))
			}
		})
	}

	t.Run("whole_table_above_the_limit", func(t *testing.T) {
		e := sqltest.ClickHouse(t)
		if e == nil {
			t.Skip("partition keys are ClickHouse's")
		}
		loadSalesTables(t, e, "")
		r := salesRunner(t, e, salesFile)
		r.Planner.FullRewriteRows = 500
		b, _ := r.Planner.Set.Get("fix_sales")
		p, err := r.Planner.Plan(ctx, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Layouts) != 1 || !p.Layouts[0].NeedsAllow || !hasFinding(p, "warning", "sales__v1 has no PARTITION BY: a run rewrites all of its 558 rows") {
			t.Errorf("layouts %+v, findings %+v", p.Layouts, p.Findings)
		}
		_, err = r.Start(ctx, "fix_sales", backfill.RunOptions{})
		if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "sales has no PARTITION BY and 558 rows") || !strings.Contains(err.Error(), "--allow-full-rewrite") {
			t.Errorf("a run unasked: %v", err)
		}
		if _, err := r.Store.LatestRun(ctx, "fix_sales"); !errors.Is(err, fault.ErrNotFound) {
			t.Errorf("the refused run was recorded: %v", err)
		}
		run, err := r.Start(ctx, "fix_sales", backfill.RunOptions{AllowFullRewrite: true})
		if err != nil {
			t.Fatal(err)
		}
		done, err := r.Execute(ctx, run.ID, backfill.ExecOptions{})
		if err != nil || done.State != backfill.RunValidated {
			t.Fatalf("run with AllowFullRewrite: %v %s", err, done.State)
		}
		checkRebuilt(t, e, "sales__v2")
	})

	t.Run("weeks_under_a_month_grain", func(t *testing.T) {
		e := sqltest.ClickHouse(t)
		if e == nil {
			t.Skip("partition keys are ClickHouse's")
		}
		loadSalesTables(t, e, "PARTITION BY toMonday(d)")
		file := strings.Replace(strings.Replace(salesFile, "-- grain: day", "-- grain: month", 1), "2026-07-10..2026-07-18", "2026-07-01..2026-07-31", 1)
		r := salesRunner(t, e, file)
		b, _ := r.Planner.Set.Get("fix_sales")
		p, err := r.Planner.Plan(ctx, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := "table sales__v1 is partitioned by toMonday(d): its weeks and the backfill's months do not line up"; !p.Blocked() || !hasFinding(p, "blocking", want) {
			t.Errorf("findings %+v, want blocking %q", p.Findings, want)
		}
	})

	t.Run("refused_keys", func(t *testing.T) {
		for name, clause := range map[string]string{"hash": "intHash32(id) % 10", "other_column": "toYYYYMM(shipped)"} {
			t.Run(name, func(t *testing.T) {
				e := sqltest.ClickHouse(t)
				if e == nil {
					t.Skip("partition keys are ClickHouse's")
				}
				loadSalesTables(t, e, "PARTITION BY "+clause)
				r := salesRunner(t, e, salesFile)
				b, _ := r.Planner.Set.Get("fix_sales")
				p, err := r.Planner.Plan(ctx, b, nil)
				if err != nil {
					t.Fatal(err)
				}
				want := "table sales__v1 is partitioned by " + clause + ", which is not d or toYYYYMM"
				if !p.Blocked() || !hasFinding(p, "blocking", want) {
					t.Errorf("findings %+v, want blocking %q", p.Findings, want)
				}
				if _, err := r.Start(ctx, "fix_sales", backfill.RunOptions{}); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), want) {
					t.Errorf("run: %v", err)
				}
				if _, err := e.Columns(ctx, "sales__v2"); !errors.Is(err, fault.ErrNotFound) {
					t.Errorf("a refused run wrote sales__v2: %v", err)
				}
			})
		}
	})
}
