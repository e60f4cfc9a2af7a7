package sql

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPositional: a STRUCT read as a map of fields becomes its values in declared order, at any
// depth, and reads as a Tuple of the same values does.
func TestPositional(t *testing.T) {
	one := int64(1)
	for _, c := range []struct {
		name string
		v    any
		typ  string
		want any
	}{
		{"struct", map[string]any{"b": "k", "a": int64(1)}, "STRUCT(a BIGINT, b VARCHAR)", []any{int64(1), "k"}},
		{"quoted_names", map[string]any{"my f": int64(1), `say "hi"`: "x"}, `STRUCT("my f" BIGINT, "say ""hi""" VARCHAR)`, []any{int64(1), "x"}},
		{"nested", map[string]any{"a": map[string]any{"y": 2, "x": 1}, "l": []any{map[string]any{"q": 3}}},
			"STRUCT(a STRUCT(x INTEGER, y INTEGER), l STRUCT(q INTEGER)[])", []any{[]any{1, 2}, []any{[]any{3}}}},
		{"list_of_structs", []any{map[string]any{"z": "a"}}, "STRUCT(z VARCHAR)[]", []any{[]any{"a"}}},
		{"tuple_in_array", []map[string]any{{"": int64(12)}}, "Array(Tuple(Int64))", []any{[]any{int64(12)}}},
		{"named_tuple", map[string]any{"b": "k", "a": int64(1)}, "Nullable(Tuple(a Int64, b String))", []any{int64(1), "k"}},
		{"unnamed_tuple", []any{int64(1), []any{"x"}}, "Tuple(Decimal(18, 4), Array(String))", []any{int64(1), []any{"x"}}},
		{"fields_missing", map[string]any{"a": 1}, "STRUCT(a INTEGER, b INTEGER)", map[string]any{"a": 1}},
		{"typed_list", []string{"a", "b"}, "Array(String)", []any{"a", "b"}},
		{"list_of_nullable", []*int64{nil, &one}, "Array(Nullable(Int64))", []any{nil, int64(1)}},
		{"not_composite", "x", "VARCHAR", "x"},
		{"blob", []byte("ab"), "BLOB", []byte("ab")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if d := cmp.Diff(c.want, Positional(c.v, c.typ)); d != "" {
				t.Errorf("Positional(%#v, %s) (-want +got):\n%s", c.v, c.typ, d)
			}
		})
	}
}
