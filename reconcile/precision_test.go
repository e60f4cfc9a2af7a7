package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"trueup/fault"

	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// precisionCase is two relations built by SQL and what a diff of them must find.
type precisionCase struct {
	name     string
	old, new tsql.Engine
	oldSQL   []string // build relation a on old
	newSQL   []string // build relation b on new
	rows     reconcile.RowCounts
	col      string // the column whose precision is checked
	prec     string
}

func runPrecisionCases(t *testing.T, cases []precisionCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exec(t, c.old, c.oldSQL...)
			exec(t, c.new, c.newSQL...)
			r := diff(t, reconcile.Spec{
				Old: reconcile.Side{Engine: c.old, Relation: "a_" + c.name}, New: reconcile.Side{Engine: c.new, Relation: "b_" + c.name},
				Key: []string{"id"}})
			if r.Rows != c.rows {
				t.Errorf("rows %+v, want %+v; samples %+v", r.Rows, c.rows, r.Samples)
			}
			if got := r.Precision[c.col]; got != c.prec {
				t.Errorf("precision of %s %q, want %q (all: %v)", c.col, got, c.prec, r.Precision)
			}
			if !r.Rows.Zero() && !r.Differs {
				t.Errorf("rows differ but the diff does not")
			}
			for _, p := range r.Partitions {
				// the checksum and the row comparison agree: no changed row, no checksum difference
				if c.rows.Zero() && (p.Verdict != reconcile.VerdictUnchanged || !p.ChecksumMatch) {
					t.Errorf("partition %s: %s, checksum_match %v, want unchanged and matching", p.Partition, p.Verdict, p.ChecksumMatch)
				}
				if !c.rows.Zero() && p.ChecksumMatch {
					t.Errorf("partition %s: checksum_match with changed rows", p.Partition)
				}
			}
		})
	}
}

// duckTS is 60 rows (id, ts TIMESTAMP): minute steps from 2026-07-10, with tenths of a second
// (.0 to .9) when frac.
func duckTS(name string, typ string, frac bool, extra string) string {
	f := "0"
	if frac {
		f = "(i % 10) * 100000"
	}
	return "CREATE TABLE " + name + " AS SELECT i AS id, CAST(make_timestamp(CAST((1783684800 + i * 60) * 1000000 + " + f +
		extra + " AS BIGINT)) AS " + typ + ") AS ts FROM range(60) t(i)"
}

