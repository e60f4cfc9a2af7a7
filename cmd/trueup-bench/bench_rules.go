package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing/fstest"
	"time"

	"trueup/rules"
	tsql "trueup/sql"
)

// benchRuleSet is 20 rules of every kind over one orders table, as a team would write them:
// partition checks, totals against a reference, region shares, keys, freshness, the schema.
// The fused run reads orders once for all of them, plus the small reference tables.
var benchRuleSet = map[string]string{
	"complete_year.sql":       "-- kind: completeness\n-- table: orders\n-- partition: order_date\n-- expect: 2026-01-01..2026-12-31\n",
	"complete_continuous.sql": "-- kind: completeness\n-- table: orders\n-- partition: order_date\n-- expect: continuous\n",
	"min_rows.sql":            "-- kind: completeness\n-- table: orders\n-- partition: order_date\n-- min_rows: 1000\n",
	"not_null_keys.sql":       "-- kind: completeness\n-- table: orders\n-- partition: order_date\n-- not_null: order_id, customer_id\n",
	"not_null_values.sql":     "-- kind: completeness\n-- table: orders\n-- partition: order_date\n-- not_null: region, amount\n",
	"complete_vs_ref.sql":     "-- kind: completeness\n-- table: orders\n-- partition: order_date\n-- reference: daily_ref\n",
	"revenue_vs_ref.sql":      "-- kind: totals\n-- table: orders\n-- partition: order_date\n-- measure: sum(amount)\n-- reference: daily_ref\n-- reference_measure: sum(revenue)\n-- tolerance: 0.1%\n",
	"count_vs_ref.sql":        "-- kind: totals\n-- table: orders\n-- partition: order_date\n-- measure: count(*)\n-- reference: SELECT order_date, orders FROM daily_ref\n",
	"customers_vs_ref.sql":    "-- kind: totals\n-- table: orders\n-- partition: order_date\n-- measure: max(customer_id)\n-- reference: daily_ref\n-- reference_measure: max(max_customer)\n",
	"region_share.sql":        "-- kind: distribution\n-- table: orders\n-- partition: order_date\n-- dimension: region\n-- threshold: 5%\n",
	"region_revenue.sql":      "-- kind: distribution\n-- table: orders\n-- partition: order_date\n-- dimension: region\n-- measure: sum(amount)\n-- threshold: 5%\n",
	"one_row_per_region.sql":  "-- kind: uniqueness\n-- table: region_days\n-- columns: order_date, region\n",
	"one_row_per_day.sql":     "-- kind: uniqueness\n-- table: daily_ref\n-- columns: order_date\n",
	"known_customer.sql":      "-- kind: relationships\n-- table: orders\n-- column: customer_id\n-- parent: customers\n-- partition: order_date\n",
	"known_region.sql":        "-- kind: relationships\n-- table: orders\n-- column: region\n-- parent: regions\n",
	"fresh_day.sql":           "-- kind: freshness\n-- table: orders\n-- column: order_date\n-- max_age: 400d\n",
	"fresh_week.sql":          "-- kind: freshness\n-- table: orders\n-- column: order_date\n-- max_age: 7d\n-- severity: warn\n",
	"orders_schema.sql":       "-- kind: schema\n-- table: orders\n",
	"ref_schema.sql":          "-- kind: schema\n-- table: daily_ref\n",
	"no_negative_amount.sql":  "-- kind: custom\n-- partition: order_date\nSELECT order_id, order_date, amount FROM orders WHERE amount < 0\n",
}

