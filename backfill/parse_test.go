package backfill_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"trueup/backfill"
	"trueup/sqlfile"
)

func day(s string) time.Time {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestLoadReportsEveryProblem(t *testing.T) {
	fsys := fstest.MapFS{
		"good.sql": {Data: []byte("-- table: orders\n-- partition: order_date\n-- key: order_id\n-- scope: 2026-07-10..2026-07-18\n-- objective: fix\n--   it properly\n-- reason: bug\nSELECT * FROM orders_raw WHERE order_date >= $start AND order_date < $end\n")},
		"bad.sql": {Data: []byte(strings.Join([]string{
			"-- table: orders",
			"-- partition: order_date",
			"-- grain: week",
			"-- reason: whim",
			"-- scope: 2026-07-18..2026-07-10",
			"-- concurrency: 0",
			"-- throttle: soon",
			"-- window: 25:00-26:00",
			"-- colour: blue",
			"-- downstream: nowhere",
			"-- reason: bug",
			"DELETE FROM orders",
		}, "\n"))},
		"params.sql": {Data: []byte("-- table: t\n-- partition: d\n-- key: id\nSELECT * FROM t WHERE d >= $start AND d < $stop\n")},
	}
	set, err := backfill.Load(fsys, "backfills")
	var ps sqlfile.Problems
	if !errors.Is(err, backfill.ErrInvalid) || !errors.As(err, &ps) {
		t.Fatalf("got %v", err)
	}
	want := []string{
		"backfills/bad.sql:1: missing key key",
		"backfills/bad.sql:3: grain \"week\": want day, month or hour",
		"backfills/bad.sql:4: reason \"whim\": want one of bug, schema-change, new-data, migration, late-data",
		"backfills/bad.sql:5: scope \"2026-07-18..2026-07-10\": ends before it starts",
		"backfills/bad.sql:6: concurrency \"0\": want a number from 1 to 64",
		"backfills/bad.sql:7: throttle \"soon\": want a duration such as 500ms or 2s",
		"backfills/bad.sql:8: window \"25:00-26:00\": not a time of day",
		"backfills/bad.sql:9: unknown key colour",
		"backfills/bad.sql:11: duplicate key reason (first on line 4)",
		"backfills/bad.sql:12: SQL starts with DELETE: want a single read-only SELECT or WITH",
		"backfills/params.sql:4: unknown parameter $stop: a transform takes $start and $end",
	}
	got := strings.Split(err.Error(), "\n")
	for _, w := range want {
		found := false
		for _, g := range got {
			if strings.Contains(g, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("missing problem %q in:\n%s", w, err)
		}
	}
	if set == nil || len(set.Backfills) != 1 {
		t.Fatalf("the good file was not kept: %+v", set)
	}
	g := set.Backfills[0]
	if g.Objective != "fix it properly" || g.Scope.String() != "2026-07-10..2026-07-18" || g.Concurrency != 1 || g.Mode != backfill.ModePartitionReplace {
		t.Errorf("good file: %+v", g)
	}
}

func TestHourWindow(t *testing.T) {
	fsys := fstest.MapFS{"w.sql": {Data: []byte("-- table: t\n-- partition: d\n-- key: id\n-- window: 22:00-06:00\nSELECT 1 AS d, 1 AS id\n")}}
	set, err := backfill.Load(fsys, "")
	if err != nil {
		t.Fatal(err)
	}
	w := set.Backfills[0].Window
	at := func(h, m int) time.Time { return time.Date(2026, 7, 1, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		t    time.Time
		in   bool
		wait time.Duration
	}{
		{at(23, 0), true, 0}, {at(3, 0), true, 0}, {at(6, 0), false, 16 * time.Hour}, {at(21, 30), false, 30 * time.Minute},
	} {
		if w.Contains(tc.t) != tc.in || w.Until(tc.t) != tc.wait {
			t.Errorf("%s: contains %v until %s", tc.t.Format("15:04"), w.Contains(tc.t), w.Until(tc.t))
		}
	}
}
