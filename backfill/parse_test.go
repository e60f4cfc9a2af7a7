package backfill_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/backfill"
	"trueup/fault"
	"trueup/rules"
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
			"-- schedule: 61 * * * *",
			"-- schedule_partitions: 0",
			"-- reason: bug",
			"DELETE FROM orders",
		}, "\n"))},
		"params.sql": {Data: []byte("-- table: t\n-- partition: d\n-- key: id\nSELECT * FROM t WHERE d >= $start AND d < $stop\n")},
	}
	set, err := backfill.Load(fsys, "backfills")
	var ps sqlfile.Problems
	if !errors.Is(err, fault.ErrInvalid) || !errors.As(err, &ps) {
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
		"backfills/bad.sql:11: schedule: minute: 61 is out of range 0-59",
		"backfills/bad.sql:12: schedule_partitions \"0\": want a number from 1 to 1000",
		"backfills/bad.sql:13: duplicate key reason (first on line 4)",
		"backfills/bad.sql:14: SQL starts with DELETE: want a single read-only SELECT or WITH",
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
	if set == nil || len(set.All()) != 1 {
		t.Fatalf("the good file was not kept: %+v", set)
	}
	g := set.All()[0]
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
	w := set.All()[0].Window
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

// A header value the run would only trip over at its end is refused when the file is loaded,
// as path:line: message.
func TestLoadRefusesValuesARunCannotUse(t *testing.T) {
	head := "-- table: orders\n-- partition: order_date\n-- key: order_id\n"
	body := "SELECT * FROM orders_raw WHERE order_date >= $start AND order_date < $end\n"
	for _, tc := range []struct {
		name, header, want string
	}{
		{"expect_nonsense", "-- expect: inside scope rows banana\n",
			`backfills/b.sql:4: expect: clause 1 "inside scope rows banana": rows: change "banana": want LO..HI like +0..6% or -10..10`},
		{"expect_unknown_measure", "-- expect: whatever\n", `backfills/b.sql:4: expect: clause 1 "whatever": unknown measure "whatever"`},
		{"window_starts_where_it_ends", "-- window: 10:00-10:00\n",
			`backfills/b.sql:4: window "10:00-10:00": it starts and ends at the same time, so no time of day is in it`},
		{"window_midnight_to_midnight", "-- window: 00:00-00:00\n", `backfills/b.sql:4: window "00:00-00:00": it starts and ends at the same time`},
		{"window_ends_past_midnight", "-- window: 22:00-24:30\n", `backfills/b.sql:4: window "22:00-24:30": the end is past 24:00`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := backfill.Load(fstest.MapFS{"b.sql": {Data: []byte(head + tc.header + body)}}, "backfills")
			if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %s", err, tc.want)
			}
		})
	}
	for _, tc := range []struct{ name, header, window string }{
		{"expect_of_the_demo", "-- expect: inside scope rows +0..6%, sum(amount) +0..6%; outside scope identical\n", ""},
		{"window_to_midnight", "-- window: 22:00-24:00\n", "22:00-24:00"},
		{"window_over_midnight", "-- window: 22:00-06:00\n", "22:00-06:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := backfill.Load(fstest.MapFS{"b.sql": {Data: []byte(head + tc.header + body)}}, "backfills")
			if err != nil {
				t.Fatal(err)
			}
			if w := set.All()[0].Window; tc.window != "" && (w == nil || w.String() != tc.window) {
				t.Errorf("window %v, want %s", w, tc.window)
			}
		})
	}
}

// validate: names are checked against the rules when the project is loaded, as a run resolves
// them at its end: a rule name or a tag.
func TestCheckValidateNamesRulesOrTags(t *testing.T) {
	fsys := fstest.MapFS{
		"ok.sql":  {Data: []byte("-- table: orders\n-- partition: d\n-- key: id\n-- validate: unique_id, orders_tag\nSELECT 1 AS d, 1 AS id\n")},
		"bad.sql": {Data: []byte("-- table: items\n-- partition: d\n-- key: id\n-- reason: bug\n-- validate: unique_id, no_such_rule\nSELECT 1 AS d, 1 AS id\n")},
	}
	set, err := backfill.Load(fsys, "backfills")
	if err != nil {
		t.Fatal(err)
	}
	rs := &rules.Set{Rules: []*rules.Rule{{Name: "unique_id", Tags: []string{"orders_tag"}}}}
	err = set.CheckValidate(rs)
	var ps sqlfile.Problems
	if !errors.Is(err, fault.ErrInvalid) || !errors.As(err, &ps) {
		t.Fatalf("got %v", err)
	}
	want := []string{"backfills/bad.sql:5: validate: no_such_rule is neither a rule nor a tag"}
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	// Without rules every validate: name is one a run could not check.
	if err := set.CheckValidate(nil); err == nil || !strings.Contains(err.Error(), "backfills/ok.sql:4: validate: unique_id: the project has no rules") {
		t.Errorf("no rules: got %v", err)
	}
}

// TestScopeFlagsAtEveryGrain: --from and --to take a month (every day of it) and an hour as
// well as a day, so a month or hour backfill's scope is given in its own terms.
func TestScopeFlagsAtEveryGrain(t *testing.T) {
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339Nano, s); return t }
	for _, c := range []struct {
		from, to   string
		start, end time.Time
	}{
		{"2026-11-10", "2026-11-12", at("2026-11-10T00:00:00Z"), at("2026-11-12T23:59:59.999999999Z")},
		{"2026-10", "2026-11", at("2026-10-01T00:00:00Z"), at("2026-11-30T23:59:59.999999999Z")},
		{"2026-11-30T05:00", "2026-11-30 07:00", at("2026-11-30T05:00:00Z"), at("2026-11-30T07:59:59.999999999Z")},
	} {
		s, err := backfill.ParseScope(c.from, c.to)
		if err != nil || !s.From.Equal(c.start) || !s.To.Equal(c.end) {
			t.Errorf("%s..%s: %+v %v, want %s..%s", c.from, c.to, s, err, c.start, c.end)
		}
	}
	if _, err := backfill.ParseScope("2026-11-10", "November"); err == nil || !strings.Contains(err.Error(), `to "November": want YYYY-MM-DD (a day), YYYY-MM (a month) or YYYY-MM-DDTHH:MM (an hour)`) {
		t.Errorf("a bad end: %v", err)
	}
}