// benchRules compares `trueup check` of 20 rules over a 20M-row table with (a) one bare
// count/sum scan of the table and (b) the same checks issued one query per check.
func benchRules(ctx context.Context, b *env) error {
	e, err := b.duckdb(ctx, "rules")
	if err != nil {
		return err
	}
	defer e.Close()
	start := time.Now()
	if err := makeOrders(ctx, e, "orders", b.rows, 365); err != nil {
		return err
	}
	for _, q := range []string{
		`CREATE TABLE customers AS SELECT CAST(i AS BIGINT) AS customer_id FROM range(100000) t(i)`,
		`CREATE TABLE regions AS SELECT * FROM (VALUES ('EMEA'), ('NA'), ('APAC'), ('LATAM')) t(region)`,
		`CREATE TABLE daily_ref AS SELECT order_date, count(*) AS orders, sum(amount) AS revenue, max(customer_id) AS max_customer FROM orders GROUP BY order_date`,
		`CREATE TABLE region_days AS SELECT DISTINCT order_date, region FROM orders`,
	} {
		if err := e.Exec(ctx, q); err != nil {
			return err
		}
	}
	fmt.Printf("setup: %d rows over 365 days in %.1fs\n", b.rows, time.Since(start).Seconds())

	fsys := fstest.MapFS{}
	for name, body := range benchRuleSet {
		fsys["orders/"+name] = &fstest.MapFile{Data: []byte(body)}
	}
	targets := rules.TargetMap{Default: "bench", Engines: map[string]tsql.Engine{"bench": e}}
	var set *rules.Set
	load, err := timed(func() error { set, err = rules.Load(ctx, fsys, "rules", targets); return err })
	if err != nil {
		return err
	}
	clock := func() time.Time { return time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) }
	schemas := &benchSchemas{snap: map[string][]tsql.Column{}}
	runner := rules.NewRunner(targets, rules.WithClock(clock), rules.WithSchemaStore(schemas))
	runner.Run(ctx, set.Rules) // records the schema snapshots; warms the file cache like the bare scan below

	bare := "SELECT count(*), sum(amount) FROM orders"
	tb, err := bestOf(3, func() error { _, err := e.Query(ctx, bare); return err })
	if err != nil {
		return err
	}
	perPartition := "SELECT order_date, count(*), sum(amount) FROM orders GROUP BY order_date"
	tp, err := bestOf(3, func() error { _, err := e.Query(ctx, perPartition); return err })
	if err != nil {
		return err
	}
	var fused *rules.Run
	tf, _ := bestOf(3, func() error { fused = runner.Run(ctx, set.Rules); return nil })
	if bad := errored(fused); bad != "" {
		return fmt.Errorf("fused run: %s", bad)
	}
	queriesAlone := 0
	ta, err := bestOf(3, func() error {
		queriesAlone = 0
		for _, r := range set.Rules {
			run := runner.Run(ctx, []*rules.Rule{r})
			queriesAlone += run.Queries
			if bad := errored(run); bad != "" {
				return fmt.Errorf("%s", bad)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	pass, fail, _ := fused.Counts()
	fmt.Printf("%d rules (%d pass, %d fail); validated in %.2fs; fused run issued %d queries, one query per check %d\n",
		len(set.Rules), pass, fail, load.Seconds(), fused.Queries, queriesAlone)
	report(fmt.Sprintf("check vs one bare scan, %d rows", b.rows), tf, tb, "≤ 1.5x")
	report("check vs one bare scan per partition", tf, tp, "for scale")
	fmt.Printf("%-40s trueup %9.3fs   one query per check %9.3fs   speed-up %5.2fx   (target ≥ 3x)\n",
		"check vs one query per check", tf.Seconds(), ta.Seconds(), ta.Seconds()/tf.Seconds())

	// The key uniqueness every team writes cannot share a scan: it groups by 20M keys.
	unique, err := rules.Parse("rules/orders/unique_order_id.sql", "-- kind: uniqueness\n-- table: orders\n-- columns: order_id\n")
	if err != nil {
		return err
	}
	if err := rules.Validate(ctx, []*rules.Rule{unique}, targets); len(err) > 0 {
		return fmt.Errorf("%v", err)
	}
	var withKey *rules.Run
	tk, _ := timed(func() error {
		withKey = runner.Run(ctx, append(append([]*rules.Rule{}, set.Rules...), unique))
		return nil
	})
	if bad := errored(withKey); bad != "" {
		return fmt.Errorf("run with the key rule: %s", bad)
	}
	fmt.Printf("%-40s trueup %9.3fs   (%d queries; the GROUP BY order_id alone is the difference)\n",
		"the 20 rules + uniqueness of order_id", tk.Seconds(), withKey.Queries)
	return nil
}

// bestOf runs fn n times and returns its fastest time: the figure least disturbed by the
// machine, for both sides of a comparison alike.
func bestOf(n int, fn func() error) (time.Duration, error) {
	var best time.Duration
	for i := 0; i < n; i++ {
		d, err := timed(fn)
		if err != nil {
			return 0, err
		}
		if i == 0 || d < best {
			best = d
		}
	}
	return best, nil
}

func errored(run *rules.Run) string {
	var bad []string
	for _, r := range run.Results {
		if r.Status == rules.StatusError {
			bad = append(bad, r.Rule+": "+r.Message)
		}
	}
	return strings.Join(bad, "; ")
}

// benchSchemas keeps schema snapshots in memory.
type benchSchemas struct {
	mu   sync.Mutex
	snap map[string][]tsql.Column
}

func (s *benchSchemas) SchemaSnapshot(_ context.Context, rule string) ([]tsql.Column, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.snap[rule]
	return c, ok, nil
}

func (s *benchSchemas) RecordSchema(_ context.Context, rule, _, _ string, cols []tsql.Column) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snap[rule] = cols
	return nil
}
