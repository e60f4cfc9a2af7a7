package rules

import (
	"context"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

func day(s string) time.Time {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return t
}

// loadShop builds a small warehouse with one planted problem per kind:
//   - orders has no rows on 2026-07-02;
//   - on 07-06 order 18 was sent twice (the copy in EU, amount 20);
//   - on 07-08 an order names customer 99, who does not exist;
//   - on 07-09 an order has no customer;
//   - on 07-10 two orders have no id (APAC and LATAM);
//   - raw, the reference totals, says 42 for 07-04 where orders holds 40.
func loadShop(t *testing.T, e tsql.Engine) {
	t.Helper()
	ctx := context.Background()
	create := func(table string, cols []tsql.Column, partition string, rows [][]any) {
		t.Helper()
		if err := e.CreateTable(ctx, table, cols, partition, nil); err != nil {
			t.Fatalf("create %s: %v", table, err)
		}
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.Name
		}
		if err := e.Insert(ctx, table, names, rows); err != nil {
			t.Fatalf("insert %s: %v", table, err)
		}
	}
	regions := []string{"EU", "NA", "APAC", "LATAM"}
	var orders, raw, calendar [][]any
	id := int64(0)
	for d := day("2026-07-01"); d.Before(day("2026-07-11")); d = d.AddDate(0, 0, 1) {
		calendar = append(calendar, []any{d})
		if d.Equal(day("2026-07-02")) {
			continue
		}
		sum := 0.0
		for i, r := range regions {
			id++
			var cust any = int64(i + 1)
			switch {
			case d.Equal(day("2026-07-08")) && r == "LATAM":
				cust = int64(99)
			case d.Equal(day("2026-07-09")) && r == "APAC":
				cust = nil
			}
			orders = append(orders, []any{id, d, cust, r, 10.0, d.Add(12 * time.Hour)})
			sum += 10
		}
		switch d.Format("2006-01-02") {
		case "2026-07-06":
			orders = append(orders, []any{id - 2, d, int64(1), "EU", 20.0, d.Add(12 * time.Hour)})
			sum += 20
		case "2026-07-10":
			orders = append(orders, []any{nil, d, int64(1), "APAC", 10.0, d.Add(12 * time.Hour)},
				[]any{nil, d, int64(1), "LATAM", 10.0, d.Add(12 * time.Hour)})
			sum += 20
		case "2026-07-04":
			sum = 42
		}
		raw = append(raw, []any{d, sum})
	}
	create("orders", []tsql.Column{
		{Name: "id", Kind: tsql.TypeInt, Nullable: true},
		{Name: "d", Kind: tsql.TypeDate},
		{Name: "customer_id", Kind: tsql.TypeInt, Nullable: true},
		{Name: "region", Kind: tsql.TypeString},
		{Name: "amount", Type: "DECIMAL(18,2)", Kind: tsql.TypeDecimal},
		{Name: "ts", Kind: tsql.TypeTimestamp},
	}, "d", orders)
	create("raw", []tsql.Column{{Name: "d", Kind: tsql.TypeDate}, {Name: "amount", Type: "DECIMAL(18,2)", Kind: tsql.TypeDecimal}}, "d", raw)
	create("calendar", []tsql.Column{{Name: "d", Kind: tsql.TypeDate}}, "", calendar)
	create("customers", []tsql.Column{{Name: "customer_id", Kind: tsql.TypeInt}}, "", [][]any{{int64(1)}, {int64(2)}, {int64(3)}, {int64(4)}})
	create("regions", []tsql.Column{{Name: "region", Kind: tsql.TypeString}}, "", [][]any{{"EU"}, {"NA"}, {"APAC"}, {"LATAM"}})
	create("dims", []tsql.Column{{Name: "a", Kind: tsql.TypeInt}, {Name: "b", Kind: tsql.TypeString}}, "", [][]any{{int64(1), "x"}})
}

