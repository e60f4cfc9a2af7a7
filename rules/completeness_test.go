package rules

import (
	"context"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// createRows creates table with cols (not partitioned in storage) and inserts rows.
func createRows(t *testing.T, e tsql.Engine, table string, cols []tsql.Column, rows [][]any) {
	t.Helper()
	ctx := context.Background()
	if err := e.CreateTable(ctx, table, cols, "", nil); err != nil {
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

// TestCompletenessNullPartition: rows whose partition is NULL belong to no partition. They
// are reported as a failing partition NULL with their row count, and a continuous calendar
// runs from the first to the last partition that is not NULL (it used to start at year 1).
func TestCompletenessNullPartition(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		noon := 12 * time.Hour
		createRows(t, e, "events", []tsql.Column{
			{Name: "id", Kind: tsql.TypeInt},
			{Name: "d", Kind: tsql.TypeDate, Nullable: true},
			{Name: "ts", Kind: tsql.TypeTimestamp, Nullable: true},
		}, [][]any{
			{int64(1), day("2026-07-01"), day("2026-07-01").Add(noon)},
			{int64(2), day("2026-07-01"), day("2026-07-01").Add(noon)},
			{int64(3), day("2026-07-03"), day("2026-07-03").Add(noon)},
			{int64(4), nil, nil},
			{int64(5), nil, nil},
		})
		createRows(t, e, "events_clean", []tsql.Column{{Name: "d", Kind: tsql.TypeDate, Nullable: true}},
			[][]any{{day("2026-07-01")}, {day("2026-07-02")}})
		fsys := fstest.MapFS{
			"continuous.sql":    {Data: []byte("-- kind: completeness\n-- table: events\n-- partition: d\n-- expect: continuous\n")},
			"continuous_ts.sql": {Data: []byte("-- kind: completeness\n-- table: events\n-- partition: ts\n-- expect: continuous\n")},
			"not_null_d.sql":    {Data: []byte("-- kind: completeness\n-- table: events\n-- partition: d\n-- not_null: d\n")},
			"clean.sql":         {Data: []byte("-- kind: completeness\n-- table: events_clean\n-- partition: d\n-- expect: continuous\n")},
		}
		set, targets := loadSet(t, e, fsys)
		run := NewRunner(targets, WithClock(runClock)).Run(ctx, set.Rules)
		want := map[string]outcome{
			// 07-02 missing, two rows without a day
			"continuous":    {StatusFail, 3, []string{"NULL", "2026-07-02"}},
			"continuous_ts": {StatusFail, 3, []string{"NULL", "2026-07-02"}},
			// not_null on the partition column counts each row once
			"not_null_d": {StatusFail, 2, []string{"NULL"}},
			"clean":      {StatusPass, 0, []string{}},
		}
		if diff := cmp.Diff(want, outcomes(run)); diff != "" {
			for _, r := range run.Results {
				if r.Status == StatusError {
					t.Logf("%s: %s", r.Rule, r.Message)
				}
			}
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
		got := run.Results[indexOf(run, "continuous")].Sample
		wantSample := []Row{
			{{Name: "partition", Value: "NULL"}, {Name: "rows", Value: int64(2)}, {Name: "problem", Value: "2 rows with a NULL d"}},
			{{Name: "partition", Value: "2026-07-02"}, {Name: "rows", Value: int64(0)}, {Name: "problem", Value: "missing"}},
		}
		if diff := cmp.Diff(wantSample, got); diff != "" {
			t.Errorf("continuous sample (-want +got):\n%s", diff)
		}
	})
}
