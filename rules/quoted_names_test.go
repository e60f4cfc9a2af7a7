package rules

import (
	"context"
	"errors"
	"testing"
	"testing/fstest"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestQuotedColumnNames: a column whose name holds a space is named in a rule's header as in
// SQL, in double quotes, alone or in a list; before, the list split at the space and refused
// both halves.
func TestQuotedColumnNames(t *testing.T) {
	fsys := fstest.MapFS{
		"unique.sql":   {Data: []byte("-- kind: uniqueness\n-- table: s\n-- columns: \"order id\"\n")},
		"pair.sql":     {Data: []byte("-- kind: uniqueness\n-- table: s\n-- columns: \"order id\", v\n")},
		"fresh.sql":    {Data: []byte("-- kind: freshness\n-- table: s\n-- column: \"placed at\"\n-- max_age: 1d\n")},
		"halfway.sql":  {Data: []byte("-- kind: uniqueness\n-- table: s\n-- columns: \"order id\n")},
		"unquoted.sql": {Data: []byte("-- kind: uniqueness\n-- table: s\n-- columns: order id\n")},
	}
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		cols := []tsql.Column{{Name: "order id", Kind: tsql.TypeInt}, {Name: "v", Kind: tsql.TypeInt}, {Name: "placed at", Kind: tsql.TypeTimestamp}}
		if err := e.CreateTable(ctx, "s", cols, "", []string{"order id"}); err != nil {
			t.Fatal(err)
		}
		at := day("2026-07-01")
		if err := e.Insert(ctx, "s", []string{"order id", "v", "placed at"}, [][]any{{int64(1), int64(1), at}, {int64(1), int64(2), at}, {int64(2), int64(1), at}}); err != nil {
			t.Fatal(err)
		}
		targets := TargetMap{Default: "shop", Engines: map[string]tsql.Engine{"shop": e}}
		_, err := Load(ctx, fsys, "rules", targets)
		var le *LoadError
		if err == nil || !errors.As(err, &le) || len(le.Problems) != 3 {
			t.Fatalf("want the two badly written lists refused (3 problems), got %v", err)
		}
		good := fstest.MapFS{"unique.sql": fsys["unique.sql"], "pair.sql": fsys["pair.sql"], "fresh.sql": fsys["fresh.sql"]}
		set, err := Load(ctx, good, "rules", targets)
		if err != nil {
			t.Fatal(err)
		}
		run := NewRunner(targets, WithClock(runClock)).Run(ctx, set.Rules)
		got := map[string]Status{}
		for _, r := range run.Results {
			got[r.Rule] = r.Status
		}
		if got["unique"] != StatusFail || got["pair"] != StatusPass || got["fresh"] != StatusFail {
			t.Errorf("verdicts %v: want order id repeated (fail), the pair unique (pass), placed at stale (fail)", got)
		}
	})
}