// shopRules holds one passing and one failing rule (at least) of every kind over loadShop.
var shopRules = fstest.MapFS{
	"orders/complete_range.sql":      {Data: []byte("-- kind: completeness\n-- table: orders\n-- partition: d\n-- expect: 2026-07-01..2026-07-10\n")},
	"orders/complete_recent.sql":     {Data: []byte("-- kind: completeness\n-- table: orders\n-- partition: d\n-- expect: 2026-07-03..2026-07-10\n-- min_rows: 4\n")},
	"orders/complete_not_null.sql":   {Data: []byte("-- kind: completeness\n-- table: orders\n-- partition: d\n-- not_null: customer_id, region\n")},
	"orders/complete_calendar.sql":   {Data: []byte("-- kind: completeness\n-- table: orders\n-- partition: d\n-- reference: calendar\n")},
	"orders/complete_continuous.sql": {Data: []byte("-- kind: completeness\n-- table: orders\n-- partition: d\n-- expect: continuous\n")},
	"orders/complete_min_rows.sql":   {Data: []byte("-- kind: completeness\n-- table: orders\n-- partition: d\n-- min_rows: 5\n-- severity: warn\n")},
	"orders/complete_table_ids.sql":  {Data: []byte("-- kind: completeness\n-- table: orders\n-- not_null: id, region\n")},
	"orders/complete_table_ok.sql":   {Data: []byte("-- kind: completeness\n-- table: orders\n-- not_null: d, region\n-- min_rows: 39\n")},
	"orders/unique_id.sql":           {Data: []byte("-- kind: uniqueness\n-- table: orders\n-- columns: id\n")},
	"orders/unique_id_region.sql":    {Data: []byte("-- kind: uniqueness\n-- table: orders\n-- columns: id, region\n")},
	"orders/unique_region_daily.sql": {Data: []byte("-- kind: uniqueness\n-- table: orders\n-- columns: region\n-- partition: d\n")},
	"orders/totals_tight.sql":        {Data: []byte("-- kind: totals\n-- table: orders\n-- partition: d\n-- measure: sum(amount)\n-- reference: raw\n-- tolerance: 1%\n")},
	"orders/totals_loose.sql": {Data: []byte(`-- kind: totals
-- table: orders
-- partition: d
-- measure: sum(amount)
-- tolerance: 10%
SELECT d, sum(amount) AS amount
FROM raw
GROUP BY d
`)},
	"orders/dist_tight.sql": {Data: []byte("-- kind: distribution\n-- table: orders\n-- partition: d\n-- dimension: region\n-- baseline: 3\n-- threshold: 10%\n")},
	"orders/dist_loose.sql": {Data: []byte("-- kind: distribution\n-- table: orders\n-- partition: d\n-- dimension: region\n-- baseline: 3\n-- threshold: 20%\n")},
	// dist_tight, but no day has 1000 rows: none is judged
	"orders/dist_min_rows.sql":  {Data: []byte("-- kind: distribution\n-- table: orders\n-- partition: d\n-- dimension: region\n-- baseline: 3\n-- threshold: 10%\n-- min_rows: 1000\n")},
	"orders/rel_customer.sql":   {Data: []byte("-- kind: relationships\n-- table: orders\n-- column: customer_id\n-- parent: customers\n-- partition: d\n")},
	"orders/rel_region.sql":     {Data: []byte("-- kind: relationships\n-- table: orders\n-- column: region\n-- parent: regions\n")},
	"orders/rel_region_bad.sql": {Data: []byte("-- kind: relationships\n-- table: orders\n-- column: region\n-- parent: dims\n-- parent_column: b\n-- partition: d\n")},
	"orders/rel_id.sql":         {Data: []byte("-- kind: relationships\n-- table: orders\n-- column: id\n-- parent: customers\n-- parent_column: customer_id\n")},
	"orders/fresh_ok.sql":       {Data: []byte("-- kind: freshness\n-- table: orders\n-- column: ts\n-- max_age: 1d\n")},
	"orders/fresh_stale.sql":    {Data: []byte("-- kind: freshness\n-- table: orders\n-- column: ts\n-- max_age: 12h\n")},
	"orders/fresh_date.sql":     {Data: []byte("-- kind: freshness\n-- table: orders\n-- column: d\n-- max_age: 1d\n")},
	"orders/custom_big.sql":     {Data: []byte("-- kind: custom\n-- partition: d\nSELECT id, d, amount FROM orders WHERE amount > 15\n")},
	"orders/custom_neg.sql":     {Data: []byte("-- kind: custom\nSELECT id, d, amount FROM orders WHERE amount < 0\n")},
	"dims/schema_dims.sql":      {Data: []byte("-- kind: schema\n-- table: dims\n")},
	// partitions computed from a timestamp, and from a date at the month grain
	"orders/complete_ts.sql":    {Data: []byte("-- kind: completeness\n-- table: orders\n-- partition: ts\n-- grain: day\n-- expect: 2026-07-01..2026-07-10\n")},
	"orders/totals_monthly.sql": {Data: []byte("-- kind: totals\n-- table: orders\n-- partition: d\n-- grain: month\n-- measure: sum(amount)\n-- reference: raw\n-- tolerance: 0.1%\n")},
}

