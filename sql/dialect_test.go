package sql

import (
	"strings"
	"testing"

	"trueup/internal/golden"
)

// TestRepointStatementsGolden pins the SQL each engine version gets for a two-view publish.
// Modern ClickHouse statements cannot run on the 18.16 test server, so their text is pinned here.
func TestRepointStatementsGolden(t *testing.T) {
	points := []ViewPoint{{View: "orders", Table: "orders__v2"}, {View: "daily_revenue", Table: "daily_revenue__v2"}}
	exists := map[string]bool{"orders": true, "daily_revenue": true}
	for _, tc := range []struct {
		file string
		d    Dialect
	}{
		{"repoint.duckdb.golden.sql", duckDialect{}},
		{"repoint.clickhouse-18.16.golden.sql", chDialect{version: parseVersion("18.16.1")}},
		{"repoint.clickhouse-24.8.golden.sql", chDialect{version: parseVersion("24.8.4.13")}},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".golden.sql"), func(t *testing.T) {
			golden.Check(t, tc.file, strings.Join(tc.d.RepointStatements(points, exists, "abc"), ";\n")+";\n")
		})
	}
}

func TestExpand(t *testing.T) {
	d := chDialect{}
	got, args, err := Expand(d, "SELECT '$start' AS s, `$x` -- $end\nFROM t WHERE d >= $start AND d < $end /* $nope */", Window{Type: TypeDate}.Params())
	if err != nil {
		t.Fatal(err)
	}
	want := "SELECT '$start' AS s, `$x` -- $end\nFROM t WHERE d >= toDate(?) AND d < toDate(?) /* $nope */"
	if got != want || len(args) != 2 {
		t.Errorf("got %q with %d args", got, len(args))
	}
	if _, _, err := Expand(d, "SELECT $evil", nil); err == nil || !strings.Contains(err.Error(), "$evil") {
		t.Errorf("unknown parameter: %v", err)
	}
	if got := Placeholders("SELECT $a, '$b', $a, $c"); strings.Join(got, ",") != "a,c" {
		t.Errorf("placeholders: %v", got)
	}
	// A $name inside a block comment is not used, as Expand leaves it (and an unknown one there
	// is no error).
	text := "SELECT $a /* was $old, see $b */ -- $c\n, $d /* unterminated $e"
	if got := Placeholders(text); strings.Join(got, ",") != "a,d" {
		t.Errorf("placeholders with comments: %v, want a,d", got)
	}
	if _, _, err := Expand(d, text, map[string]Param{"a": {Type: TypeInt, Value: 1}, "d": {Type: TypeInt, Value: 2}}); err != nil {
		t.Errorf("expand with comments: %v", err)
	}
}

func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		d          Dialect
		in, want   string
		relIn, rel string
	}{
		{duckDialect{}, `a"b`, `"a""b"`, "s.t", `"s"."t"`},
		{chDialect{}, "a`b\\", "`a\\`b\\\\`", "db.t", "`db`.`t`"},
	} {
		if got := tc.d.Quote(tc.in); got != tc.want {
			t.Errorf("%s quote %q = %q, want %q", tc.d.Name(), tc.in, got, tc.want)
		}
		if got := tc.d.QuoteRelation(tc.relIn); got != tc.rel {
			t.Errorf("%s relation %q = %q, want %q", tc.d.Name(), tc.relIn, got, tc.rel)
		}
	}
}
