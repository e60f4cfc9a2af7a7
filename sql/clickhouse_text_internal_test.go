package sql

import (
	"encoding/json"
	"testing"
)

// TestUnjoined: ClickHouse's text of a composite value reads back by its type; text that does
// not parse, and any other column's value, is left as it is.
func TestUnjoined(t *testing.T) {
	d := chDialect{}
	for _, c := range []struct {
		typ, text, want string
	}{
		{"Array(String)", `['a','b c','it\'s','back\\slash','tab\t']`, `["a","b c","it's","back\\slash","tab\t"]`},
		{"Array(Nullable(String))", `[NULL,'NULL']`, `[null,"NULL"]`},
		{"Array(LowCardinality(String))", `['x']`, `["x"]`},
		{"Array(Array(Int32))", `[[1,-2],[]]`, `[[1,-2],[]]`},
		{"Array(UInt64)", `[18446744073709551615]`, `[18446744073709551615]`},
		{"Array(Float64)", `[1.5,nan]`, `[1.5,"NaN"]`},
		{"Array(Decimal(18, 2))", `[1.50]`, `[1.50]`},
		{"Tuple(UInt8, Nullable(String))", `(2,NULL)`, `[2,null]`},
		{"Tuple(a UInt8, b Array(String))", `(1,['x'])`, `[1,["x"]]`},
		{"Map(String, UInt8)", `{'k':1,'l':2}`, `{"k":1,"l":2}`},
		{"Array(Enum8('a' = 1, 'b,c' = 2))", `['a','b,c']`, `["a","b,c"]`},
		{"Array(String)", `['unclosed]`, `"['unclosed]"`},
		{"Array(UInt8)", `[1,2] trailing`, `"[1,2] trailing"`},
	} {
		v := d.Unjoined(c.text, Column{Name: "c", Type: c.typ})
		if f, ok := v.([]any); ok && len(f) == 2 && c.typ == "Array(Float64)" {
			v = []any{f[0], AsText(f[1])} // NaN has no JSON
		}
		got, err := json.Marshal(v)
		if err != nil || string(got) != c.want {
			t.Errorf("%s %s: %s (%v), want %s", c.typ, c.text, got, err, c.want)
		}
	}
	if v := d.Unjoined("plain", Column{Type: "String"}); v != "plain" {
		t.Errorf("a String column's value: %v", v)
	}
}