// loadSet loads the rules of fsys, validated against e as their one target.
func loadSet(t *testing.T, e tsql.Engine, fsys fs.FS) (*Set, TargetMap) {
	t.Helper()
	targets := TargetMap{Default: "w", Engines: map[string]tsql.Engine{"w": e}}
	set, err := Load(t.Context(), fsys, "rules", targets)
	if err != nil {
		t.Fatal(err)
	}
	return set, targets
}

// memSchemas is an in-memory SchemaStore.
type memSchemas struct {
	mu   sync.Mutex
	snap map[string][]tsql.Column
}

func (m *memSchemas) SchemaSnapshot(_ context.Context, rule, target, relation string) ([]tsql.Column, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.snap[rule+"\x00"+target+"\x00"+relation]
	return c, ok, nil
}

func (m *memSchemas) RecordSchema(_ context.Context, rule, target, relation string, cols []tsql.Column) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snap[rule+"\x00"+target+"\x00"+relation] = cols
	return nil
}

type outcome struct {
	Status     Status
	Violations int64
	Failing    []string
}

func outcomes(run *Run) map[string]outcome {
	out := map[string]outcome{}
	for _, r := range run.Results {
		out[r.Rule] = outcome{r.Status, r.Violations, r.FailingPartitions}
	}
	return out
}

var runClock = func() time.Time { return time.Date(2026, 7, 11, 6, 0, 0, 0, time.UTC) }

