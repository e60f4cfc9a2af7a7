package sql_test

import (
	"context"
	"testing"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// Without HashOptions.Precision the row hashes are what they always were (recorded checksums,
// views.Fingerprint, depend on the portable one): values pinned from before Precision existed,
// over timestamps with fractions, doubles, reals, decimals and text. (The fast hash is DuckDB's
// hash(), pinned too: it is never recorded, so a DuckDB upgrade may repin it.)
func TestRowHashWithoutPrecisionUnchanged(t *testing.T) {
	ctx := context.Background()
	e := sqltest.DuckDB(t)
	if err := e.Exec(ctx, "CREATE TABLE p AS SELECT TIMESTAMP '2026-07-10 12:00:00.6' AS ts, TIMESTAMPTZ '2026-07-10 12:00:00.4+00' AS tz, "+
		"CAST(100.98 AS DOUBLE) AS x, CAST(100.98 AS REAL) AS r, CAST(1.5 AS DECIMAL(6,3)) AS d, 'abc' AS s"); err != nil {
		t.Fatal(err)
	}
	cols, err := e.Columns(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	d := e.Dialect()
	res, err := e.Query(ctx, "SELECT "+d.RowHash(cols, tsql.HashOptions{Portable: true})+", "+d.RowHash(cols, tsql.HashOptions{})+" FROM p")
	if err != nil {
		t.Fatal(err)
	}
	got := [2]uint64{tsql.AsUint64(res.Rows[0][0]), tsql.AsUint64(res.Rows[0][1])}
	if want := [2]uint64{13698330009902617200, 36102477668029821}; got != want {
		t.Errorf("row hashes %v, want %v", got, want)
	}
}

// DeclaredPrecision reads both engines' spellings of a type.
func TestDeclaredPrecision(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		kind tsql.Type
		want tsql.Precision
		ok   bool
	}{
		{"TIMESTAMP", tsql.TypeTimestamp, tsql.Precision{Digits: 6}, true},
		{"TIMESTAMP WITH TIME ZONE", tsql.TypeTimestamp, tsql.Precision{Digits: 6}, true},
		{"TIMESTAMP_MS", tsql.TypeTimestamp, tsql.Precision{Digits: 3}, true},
		{"TIMESTAMP_S", tsql.TypeTimestamp, tsql.Precision{Digits: 0}, true},
		{"TIMESTAMP_NS", tsql.TypeTimestamp, tsql.Precision{Digits: 9}, true},
		{"DateTime", tsql.TypeTimestamp, tsql.Precision{Digits: 0}, true},
		{"Nullable(DateTime('UTC'))", tsql.TypeTimestamp, tsql.Precision{Digits: 0}, true},
		{"DateTime64(3, 'UTC')", tsql.TypeTimestamp, tsql.Precision{Digits: 3}, true},
		{"DECIMAL(6,3)", tsql.TypeDecimal, tsql.Precision{Digits: 3}, true},
		{"Decimal(18, 2)", tsql.TypeDecimal, tsql.Precision{Digits: 2}, true},
		{"Decimal64(4)", tsql.TypeDecimal, tsql.Precision{Digits: 4}, true},
		{"REAL", tsql.TypeFloat, tsql.Precision{Float32: true}, false},
		{"Float32", tsql.TypeFloat, tsql.Precision{Float32: true}, false},
		{"DOUBLE", tsql.TypeFloat, tsql.Precision{}, false},
		{"Float64", tsql.TypeFloat, tsql.Precision{}, false},
		{"BIGINT", tsql.TypeInt, tsql.Precision{}, false},
	} {
		got, ok := tsql.DeclaredPrecision(tsql.Column{Type: tc.typ, Kind: tc.kind})
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %+v %v, want %+v %v", tc.typ, got, ok, tc.want, tc.ok)
		}
	}
}