// Timestamps compare at the coarser precision of their two sides, truncated, in the checksum and
// the row comparison alike: 1 ms is a change between microsecond columns (TIMESTAMP and
// TIMESTAMPTZ, or two DuckDB files), and not between DuckDB microseconds and a ClickHouse
// DateTime, whose rows at second precision (fractions below and above .5 s) are unchanged.
func TestPrecisionTimestamps(t *testing.T) {
	duck, other := sqltest.DuckDB(t), sqltest.DuckDB(t)
	ms := " + CASE WHEN i = 17 THEN 1000 ELSE 0 END"
	cases := []precisionCase{
		{name: "tz_1ms", old: duck, new: duck,
			oldSQL: []string{duckTS("a_tz_1ms", "TIMESTAMP", false, "")},
			newSQL: []string{duckTS("b_tz_1ms", "TIMESTAMPTZ", false, ms)},
			rows:   reconcile.RowCounts{Changed: 1}, col: "ts", prec: "microseconds"},
		{name: "files_1ms", old: duck, new: other,
			oldSQL: []string{duckTS("a_files_1ms", "TIMESTAMP", true, "")},
			newSQL: []string{duckTS("b_files_1ms", "TIMESTAMP", true, ms)},
			rows:   reconcile.RowCounts{Changed: 1}, col: "ts", prec: "microseconds"},
		{name: "ms_vs_us", old: duck, new: duck,
			oldSQL: []string{duckTS("a_ms_vs_us", "TIMESTAMP", true, " + 250")},
			newSQL: []string{duckTS("b_ms_vs_us", "TIMESTAMP_MS", true, "")},
			rows:   reconcile.RowCounts{}, col: "ts", prec: "milliseconds"},
		{name: "s_vs_us_frac", old: duck, new: other,
			oldSQL: []string{duckTS("a_s_vs_us_frac", "TIMESTAMP", true, "")},
			newSQL: []string{duckTS("b_s_vs_us_frac", "TIMESTAMP_S", false, "")},
			rows:   reconcile.RowCounts{}, col: "ts", prec: "seconds"},
	}
	if ch := sqltest.ClickHouse(t); ch != nil {
		chTS := func(name string, n int) []string {
			return []string{"CREATE TABLE " + name + " (id Int64, ts DateTime) ENGINE = Memory",
				"INSERT INTO " + name + " SELECT toInt64(number), toDateTime(1783684800 + number * 60) FROM system.numbers LIMIT " + itoa(n)}
		}
		cases = append(cases,
			precisionCase{name: "ch_seconds_plus_one", old: duck, new: ch,
				oldSQL: []string{duckTS("a_ch_seconds_plus_one", "TIMESTAMP", false, "")},
				newSQL: chTS("b_ch_seconds_plus_one", 61),
				rows:   reconcile.RowCounts{Added: 1}, col: "ts", prec: "seconds"},
			precisionCase{name: "ch_fractions", old: duck, new: ch,
				oldSQL: []string{duckTS("a_ch_fractions", "TIMESTAMP", true, "")},
				newSQL: chTS("b_ch_fractions", 60),
				rows:   reconcile.RowCounts{}, col: "ts", prec: "seconds"},
			precisionCase{name: "ch_fractions_plus_one_moved", old: duck, new: ch,
				oldSQL: []string{duckTS("a_ch_fractions_plus_one_moved", "TIMESTAMP", true, " + CASE WHEN i = 5 THEN 1000000 ELSE 0 END")},
				newSQL: chTS("b_ch_fractions_plus_one_moved", 61),
				rows:   reconcile.RowCounts{Added: 1, Changed: 1}, col: "ts", prec: "seconds"},
		)
	}
	runPrecisionCases(t, cases)
}

func itoa(n int) string { return fmt.Sprint(n) }

// duckNum is 60 rows (id, x) with x = 100.98 + i/8 as typ (when i = 41 in changed, 1 more).
func duckNum(name, typ string, changed bool) string {
	x := "100.98 + i / 8"
	if changed {
		x += " + CASE WHEN i = 41 THEN 1 ELSE 0 END"
	}
	return "CREATE TABLE " + name + " AS SELECT i AS id, CAST(" + x + " AS " + typ + ") AS x FROM range(60) t(i)"
}

// Floats and decimals compare at the coarser precision of their declared types: a DOUBLE against
// a REAL at float precision (100.98 is 100.98000336 as a REAL), against a DECIMAL(6,3) at 3
// decimals; a real change still shows.
func TestPrecisionNumbers(t *testing.T) {
	duck, other := sqltest.DuckDB(t), sqltest.DuckDB(t)
	cases := []precisionCase{
		{name: "real", old: duck, new: duck, oldSQL: []string{duckNum("a_real", "DOUBLE", false)},
			newSQL: []string{duckNum("b_real", "REAL", false)}, col: "x", prec: "float32, 6 decimals"},
		{name: "real_changed", old: duck, new: other, oldSQL: []string{duckNum("a_real_changed", "DOUBLE", false)},
			newSQL: []string{duckNum("b_real_changed", "REAL", true)}, rows: reconcile.RowCounts{Changed: 1}, col: "x", prec: "float32, 6 decimals"},
		{name: "decimal", old: duck, new: duck, oldSQL: []string{duckNum("a_decimal", "DOUBLE", false)},
			newSQL: []string{duckNum("b_decimal", "DECIMAL(6,3)", false)}, col: "x", prec: "3 decimals"},
		{name: "decimal_files", old: duck, new: other, oldSQL: []string{duckNum("a_decimal_files", "DECIMAL(10,4)", false)},
			newSQL: []string{duckNum("b_decimal_files", "DECIMAL(6,3)", true)}, rows: reconcile.RowCounts{Changed: 1}, col: "x", prec: "3 decimals"},
	}
	if ch := sqltest.ClickHouse(t); ch != nil {
		chNum := func(name, typ string) []string {
			val := "to" + typ + "(100.98 + number / 8)"
			if typ == "Decimal64(3)" {
				val = "toDecimal64(100.98 + number / 8, 3)"
			}
			return []string{"CREATE TABLE " + name + " (id Int64, x " + typ + ") ENGINE = Memory",
				"INSERT INTO " + name + " SELECT toInt64(number), " + val + " FROM system.numbers LIMIT 60"}
		}
		cases = append(cases,
			precisionCase{name: "ch_float32", old: duck, new: ch, oldSQL: []string{duckNum("a_ch_float32", "DOUBLE", false)},
				newSQL: chNum("b_ch_float32", "Float32"), col: "x", prec: "float32, 6 decimals"},
			precisionCase{name: "ch_decimal", old: duck, new: ch, oldSQL: []string{duckNum("a_ch_decimal", "DOUBLE", false)},
				newSQL: chNum("b_ch_decimal", "Decimal64(3)"), col: "x", prec: "3 decimals"},
			precisionCase{name: "ch_float64_vs_real", old: duck, new: ch, oldSQL: []string{duckNum("a_ch_float64_vs_real", "REAL", true)},
				newSQL: chNum("b_ch_float64_vs_real", "Float64"), rows: reconcile.RowCounts{Changed: 1}, col: "x", prec: "float32, 6 decimals"},
		)
	}
	runPrecisionCases(t, cases)
}

