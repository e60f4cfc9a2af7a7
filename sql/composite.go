package sql

import (
	"reflect"
	"strings"
)

// Positional is a value read from a column of type typ (as the engine describes the column) with
// every struct in it turned into the list of its fields in the order typ declares them, inside
// lists too. DuckDB hands a STRUCT back as a map of its fields (their order lost) and a
// ClickHouse Tuple comes as the list of its values, so that, made positional, a STRUCT and a
// Tuple of the same values read alike (AsText). Lists come as []any whatever the driver's Go
// type for them ([]string, []*int64 for an Array(Nullable(Int64)), …). A value typ does not
// describe as a struct is otherwise returned as it is.
func Positional(v any, typ string) any {
	typ = unwrapType(typ)
	g := generic(v)
	switch x := g.(type) {
	case map[string]any:
		names, types, ok := structFields(typ)
		if !ok || len(names) != len(x) {
			return g
		}
		if len(names) == 1 && names[0] == "" { // a Tuple of one unnamed value, read as {"": v}
			return []any{Positional(x[""], types[0])}
		}
		out := make([]any, len(names))
		for i, n := range names {
			f, ok := x[n]
			if !ok {
				return g
			}
			out[i] = Positional(f, types[i])
		}
		return out
	case []any:
		elem, isList := elementType(typ)
		if !isList && !strings.HasPrefix(typ, "STRUCT(") && !strings.HasPrefix(typ, "Tuple(") {
			isList = true // of a type not described: its elements as they are
		}
		_, fieldTypes, isStruct := structFields(typ)
		if !isList && (!isStruct || len(fieldTypes) != len(x)) {
			return g
		}
		out := make([]any, len(x))
		for i, e := range x {
			t := elem
			if !isList {
				t = fieldTypes[i]
			}
			out[i] = Positional(e, t)
		}
		return out
	}
	return g
}

// Composite reports whether v is a list, struct, tuple or map as a driver reads one (a BLOB's
// bytes are not).
func Composite(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		return rv.Type().Elem().Kind() != reflect.Uint8
	case reflect.Map:
		return true
	}
	return false
}

// generic is v with a driver's typed list ([]string, []*int64, []map[string]any, …) as []any and
// a map keyed by strings as map[string]any, and a pointer as what it points at (nil for none);
// other values as they are.
func generic(v any) any {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		return generic(rv.Elem().Interface())
	case reflect.Slice, reflect.Array:
		if _, ok := v.([]any); ok || rv.Type().Elem().Kind() == reflect.Uint8 {
			return v
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = generic(rv.Index(i).Interface())
		}
		return out
	case reflect.Map:
		if _, ok := v.(map[string]any); ok || rv.Type().Key().Kind() != reflect.String {
			return v
		}
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			out[it.Key().String()] = generic(it.Value().Interface())
		}
		return out
	}
	return v
}

// unwrapType is typ without the wrappers that do not change how a value reads: ClickHouse's
// Nullable and LowCardinality.
func unwrapType(typ string) string {
	typ = strings.TrimSpace(typ)
	for _, w := range []string{"Nullable(", "LowCardinality("} {
		if inner, ok := strings.CutPrefix(typ, w); ok && strings.HasSuffix(inner, ")") {
			return unwrapType(inner[:len(inner)-1])
		}
	}
	return typ
}

// elementType is the type of a list type's elements: DuckDB's T[] (or T[N]), ClickHouse's
// Array(T).
func elementType(typ string) (string, bool) {
	if inner, ok := strings.CutPrefix(typ, "Array("); ok && strings.HasSuffix(inner, ")") {
		return inner[:len(inner)-1], true
	}
	if strings.HasSuffix(typ, "]") {
		if i := strings.LastIndexByte(typ, '['); i > 0 && strings.Trim(typ[i+1:len(typ)-1], "0123456789") == "" {
			return typ[:i], true
		}
	}
	return "", false
}

// structFields are the names and types of a struct type's fields, in order: DuckDB's
// STRUCT(a INTEGER, "b c" VARCHAR), ClickHouse's Tuple(Int64, String) (unnamed: the names are
// empty) or Tuple(a Int64, b String).
func structFields(typ string) (names, types []string, ok bool) {
	var inner string
	switch {
	case strings.HasPrefix(typ, "STRUCT(") && strings.HasSuffix(typ, ")"):
		inner = typ[len("STRUCT(") : len(typ)-1]
	case strings.HasPrefix(typ, "Tuple(") && strings.HasSuffix(typ, ")"):
		inner = typ[len("Tuple(") : len(typ)-1]
	default:
		return nil, nil, false
	}
	for _, f := range splitTopLevel(inner, ',') {
		name, t := fieldOf(f, strings.HasPrefix(typ, "STRUCT("))
		names, types = append(names, name), append(types, t)
	}
	return names, types, true
}

// fieldOf splits one field of a struct type into its name and type; named says the field has a
// name (a DuckDB STRUCT's always has); a ClickHouse Tuple's has one when a word and a type
// follow each other.
func fieldOf(f string, named bool) (string, string) {
	f = strings.TrimSpace(f)
	toks := Lex(f)
	if len(toks) < 2 || (!named && !toks[0].Quoted() && toks[1].Text == "(") {
		return "", f
	}
	return toks[0].Ident(), strings.TrimSpace(f[toks[1].Pos:])
}
