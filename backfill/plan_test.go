package backfill_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"trueup/backfill"
	"trueup/fault"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// The plan checks every transform a run executes, the downstream ones too: a downstream
// transform that reads the clock or writes the wrong columns blocks the plan, as the planned
// backfill's own would, instead of failing the run after the upstream was built.
func TestPlanChecksDownstreamTransforms(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		d := newDemo(t, e)
		for _, tc := range []struct {
			name, old, new   string
			finding, missing string
		}{
			{"reads_the_clock", "WHERE order_date >= $start AND order_date < $end", "WHERE order_date >= $start AND order_date < $end AND now() IS NOT NULL",
				"downstream daily_revenue: the transform reads the clock or current state (now)",
				"reads the clock or current state (downstream daily_revenue: now)"},
			{"wrong_output_column", "SELECT\n\torder_date,", "SELECT\n\torder_date AS day,",
				"downstream daily_revenue: transform: its rows have no column order_date (they have day, ",
				"write is not idempotent: downstream daily_revenue: its rows have no column order_date"},
			// a transform that does not prepare says so: whether its write is idempotent is unknown
			{"does_not_prepare", "SELECT\n\torder_date,", "SELECT\n\tno_such_column,\n\torder_date,",
				"downstream daily_revenue: transform: does not prepare: ",
				"write not checked, the transform did not prepare: downstream daily_revenue: does not prepare: "},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := d.newRunner(t, e)
				r.Planner.Set = loadEdited(t, filepath.Join(d.dir, "backfills"), "daily_revenue.sql", tc.old, tc.new)
				b, _ := r.Planner.Set.Get("fix_dedup_bug")
				p, err := r.Planner.Plan(ctx, b, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !p.Blocked() || p.Score != 3 || !hasFinding(p, "blocking", tc.finding) {
					t.Errorf("blocked %v, score %d, findings %+v\nwant blocking %q", p.Blocked(), p.Score, p.Findings, tc.finding)
				}
				if len(p.ScoreMissing) != 1 || !strings.Contains(p.ScoreMissing[0], tc.missing) {
					t.Errorf("score missing %q, want %q", p.ScoreMissing, tc.missing)
				}
				if _, err := r.Start(ctx, "fix_dedup_bug", backfill.RunOptions{}); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), tc.finding) {
					t.Errorf("run: got %v, want it refused with %q", err, tc.finding)
				}
				if _, err := r.Store.LatestRun(ctx, "fix_dedup_bug"); !errors.Is(err, fault.ErrNotFound) {
					t.Errorf("a blocked plan recorded a run: %v", err)
				}
			})
		}
		t.Run("demo_downstream_is_clean", func(t *testing.T) {
			b, _ := d.runner.Planner.Set.Get("fix_dedup_bug")
			p, err := d.runner.Planner.Plan(ctx, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if p.Score != 4 || len(p.Findings) != 0 || !p.InputsOK {
				t.Errorf("score %d, inputs ok %v, findings %+v", p.Score, p.InputsOK, p.Findings)
			}
		})
	})
}

// loadEdited loads a project's backfills with one file's text edited.
func loadEdited(t *testing.T, dir, file, old, new string) *backfill.Set {
	t.Helper()
	fsys := fstest.MapFS{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		data, err := os.ReadFile(filepath.Join(dir, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if en.Name() == file {
			if !strings.Contains(string(data), old) {
				t.Fatalf("%s has no %q", file, old)
			}
			data = []byte(strings.Replace(string(data), old, new, 1))
		}
		fsys[en.Name()] = &fstest.MapFile{Data: data}
	}
	set, err := backfill.Load(fsys, "backfills")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func hasFinding(p *backfill.Plan, severity, text string) bool {
	for _, f := range p.Findings {
		if f.Severity == severity && strings.Contains(f.Message, text) {
			return true
		}
	}
	return false
}

// A scope that ends on a date takes all of that day: an hourly backfill scoped
// 2026-07-10..2026-07-11 rebuilds 48 hours, not the first hour of the 11th.
func TestPlanHourlyScopeEndsWithTheDay(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "ts", Kind: tsql.TypeTimestamp}}
		var rows [][]any
		for h := range 72 { // every hour of 2026-07-10..12
			rows = append(rows, []any{int64(h), time.Date(2026, 7, 10, h, 30, 0, 0, time.UTC)})
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
		file := "-- table: events\n-- partition: ts\n-- grain: hour\n-- key: id\n-- reason: late-data\n-- objective: reload\n%s" +
			"SELECT id, ts FROM events_raw WHERE ts >= $start AND ts < $end\n"
		fromFlags, err := backfill.ParseScope("2026-07-10", "2026-07-11")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, scope string
			override    *backfill.Scope
			n           int
			first, last string
		}{
			{"file_scope_of_dates", "-- scope: 2026-07-10..2026-07-11\n", nil, 48, "2026-07-10T00:00", "2026-07-11T23:00"},
			{"from_to_flags", "", fromFlags, 48, "2026-07-10T00:00", "2026-07-11T23:00"},
			{"file_scope_of_hours", "-- scope: 2026-07-10T05:00..2026-07-10T07:00\n", nil, 3, "2026-07-10T05:00", "2026-07-10T07:00"},
			{"date_to_an_hour", "-- scope: 2026-07-10..2026-07-11T01:00\n", nil, 26, "2026-07-10T00:00", "2026-07-11T01:00"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b, ps := backfill.Parse("backfills/events.sql", strings.Replace(file, "%s", tc.scope, 1))
				if len(ps) > 0 {
					t.Fatal(ps)
				}
				pl := backfill.Planner{Set: backfill.NewSet(b), Engine: e, Target: "warehouse"}
				p, err := pl.Plan(ctx, b, tc.override)
				if err != nil {
					t.Fatal(err)
				}
				got := p.Partitions
				if len(got) != tc.n || got[0] != tc.first || got[len(got)-1] != tc.last {
					t.Fatalf("%d partitions %v, want %d from %s to %s", len(got), got, tc.n, tc.first, tc.last)
				}
				if p.Blocked() || !p.InputsOK {
					t.Errorf("findings %+v", p.Findings)
				}
			})
		}
	})
}