// Spec.Precision overrides the precision read from the types, in the checksum too: a 1 ms move
// compared at seconds is no change, and a bad column or value is invalid.
func TestPrecisionOverride(t *testing.T) {
	duck := sqltest.DuckDB(t)
	exec(t, duck, duckTS("a", "TIMESTAMP", false, ""), duckTS("b", "TIMESTAMP", false, " + CASE WHEN i = 17 THEN 1000 ELSE 0 END"))
	secs, err := reconcile.ParsePrecision("s")
	if err != nil {
		t.Fatal(err)
	}
	r := diff(t, reconcile.Spec{Old: reconcile.Side{Engine: duck, Relation: "a"}, New: reconcile.Side{Engine: duck, Relation: "b"},
		Key: []string{"id"}, Precision: map[string]tsql.Precision{"ts": secs}})
	if !r.Rows.Zero() || r.Differs || !r.Partitions[0].ChecksumMatch || r.Precision["ts"] != "seconds" {
		t.Errorf("at seconds: rows %+v, differs %v, checksum_match %v, precision %v", r.Rows, r.Differs, r.Partitions[0].ChecksumMatch, r.Precision)
	}
	_, err = reconcile.Diff(context.Background(), reconcile.Spec{Old: reconcile.Side{Engine: duck, Relation: "a"}, New: reconcile.Side{Engine: duck, Relation: "b"},
		Key: []string{"id"}, Precision: map[string]tsql.Precision{"id": secs}})
	if !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("precision of an integer key: %v, want invalid", err)
	}
	for in, want := range map[string]tsql.Precision{"ms": {Digits: 3}, "us": {Digits: 6}, "2": {Digits: 2}, "float32": {Float32: true, Digits: -1}, "float32,3": {Float32: true, Digits: 3}} {
		if got, err := reconcile.ParsePrecision(in); err != nil || got != want {
			t.Errorf("ParsePrecision(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1", "99", "1.5"} {
		if _, err := reconcile.ParsePrecision(in); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("ParsePrecision(%q): %v, want invalid", in, err)
		}
	}
}

// bigDecimals is 60 rows (id, x) with x = 1234567890123456.78 + i as typ: values a double cannot
// hold to the cent (when i = 41 in changed, a cent more).
func bigDecimals(name, typ string, changed bool) string {
	x := "CAST('1234567890123456.78' AS DECIMAL(18,2)) + i"
	if changed {
		x += " + CASE WHEN i = 41 THEN 0.01 ELSE 0 END"
	}
	return "CREATE TABLE " + name + " AS SELECT i AS id, CAST(" + x + " AS " + typ + ") AS x FROM range(60) t(i)"
}

