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
