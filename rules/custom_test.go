package rules

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestCustomFilterRidesTheScan: a custom SELECT that only filters one relation is counted by
// that relation's aggregate scan; its rows are read only when it fails, and the count stays
// exact past the rows fetched. Any other SELECT runs as written.
func TestCustomFilterRidesTheScan(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate}, {Name: "v", Kind: tsql.TypeInt}}
		if err := e.CreateTable(ctx, "events", cols, "d", nil); err != nil {
			t.Fatal(err)
		}
		var rows [][]any
		for i := int64(0); i < 25_000; i++ {
			rows = append(rows, []any{i, day("2026-07-01").AddDate(0, 0, int(i%3)), i % 7})
		}
		if err := e.Insert(ctx, "events", []string{"id", "d", "v"}, rows); err != nil {
			t.Fatal(err)
		}
		fsys := fstest.MapFS{
			"events/rows.sql": {Data: []byte("-- kind: completeness\n-- table: events\n-- partition: d\n-- min_rows: 1\n")},
			// 3,571 rows with v = 6, on all three days
			"events/no_six.sql": {Data: []byte("-- kind: custom\n-- partition: d\nSELECT id, d, v FROM events WHERE v = 6 -- six is reserved\n")},
			// 14,286 rows (v < 6 on two of the days): more than a fetch holds
			"events/small.sql":       {Data: []byte("-- kind: custom\n-- partition: d\nSELECT * FROM events WHERE v < 6 AND d <> '2026-07-03'\n")},
			"events/no_negative.sql": {Data: []byte("-- kind: custom\nSELECT id FROM events WHERE v < 0\n")},
			// not a plain filter: runs on its own
			"events/no_gap.sql": {Data: []byte("-- kind: custom\nSELECT d, count(*) AS n FROM events WHERE v = 0 GROUP BY d HAVING count(*) < 10\n")},
		}
		set, targets := loadSet(t, e, fsys)
		run := NewRunner(targets, WithClock(func() time.Time { return day("2026-07-04") })).Run(ctx, set.Rules)
		days := []string{"2026-07-01", "2026-07-02", "2026-07-03"}
		want := map[string]outcome{
			"rows":        {StatusPass, 0, []string{}},
			"no_six":      {StatusFail, 3571, days},
			"small":       {StatusFail, 14286, days[:2]},
			"no_negative": {StatusPass, 0, []string{}},
			"no_gap":      {StatusPass, 0, []string{}},
		}
		if diff := cmp.Diff(want, outcomes(run)); diff != "" {
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
		if s := run.Results[indexOf(run, "no_six")].Sample; len(s) != 10 || s[0][2].Value != int64(6) {
			t.Errorf("no_six sample = %v, want 10 rows with v = 6", s)
		}
		// one scan of events counts the three filters; no_gap runs as written; then the rows
		// of the two failing filters, and the partitions of the one with too many to fetch
		if run.Queries != 5 {
			for _, st := range run.Statements {
				t.Log(st.SQL)
			}
			t.Errorf("queries = %d, want 5", run.Queries)
		}
		scan := run.Statements[0].SQL
		if !strings.Contains(scan, "(v = 6)") || !strings.Contains(scan, "(v < 0)") {
			t.Errorf("the scan does not count the filters:\n%s", scan)
		}
	})
}