// Two DECIMAL sides compare exactly, as their digits, in the checksums and in the row
// comparison: a cent on a value of 16 digits before the point is a change, in one engine, across
// two files and across engines, at the coarser scale when the scales differ; equal values are
// no change (the digits agree between the engines, though 18.16 prints zeros later servers drop).
func TestPrecisionDecimalsExact(t *testing.T) {
	duck, other := sqltest.DuckDB(t), sqltest.DuckDB(t)
	cases := []precisionCase{
		{name: "dec_same", old: duck, new: duck, oldSQL: []string{bigDecimals("a_dec_same", "DECIMAL(18,2)", false)},
			newSQL: []string{bigDecimals("b_dec_same", "DECIMAL(18,2)", false)}, col: "x", prec: "2 decimals"},
		{name: "dec_changed", old: duck, new: duck, oldSQL: []string{bigDecimals("a_dec_changed", "DECIMAL(18,2)", false)},
			newSQL: []string{bigDecimals("b_dec_changed", "DECIMAL(18,2)", true)}, rows: reconcile.RowCounts{Changed: 1}, col: "x", prec: "2 decimals"},
		{name: "dec_scales", old: duck, new: duck, oldSQL: []string{bigDecimals("a_dec_scales", "DECIMAL(18,2)", false)},
			newSQL: []string{bigDecimals("b_dec_scales", "DECIMAL(20,4)", false)}, col: "x", prec: "2 decimals"},
		{name: "dec_scales_changed", old: duck, new: duck, oldSQL: []string{bigDecimals("a_dec_scales_changed", "DECIMAL(18,2)", false)},
			newSQL: []string{bigDecimals("b_dec_scales_changed", "DECIMAL(20,4)", true)}, rows: reconcile.RowCounts{Changed: 1}, col: "x", prec: "2 decimals"},
		{name: "dec_files", old: duck, new: other, oldSQL: []string{bigDecimals("a_dec_files", "DECIMAL(18,2)", false)},
			newSQL: []string{bigDecimals("b_dec_files", "DECIMAL(18,2)", false)}, col: "x", prec: "2 decimals"},
		{name: "dec_files_changed", old: duck, new: other, oldSQL: []string{bigDecimals("a_dec_files_changed", "DECIMAL(18,2)", false)},
			newSQL: []string{bigDecimals("b_dec_files_changed", "DECIMAL(20,4)", true)}, rows: reconcile.RowCounts{Changed: 1}, col: "x", prec: "2 decimals"},
	}
	if ch := sqltest.ClickHouse(t); ch != nil {
		chBig := func(name string, changed bool) []string {
			x := "toDecimal64('1234567890123456.78', 2) + toDecimal64(number, 0)"
			if changed {
				x += " + if(number = 41, toDecimal64('0.01', 2), toDecimal64(0, 2))"
			}
			return []string{"CREATE TABLE " + name + " (id Int64, x Decimal(18,2)) ENGINE = Memory",
				"INSERT INTO " + name + " SELECT toInt64(number), " + x + " FROM system.numbers LIMIT 60"}
		}
		cases = append(cases,
			precisionCase{name: "ch_dec", old: duck, new: ch, oldSQL: []string{bigDecimals("a_ch_dec", "DECIMAL(18,2)", false)},
				newSQL: chBig("b_ch_dec", false), col: "x", prec: "2 decimals"},
			precisionCase{name: "ch_dec_scales", old: duck, new: ch, oldSQL: []string{bigDecimals("a_ch_dec_scales", "DECIMAL(20,4)", false)},
				newSQL: chBig("b_ch_dec_scales", false), col: "x", prec: "2 decimals"},
			precisionCase{name: "ch_dec_changed", old: duck, new: ch, oldSQL: []string{bigDecimals("a_ch_dec_changed", "DECIMAL(18,2)", true)},
				newSQL: chBig("b_ch_dec_changed", false), rows: reconcile.RowCounts{Changed: 1}, col: "x", prec: "2 decimals"},
			precisionCase{name: "ch_ch_dec_changed", old: ch, new: ch, oldSQL: chBig("a_ch_ch_dec_changed", false),
				newSQL: chBig("b_ch_ch_dec_changed", true), rows: reconcile.RowCounts{Changed: 1}, col: "x", prec: "2 decimals"},
		)
	}
	runPrecisionCases(t, cases)
}