func TestEveryKind(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		loadShop(t, e)
		targets := TargetMap{Default: "shop", Engines: map[string]tsql.Engine{"shop": e}}
		set, err := Load(ctx, shopRules, "rules", targets)
		if err != nil {
			t.Fatal(err)
		}
		schemas := &memSchemas{snap: map[string][]tsql.Column{}}
		runner := NewRunner(targets, WithClock(runClock), WithSchemaStore(schemas), WithParallel(2))
		run := runner.Run(ctx, set.Rules)
		none := []string{}
		want := map[string]outcome{
			"complete_range":      {StatusFail, 1, []string{"2026-07-02"}},
			"complete_recent":     {StatusPass, 0, none},
			"complete_not_null":   {StatusFail, 1, []string{"2026-07-09"}},
			"complete_calendar":   {StatusFail, 1, []string{"2026-07-02"}},
			"complete_continuous": {StatusFail, 1, []string{"2026-07-02"}},
			"complete_min_rows":   {StatusFail, 7, []string{"2026-07-01", "2026-07-03", "2026-07-04", "2026-07-05", "2026-07-07", "2026-07-08", "2026-07-09"}},
			"complete_table_ids":  {StatusFail, 2, none}, // the two orders without an id, whole table
			"complete_table_ok":   {StatusPass, 0, none},
			"unique_id":           {StatusFail, 1, none},
			"unique_id_region":    {StatusPass, 0, none},
			"unique_region_daily": {StatusFail, 3, []string{"2026-07-06", "2026-07-10"}},
			"totals_tight":        {StatusFail, 1, []string{"2026-07-04"}},
			"totals_loose":        {StatusPass, 0, none},
			"dist_tight":          {StatusFail, 1, []string{"2026-07-06"}},
			"dist_loose":          {StatusPass, 0, none},
			"dist_min_rows":       {StatusPass, 0, none},
			"rel_customer":        {StatusFail, 1, []string{"2026-07-08"}},
			"rel_region":          {StatusPass, 0, none},
			"rel_id":              {StatusFail, 33, none}, // ids 5..36 and the resent 18; NULL ids ignored
			"rel_region_bad":      {StatusFail, 39, []string{"2026-07-01", "2026-07-03", "2026-07-04", "2026-07-05", "2026-07-06", "2026-07-07", "2026-07-08", "2026-07-09", "2026-07-10"}},
			"fresh_ok":            {StatusPass, 0, none},
			"fresh_stale":         {StatusFail, 1, none},
			"fresh_date":          {StatusFail, 1, none}, // 07-10 counts as midnight: 30h old
			"custom_big":          {StatusFail, 1, []string{"2026-07-06"}},
			"custom_neg":          {StatusPass, 0, none},
			"schema_dims":         {StatusPass, 0, none}, // first run records the snapshot
			"complete_ts":         {StatusFail, 1, []string{"2026-07-02"}},
			"totals_monthly":      {StatusFail, 1, []string{"2026-07-01"}}, // 400 against 402
		}
		if diff := cmp.Diff(want, outcomes(run)); diff != "" {
			for _, r := range run.Results {
				if r.Status == StatusError {
					t.Logf("%s: %s\n%s", r.Rule, r.Message, r.SQL)
				}
			}
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
		// orders: one scan grouped by (d, region) carries every partition and table aggregate,
		// the per-day uniqueness, the orphans of region and the customer and id spans; the
		// count and distinct count of id (unique_id), a duplicate scan (unique_id_region); the span of customers' keys (shared); the values of regions and of
		// dims.b; raw, calendar; the reference SELECT; one column listing; then follow-ups:
		// the NULL rows of a partitioned and of a whole-table rule, two orphan anti-joins as
		// customers is 1..4, the rows of custom_big (both custom rules are counted by the
		// orders scan; custom_neg counts none), and the duplicate ids, as their counts differ.
		// The day of ts and the month of d are other groupings: orders twice more, raw once.
		// A completeness rule's summary says what is wrong, not "N other violations".
		messages := map[string]string{}
		for _, r := range run.Results {
			messages[r.Rule] = r.Message
		}
		for rule, want := range map[string]string{
			"complete_table_ids": "2 rows NULL in id",
			"complete_not_null":  "1 row NULL in customer_id",
			"complete_min_rows":  "7 partitions with fewer than min_rows 5",
		} {
			if messages[rule] != want {
				t.Errorf("%s says %q, want %q", rule, messages[rule], want)
			}
		}
		if run.Queries != 19 {
			t.Errorf("queries = %d, want 19", run.Queries)
		}
		if run.Failed() != true {
			t.Errorf("run.Failed() = false with failing error-severity rules")
		}

		t.Run("samples", func(t *testing.T) {
			got := map[string][]Row{}
			for _, r := range run.Results {
				got[r.Rule] = r.Sample
			}
			wantSamples := map[string][]Row{
				"unique_id":    {{{Name: "id", Value: int64(18)}, {Name: "rows", Value: int64(2)}}},
				"totals_tight": {{{Name: "partition", Value: "2026-07-04"}, {Name: "value", Value: 40.0}, {Name: "reference", Value: 42.0}, {Name: "difference", Value: -2.0}, {Name: "difference_pct", Value: -4.76}}},
				"rel_customer": {{{Name: "customer_id", Value: int64(99)}, {Name: "rows", Value: int64(1)}}},
				"rel_id":       {{{Name: "id", Value: int64(18)}, {Name: "rows", Value: int64(2)}}, {{Name: "id", Value: int64(5)}, {Name: "rows", Value: int64(1)}}, {{Name: "id", Value: int64(6)}, {Name: "rows", Value: int64(1)}}},
				// region is a key of the (d, region) scan: its orphans come from those groups
				"rel_region_bad": {{{Name: "region", Value: "APAC"}, {Name: "rows", Value: int64(10)}}, {{Name: "region", Value: "EU"}, {Name: "rows", Value: int64(10)}}, {{Name: "region", Value: "LATAM"}, {Name: "rows", Value: int64(10)}}, {{Name: "region", Value: "NA"}, {Name: "rows", Value: int64(9)}}},
				"dist_tight":     {{{Name: "partition", Value: "2026-07-06"}, {Name: "region", Value: "EU"}, {Name: "share_pct", Value: 40.0}, {Name: "baseline_pct", Value: 25.0}, {Name: "change_pct", Value: 15.0}}},
				"custom_big":     {{{Name: "id", Value: int64(18)}, {Name: "d", Value: "2026-07-06"}, {Name: "amount", Value: 20.0}}},
				"fresh_stale":    {{{Name: "newest", Value: "2026-07-10 12:00:00"}, {Name: "age", Value: "18h"}, {Name: "max_age", Value: "12h"}}},
			}
			got["rel_id"] = limitSample(got["rel_id"], 3)
			for rule, w := range wantSamples {
				if diff := cmp.Diff(w, got[rule]); diff != "" {
					t.Errorf("%s sample (-want +got):\n%s", rule, diff)
				}
			}
			ids := got["complete_table_ids"]
			if len(ids) != 3 || ids[0].Get("problem") != "2 rows NULL in id" || ids[1].Get("id") != nil || ids[2].Get("id") != nil {
				t.Errorf("complete_table_ids sample: %v", ids)
			}
			nn := got["complete_not_null"]
			if len(nn) != 2 || nn[0].Get("problem") != "1 row NULL in customer_id" || nn[1].Get("customer_id") != nil || nn[1].Get("region") != "APAC" {
				t.Errorf("complete_not_null sample: %v", nn)
			}
		})

		t.Run("schema_drift", func(t *testing.T) {
			if err := e.DropTable(ctx, "dims"); err != nil {
				t.Fatal(err)
			}
			if err := e.CreateTable(ctx, "dims", []tsql.Column{{Name: "a", Kind: tsql.TypeInt}, {Name: "b", Kind: tsql.TypeInt}, {Name: "c", Kind: tsql.TypeString}}, "", nil); err != nil {
				t.Fatal(err)
			}
			rule, _ := set.Get("schema_dims")
			res := runner.Run(ctx, []*Rule{rule}).Results[0]
			var changes []string
			for _, row := range res.Sample {
				changes = append(changes, row.Get("column").(string)+" "+row.Get("change").(string))
			}
			sort.Strings(changes)
			if res.Status != StatusFail || cmp.Diff([]string{"b type", "c added"}, changes) != "" {
				t.Errorf("schema after drift: %s %v (%s)", res.Status, changes, res.Message)
			}
			res = NewRunner(targets, WithSchemaStore(schemas), WithAcceptSchema(true)).Run(ctx, []*Rule{rule}).Results[0]
			res2 := runner.Run(ctx, []*Rule{rule}).Results[0]
			if res.Status != StatusPass || res2.Status != StatusPass {
				t.Errorf("after accepting the new schema: %s then %s (%s)", res.Status, res2.Status, res2.Message)
			}
		})

		t.Run("rendered_sql_runs", func(t *testing.T) {
			for _, r := range run.Results {
				if r.SQL == "" {
					t.Errorf("%s: no rendered SQL", r.Rule)
				}
			}
			tight := run.Results[indexOf(run, "totals_tight")].SQL
			if !strings.Contains(tight, "sum(amount)") || !strings.Contains(tight, "GROUP BY") {
				t.Errorf("totals_tight SQL does not show its aggregate:\n%s", tight)
			}
		})
	})
}

