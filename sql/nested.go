package sql

import (
	"strconv"
	"strings"
)

// nestedTexter is what nestedText asks of an engine's dialect.
type nestedTexter interface {
	Dialect
	// normalizeValue is the normalised text of x, an expression holding a scalar column c's values.
	normalizeValue(x string, c Column, scale int) string
	// joinItems is the text of item (an expression of v) for each element v of list, one after
	// the other; NULL for a NULL list.
	joinItems(list, v, item string) string
	// field is a struct's or tuple's field by position, 0 the first.
	field(x string, i int) string
	// whole is text, NULL where the struct or tuple x is NULL.
	whole(x, text string) string
	// concat joins texts; NULL if any is NULL.
	concat(parts ...string) string
	// byteLength is the length of a text in bytes, as text.
	byteLength(x string) string
}

// normalizeColumn is Normalize in every engine: a nested column's text as nestedText writes it,
// a scalar column's as its dialect's normalizeValue does.
func normalizeColumn(d nestedTexter, c Column, scale int) string {
	if nested(c.Type) {
		return nestedText(d, d.Quote(c.Name), c.Type, scale, 0)
	}
	return d.normalizeValue(d.Quote(c.Name), c, scale)
}

// nestedText is the normalised text of x, an expression holding values of the list, array,
// struct or tuple type typ, the same in every engine for the same values, as the portable hash
// needs (the engines' own text of a list differs: DuckDB writes [1, 2] and {'a': 1, 'b': x},
// ClickHouse [1,2] and (1,'x')). A list is [ its elements ], a struct or tuple ( its fields in
// the order its type declares, names aside ), each element or field a NULL mark, a nested
// value's text, or a scalar's normalised text (as Normalize writes the column of its type)
// after its length in bytes, so that no text inside a value can end it early: ['a', 'b'] and
// ['a, b'], [[]] and [NULL], [] and a list of one empty string all read apart. A NULL list or struct is NULL. A map or
// union is the engine's own text, which matches only its own engine.
func nestedText(d nestedTexter, x, typ string, scale, depth int) string {
	typ = unwrapType(typ)
	if elem, ok := elementType(typ); ok {
		v := "__e" + strconv.Itoa(depth)
		return d.concat("'['", d.joinItems(x, v, nestedItem(d, v, elem, scale, depth+1)), "']'")
	}
	if _, types, ok := structFields(typ); ok {
		parts := []string{"'('"}
		for i, t := range types {
			parts = append(parts, nestedItem(d, d.field(x, i), t, scale, depth+1))
		}
		return d.whole(x, d.concat(append(parts, "')'")...))
	}
	return d.ToText(x)
}

// nestedItem is one element or field of a nested value as nestedText writes it, never NULL.
func nestedItem(d nestedTexter, x, typ string, scale, depth int) string {
	var text string
	if nested(typ) {
		text = nestedText(d, x, typ, scale, depth)
	} else {
		c := Column{Type: strings.TrimSpace(typ)}
		c.Kind, c.Nullable = classify(c.Type)
		t := d.normalizeValue(x, c, scale)
		text = d.concat(d.byteLength(t), "':'", t)
	}
	return "coalesce(" + text + ", " + nullMark + ")"
}
