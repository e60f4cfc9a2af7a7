package rules

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestRelationshipsRangeProof: integer keys of a parent that fill their range without a gap
// prove a relationship from the aggregate scan's min and max alone; a gap, or a child value
// outside the range, falls back to the anti-join, which finds the orphans exactly.
func TestRelationshipsRangeProof(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		loadShop(t, e)
		key := []tsql.Column{{Name: "customer_id", Kind: tsql.TypeInt}}
		parents := map[string][][]any{"customers_all": nil, "customers_gapped": nil, "customers_nine": nil}
		for i := int64(1); i <= 99; i++ {
			parents["customers_all"] = append(parents["customers_all"], []any{i})
		}
		// 1..4 and 99, the values orders uses: no orphan, but a gap
		parents["customers_gapped"] = [][]any{{int64(1)}, {int64(2)}, {int64(3)}, {int64(4)}, {int64(99)}}
		// 1..9 without a gap, 99 outside it: order 99 on 07-08 is an orphan
		for i := int64(1); i <= 9; i++ {
			parents["customers_nine"] = append(parents["customers_nine"], []any{i})
		}
		for name, rows := range parents {
			if err := e.CreateTable(ctx, name, key, "", nil); err != nil {
				t.Fatal(err)
			}
			if err := e.Insert(ctx, name, []string{"customer_id"}, rows); err != nil {
				t.Fatal(err)
			}
		}
		rel := func(parent string) *fstest.MapFile {
			return &fstest.MapFile{Data: []byte("-- kind: relationships\n-- table: orders\n-- column: customer_id\n-- parent: " + parent + "\n-- partition: d\n")}
		}
		fsys := fstest.MapFS{
			"orders/proved.sql":  rel("customers_all"),
			"orders/gapped.sql":  rel("customers_gapped"),
			"orders/outside.sql": rel("customers_nine"),
			// the aggregate scan the proof rides on
			"orders/rows.sql": {Data: []byte("-- kind: completeness\n-- table: orders\n-- partition: d\n-- min_rows: 1\n")},
		}
		set, targets := loadSet(t, e, fsys)
		run := NewRunner(targets, WithClock(runClock)).Run(ctx, set.Rules)
		want := map[string]outcome{
			"proved":  {StatusPass, 0, []string{}},
			"gapped":  {StatusPass, 0, []string{}},
			"outside": {StatusFail, 1, []string{"2026-07-08"}},
			"rows":    {StatusPass, 0, []string{}},
		}
		if diff := cmp.Diff(want, outcomes(run)); diff != "" {
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
		antiJoin := map[string]bool{}
		for _, r := range run.Results {
			antiJoin[r.Rule] = strings.Contains(r.SQL, "NOT IN")
		}
		if diff := cmp.Diff(map[string]bool{"proved": false, "gapped": true, "outside": true, "rows": false}, antiJoin); diff != "" {
			t.Errorf("rules that ran an anti-join (-want +got):\n%s", diff)
		}
		if got := run.Results[indexOf(run, "outside")].Sample; len(got) != 1 || got[0][0].Value != int64(99) {
			t.Errorf("outside sample = %v, want customer_id 99", got)
		}
		// one aggregate scan of orders, three parent spans, two anti-joins after them
		if run.Queries != 6 {
			t.Errorf("queries = %d, want 6", run.Queries)
		}
	})
}

// TestRelationshipsManyOrphans: when the proof from the aggregate scan fails, or the parent has
// too many keys to hold, the anti-join runs as a follow-up; more orphan groups than it fetches
// (dupCap) are still counted exactly, with every failing partition, as when the rule runs alone.
func TestRelationshipsManyOrphans(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		// 15,000 lines over three days, each naming its own customer, none of them known
		child := []tsql.Column{{Name: "d", Kind: tsql.TypeDate}, {Name: "customer_id", Kind: tsql.TypeInt}}
		var lines [][]any
		for i := 0; i < 15_000; i++ {
			lines = append(lines, []any{day("2026-07-01").AddDate(0, 0, i%3), int64(1000 + i)})
		}
		createRows(t, e, "lines", child, lines)
		createRows(t, e, "lines_too", child, lines)
		key := []tsql.Column{{Name: "customer_id", Kind: tsql.TypeInt}}
		// a gap: the range proof fails
		createRows(t, e, "shops", key, [][]any{{int64(1)}, {int64(3)}})
		// more keys than the parent's values are read (refCap), none of them a line's
		var many [][]any
		for i := int64(0); i <= refCap; i++ {
			many = append(many, []any{100_000 + i})
		}
		createRows(t, e, "customers_many", key, many)
		fsys := fstest.MapFS{
			"gapped.sql": {Data: []byte("-- kind: relationships\n-- table: lines\n-- column: customer_id\n-- parent: shops\n-- partition: d\n")},
			// the aggregate scan of lines the range proof rides on
			"lines_rows.sql":   {Data: []byte("-- kind: completeness\n-- table: lines\n-- partition: d\n-- min_rows: 1\n")},
			"many_parents.sql": {Data: []byte("-- kind: relationships\n-- table: lines_too\n-- column: customer_id\n-- parent: customers_many\n-- partition: d\n")},
			// a scan of lines_too grouped by customer_id, which the orphan check rides on
			"lines_mix.sql": {Data: []byte("-- kind: distribution\n-- table: lines_too\n-- partition: d\n-- dimension: customer_id\n")},
		}
		set, targets := loadSet(t, e, fsys)
		days := []string{"2026-07-01", "2026-07-02", "2026-07-03"}
		want := map[string]outcome{
			"gapped":       {StatusFail, 15_000, days},
			"lines_rows":   {StatusPass, 0, []string{}},
			"many_parents": {StatusFail, 15_000, days},
			"lines_mix":    {StatusPass, 0, []string{}}, // three days are fewer than the baseline
		}
		run := NewRunner(targets, WithClock(runClock)).Run(ctx, set.Rules)
		if diff := cmp.Diff(want, outcomes(run)); diff != "" {
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
		for _, name := range []string{"gapped", "many_parents"} {
			rule, _ := set.Get(name)
			alone := NewRunner(targets, WithClock(runClock)).Run(ctx, []*Rule{rule})
			if diff := cmp.Diff(map[string]outcome{name: want[name]}, outcomes(alone)); diff != "" {
				t.Errorf("%s run alone (-want +got):\n%s", name, diff)
			}
		}
	})
}