func indexOf(run *Run, rule string) int {
	for i, r := range run.Results {
		if r.Rule == rule {
			return i
		}
	}
	return -1
}

// TestCrossTargetTotals compares a DuckDB table with a reference in ClickHouse
// (reference_target), the way a team checks a warehouse against its source system.
func TestCrossTargetTotals(t *testing.T) {
	duck := sqltest.DuckDB(t)
	ch := sqltest.ClickHouse(t)
	if ch == nil {
		t.Skip("needs ClickHouse")
	}
	loadShop(t, duck)
	loadShop(t, ch)
	ctx := context.Background()
	targets := TargetMap{Default: "duck", Engines: map[string]tsql.Engine{"duck": duck, "ch": ch}}
	set, err := Load(ctx, fstest.MapFS{
		"relation.sql": {Data: []byte("-- kind: totals\n-- table: orders\n-- partition: d\n-- measure: sum(amount)\n-- reference: raw\n-- reference_target: ch\n-- tolerance: 1%\n")},
		"select.sql":   {Data: []byte("-- kind: totals\n-- table: orders\n-- partition: d\n-- measure: count(*)\n-- reference: SELECT d, count() FROM orders GROUP BY d\n-- reference_target: ch\n")},
		"calendar.sql": {Data: []byte("-- kind: completeness\n-- table: orders\n-- partition: d\n-- reference: calendar\n-- reference_target: ch\n")},
	}, "rules", targets)
	if err != nil {
		t.Fatal(err)
	}
	run := NewRunner(targets).Run(ctx, set.Rules)
	want := map[string]outcome{
		"relation": {StatusFail, 1, []string{"2026-07-04"}},
		"select":   {StatusPass, 0, []string{}},
		"calendar": {StatusFail, 1, []string{"2026-07-02"}},
	}
	if diff := cmp.Diff(want, outcomes(run)); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}
