package reconcile_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// sampleLines are a result's samples as one line each, in a stable order.
func sampleLines(r *reconcile.Result) []string {
	var out []string
	for _, a := range r.Samples.Added {
		out = append(out, "added "+a.Values.Text())
	}
	for _, a := range r.Samples.Removed {
		out = append(out, "removed "+a.Values.Text())
	}
	for _, c := range r.Samples.Changed {
		for _, col := range c.Columns {
			out = append(out, fmt.Sprintf("changed %s %s %v → %v", c.Key.Text(), col.Column, reconcile.ValueText(col.Old), reconcile.ValueText(col.New)))
		}
	}
	for _, d := range r.Samples.Duplicates {
		out = append(out, fmt.Sprintf("duplicate %s %d/%d", d.Key.Text(), d.OldRows, d.NewRows))
		for _, s := range d.Surplus {
			out = append(out, fmt.Sprintf("  surplus %s ×%d %s", s.Side, s.Times, s.Values.Text()))
		}
	}
	sort.Strings(out)
	return out
}

// Sample keys are in --key order and sample values in the order the columns are compared, in
// the JSON as in the text, not sorted by name.
func TestSampleKeyOrder(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		if e.Info().Kind == "duckdb" {
			exec(t, e, "CREATE TABLE ko_old AS SELECT * FROM (VALUES (1, 'b', 10), (2, 'a', 20)) t(zone, id, v)",
				"CREATE TABLE ko_new AS SELECT * FROM (VALUES (1, 'b', 11), (2, 'a', 20), (3, 'c', 30)) t(zone, id, v)")
		} else {
			exec(t, e, "DROP TABLE IF EXISTS ko_old", "DROP TABLE IF EXISTS ko_new",
				"CREATE TABLE ko_old (zone Int64, id String, v Int64) ENGINE = Memory",
				"INSERT INTO ko_old SELECT 1, 'b', 10 UNION ALL SELECT 2, 'a', 20",
				"CREATE TABLE ko_new (zone Int64, id String, v Int64) ENGINE = Memory",
				"INSERT INTO ko_new SELECT 1, 'b', 11 UNION ALL SELECT 2, 'a', 20 UNION ALL SELECT 3, 'c', 30")
		}
		r := diff(t, reconcile.Spec{Old: reconcile.Side{Engine: e, Relation: "ko_old"}, New: reconcile.Side{Engine: e, Relation: "ko_new"},
			Key: []string{"zone", "id"}})
		b, err := json.Marshal(r.Samples)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"key":{"zone":1,"id":"b"}`, `"key":{"zone":3,"id":"c"},"values":{"zone":3,"id":"c","v":30}`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("samples %s\nwant %s", b, want)
			}
		}
		var back reconcile.Samples // a stored diff read back keeps the order
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if got := back.Added[0].Values.Text(); got != "zone=3 id=c v=30" {
			t.Errorf("read back %q", got)
		}
		var text strings.Builder
		if err := r.WriteText(&text, reconcile.TextOptions{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "zone=1 id=b: v 10 → 11") {
			t.Errorf("text:\n%s", text.String())
		}
	})
}

// Sample timestamps keep their fractions and a midnight timestamp prints as a timestamp (a date
// column as a date), while which rows count as changed is the precision rule's: the coarser of
// the two declared types, truncated. Checked for DuckDB TIMESTAMP_MS and TIMESTAMP_NS against
// TIMESTAMP, and DuckDB TIMESTAMP against a ClickHouse DateTime (18.16 has no DateTime64).
func TestSampleTimestamps(t *testing.T) {
	duck := sqltest.DuckDB(t)
	// rows: 1 midnight on both sides; 2 equal at the coarser precision; 3 changed at it; 4 new,
	// at midnight. micros are the old side's fractions, newMicros the new side's (as ns for NS).
	duckSide := func(name, typ string, frac []string, extra bool) string {
		rows := []string{}
		for i, f := range frac {
			rows = append(rows, fmt.Sprintf("(%d, TIMESTAMP '2026-07-10 %s', DATE '2026-07-10')", i+1, f))
		}
		if extra {
			rows = append(rows, "(4, TIMESTAMP '2026-07-11 00:00:00', DATE '2026-07-11')")
		}
		return "CREATE TABLE " + name + " AS SELECT id, CAST(ts AS " + typ + ") AS ts, d FROM (VALUES " + strings.Join(rows, ", ") + ") t(id, ts, d)"
	}
	type tcase struct {
		name   string
		new    tsql.Engine
		oldSQL []string
		newSQL []string
		prec   string
		want   []string
	}
	cases := []tcase{
		{name: "ms_vs_us", new: duck,
			oldSQL: []string{duckSide("st_ms_vs_us_a", "TIMESTAMP", []string{"00:00:00", "10:00:05.123456", "10:00:05.124"}, false)},
			newSQL: []string{duckSide("st_ms_vs_us_b", "TIMESTAMP_MS", []string{"00:00:00", "10:00:05.123", "10:00:05.123"}, true)},
			prec:   "milliseconds",
			want: []string{"added id=4 ts=2026-07-11 00:00:00 d=2026-07-11",
				"changed id=3 ts 2026-07-10 10:00:05.124 → 2026-07-10 10:00:05.123"}},
		{name: "ns_vs_us", new: duck,
			oldSQL: []string{duckSide("st_ns_vs_us_a", "TIMESTAMP", []string{"00:00:00", "10:00:05.123456", "10:00:05.123457"}, false)},
			newSQL: []string{"CREATE TABLE st_ns_vs_us_b AS SELECT id, CAST(ts AS TIMESTAMP_NS) AS ts, d FROM (VALUES " +
				"(1, '2026-07-10 00:00:00', DATE '2026-07-10'), (2, '2026-07-10 10:00:05.123456789', DATE '2026-07-10'), " +
				"(3, '2026-07-10 10:00:05.123456789', DATE '2026-07-10'), (4, '2026-07-11 00:00:00', DATE '2026-07-11')) t(id, ts, d)"},
			prec: "microseconds",
			want: []string{"added id=4 ts=2026-07-11 00:00:00 d=2026-07-11",
				"changed id=3 ts 2026-07-10 10:00:05.123457 → 2026-07-10 10:00:05.123456789"}},
	}
	if ch := sqltest.ClickHouse(t); ch != nil {
		// 1783641600 is 2026-07-10 00:00:00 UTC, as DuckDB's TIMESTAMP reads
		cases = append(cases, tcase{name: "ch_datetime", new: ch,
			oldSQL: []string{duckSide("st_ch_datetime_a", "TIMESTAMP", []string{"00:00:00", "10:00:05.7", "10:00:06.2"}, false)},
			newSQL: []string{"DROP TABLE IF EXISTS st_ch_datetime_b",
				"CREATE TABLE st_ch_datetime_b (id Int64, ts DateTime, d Date) ENGINE = Memory",
				"INSERT INTO st_ch_datetime_b SELECT toInt64(1), toDateTime(1783641600), toDate('2026-07-10') UNION ALL " +
					"SELECT toInt64(2), toDateTime(1783641600 + 36005), toDate('2026-07-10') UNION ALL " +
					"SELECT toInt64(3), toDateTime(1783641600 + 36005), toDate('2026-07-10') UNION ALL " +
					"SELECT toInt64(4), toDateTime(1783641600 + 86400), toDate('2026-07-11')"},
			prec: "seconds",
			want: []string{"added id=4 ts=2026-07-11 00:00:00 d=2026-07-11",
				"changed id=3 ts 2026-07-10 10:00:06.2 → 2026-07-10 10:00:05"}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exec(t, duck, c.oldSQL...)
			exec(t, c.new, c.newSQL...)
			r := diff(t, reconcile.Spec{Old: reconcile.Side{Engine: duck, Relation: "st_" + c.name + "_a"},
				New: reconcile.Side{Engine: c.new, Relation: "st_" + c.name + "_b"}, Key: []string{"id"}})
			if got := r.Precision["ts"]; got != c.prec {
				t.Errorf("precision %q, want %q", got, c.prec)
			}
			if r.Rows != (reconcile.RowCounts{Added: 1, Changed: 1}) {
				t.Errorf("rows %+v, want 1 added and 1 changed", r.Rows)
			}
			if d := cmp.Diff(c.want, sampleLines(r)); d != "" {
				t.Errorf("samples (-want +got):\n%s", d)
			}
		})
	}
}

// A sample shows which text changed where it would otherwise read alike: an empty string beside
// NULL, a space at the end, "NULL" as text; ordinary text is shown as it is.
func TestSampleTextThatWouldReadAlike(t *testing.T) {
	duck := sqltest.DuckDB(t)
	exec(t, duck,
		"CREATE TABLE sq_a AS SELECT * FROM (VALUES (1, NULL), (2, 'abc'), (3, 'x'), (4, 'same text')) t(id, note)",
		"CREATE TABLE sq_b AS SELECT * FROM (VALUES (1, ''), (2, 'abc '), (3, 'NULL'), (4, 'other text')) t(id, note)")
	r := diff(t, reconcile.Spec{Old: reconcile.Side{Engine: duck, Relation: "sq_a"}, New: reconcile.Side{Engine: duck, Relation: "sq_b"}, Key: []string{"id"}})
	want := []string{`changed id=1 note NULL → ""`, `changed id=2 note abc → "abc "`, `changed id=3 note x → "NULL"`, `changed id=4 note same text → other text`}
	if d := cmp.Diff(want, sampleLines(r)); d != "" {
		t.Errorf("samples (-want +got):\n%s", d)
	}
}