// TestRelationshipsLookupJoin: text keys of a small parent, which no range proves, are joined
// into the relation's aggregate scan where the engine fuses a lookup join (DuckDB): a rule
// passes in that one query, a failing one then reads its orphans, NULLs ignored and where:
// kept, with the verdicts of the anti-join the other engine runs.
func TestRelationshipsLookupJoin(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		child := []tsql.Column{{Name: "d", Kind: tsql.TypeDate}, {Name: "country", Kind: tsql.TypeString, Nullable: true}}
		createRows(t, e, "visits", child, [][]any{
			{day("2026-07-01"), "DE"}, {day("2026-07-01"), "FR"}, {day("2026-07-02"), nil},
			{day("2026-07-02"), "XX"}, {day("2026-07-03"), "XX"}, {day("2026-07-03"), "DE"},
		})
		code := []tsql.Column{{Name: "code", Kind: tsql.TypeString}}
		createRows(t, e, "countries", code, [][]any{{"DE"}, {"FR"}, {"XX"}})
		createRows(t, e, "known", code, [][]any{{"DE"}, {"FR"}})
		rel := func(parent, where string) *fstest.MapFile {
			return &fstest.MapFile{Data: []byte("-- kind: relationships\n-- table: visits\n-- column: country\n-- parent: " + parent + "\n-- parent_column: code\n-- partition: d\n" + where)}
		}
		fsys := fstest.MapFS{
			"all.sql":   rel("countries", ""),
			"known.sql": rel("known", ""),
			"kept.sql":  rel("known", "-- where: d < '2026-07-03'\n"),
			"rows.sql":  {Data: []byte("-- kind: completeness\n-- table: visits\n-- partition: d\n-- min_rows: 1\n")},
			// the scan of the rows where: keeps, which kept rides on
			"kept_rows.sql": {Data: []byte("-- kind: completeness\n-- table: visits\n-- partition: d\n-- min_rows: 1\n-- where: d < '2026-07-03'\n")},
		}
		set, targets := loadSet(t, e, fsys)
		run := NewRunner(targets, WithClock(runClock)).Run(ctx, set.Rules)
		want := map[string]outcome{
			"all":       {StatusPass, 0, []string{}},
			"known":     {StatusFail, 2, []string{"2026-07-02", "2026-07-03"}},
			"kept":      {StatusFail, 1, []string{"2026-07-02"}},
			"rows":      {StatusPass, 0, []string{}},
			"kept_rows": {StatusPass, 0, []string{}},
		}
		if diff := cmp.Diff(want, outcomes(run)); diff != "" {
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
		if got := run.Results[indexOf(run, "known")].Sample; len(got) != 1 || got[0][0].Value != "XX" || got[0][1].Value != int64(2) {
			t.Errorf("known sample = %v, want XX in 2 rows", got)
		}
		joined := map[string]bool{}
		for _, r := range run.Results {
			joined[r.Rule] = strings.Contains(r.SQL, "LEFT JOIN")
		}
		fuses := e.Dialect().FusesLookupJoin()
		if diff := cmp.Diff(map[string]bool{"all": fuses, "known": fuses, "kept": fuses, "rows": fuses, "kept_rows": fuses}, joined); diff != "" {
			t.Errorf("rules read by a joined scan (-want +got):\n%s", diff)
		}
		// joined: the two scans of visits (all of it, the rows where: keeps) and the two failing
		// rules' anti-joins
		if fuses && run.Queries != 4 {
			t.Errorf("queries = %d, want 4", run.Queries)
		}
	})
}