// A scope is bounded, and looking at a plan for another scope stores nothing: GET
// /api/v1/backfills/{name}?from=1900-01-01&to=2100-12-31 planned 73,000 partitions for 50 s and
// stored every such plan.
func TestScopeIsBoundedAndAReadStoresNothing(t *testing.T) {
	ctx := context.Background()
	e := sqltest.DuckDB(t)
	d := newDemo(t, e)
	svc := &backfill.Service{Runner: d.runner}
	before, _, err := d.runner.Store.LatestPlan(ctx, "fix_dedup_bug")
	if err != nil && !errors.Is(err, fault.ErrNotFound) {
		t.Fatal(err)
	}
	huge, err := backfill.ParseScope("1900-01-01", "2100-12-31")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := svc.Plan(ctx, "fix_dedup_bug", "vera", huge); err != nil || !p.Blocked() || len(p.Partitions) != 0 ||
		!hasFinding(p, "blocking", "the scope 1900-01-01..2100-12-31 covers more than 20000 partitions of grain day: split the backfill") {
		t.Errorf("a scope of 73,000 days: %v, %d partitions, findings %+v", err, len(p.Partitions), p.Findings)
	}
	small, _ := backfill.ParseScope("2026-07-10", "2026-07-12")
	p, err := svc.Plan(ctx, "fix_dedup_bug", "vera", small)
	if err != nil || len(p.Partitions) != 3 {
		t.Fatalf("a scope of 3 days: %v", err)
	}
	after, _, err := d.runner.Store.LatestPlan(ctx, "fix_dedup_bug")
	if err != nil && !errors.Is(err, fault.ErrNotFound) {
		t.Fatal(err)
	}
	if (before == nil) != (after == nil) || (after != nil && len(after.Partitions) == 3) {
		t.Errorf("a scoped plan that was only read was stored: scope %s", after.Scope)
	}
}

// A transform whose columns are not the table's blocks the plan naming the columns, instead of
// a run that builds v2 and fails every partition on the engine's error (or, on ClickHouse,
// drops the extra columns quietly): an extra column (SELECT * reads orders_raw's event_id), a
// missing one, a string where the table has an integer, a double where it has a decimal.
func TestPlanChecksTheTransformsColumns(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		d := newDemo(t, e)
		dl := e.Dialect()
		orig, err := os.ReadFile(filepath.Join(d.dir, "backfills", "fix_dedup_bug.sql"))
		if err != nil {
			t.Fatal(err)
		}
		transform := string(orig[strings.Index(string(orig), "SELECT\n"):])
		for _, tc := range []struct {
			name, old, new string
			findings       []string
		}{
			{"select_star", transform, "SELECT * FROM orders_raw WHERE order_date >= $start AND order_date < $end\n",
				[]string{"transform: its rows have columns orders does not: event_id, ingest_delay_days"}},
			{"missing_column", "\tmin(region) AS region,\n", "",
				[]string{"transform: its rows lack columns of orders: region"}},
			{"string_into_integer", "min(customer_id) AS customer_id", dl.ToText("min(customer_id)") + " AS customer_id",
				[]string{"transform: column customer_id is a string (", "where orders has an int ("}},
			{"double_into_decimal", "min(amount) AS amount", dl.ToFloat("min(amount)") + " AS amount",
				[]string{"transform: column amount is a float (", "where orders has a decimal ("}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := d.newRunner(t, e)
				r.Planner.Set = loadEdited(t, filepath.Join(d.dir, "backfills"), "fix_dedup_bug.sql", tc.old, tc.new)
				b, _ := r.Planner.Set.Get("fix_dedup_bug")
				p, err := r.Planner.Plan(ctx, b, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range tc.findings {
					if !p.Blocked() || !hasFinding(p, "blocking", f) {
						t.Errorf("findings %+v\nwant blocking %q", p.Findings, f)
					}
				}
				if _, err := r.Start(ctx, "fix_dedup_bug", backfill.RunOptions{}); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), tc.findings[0]) {
					t.Errorf("run: got %v, want it refused with %q", err, tc.findings[0])
				}
				if run, err := r.Store.LatestRun(ctx, "fix_dedup_bug"); !errors.Is(err, fault.ErrNotFound) {
					t.Errorf("a blocked plan recorded a run: %v", err)
					if err == nil {
						r.Cancel(ctx, run.ID, "test") // so the next case starts from nothing
					}
				}
				rels, err := e.Relations(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, rel := range rels {
					if strings.Contains(rel.Name, "__v2") {
						t.Errorf("a blocked plan created %s", rel.Name)
						e.DropTable(ctx, rel.Name)
					}
				}
			})
		}
	})
}
