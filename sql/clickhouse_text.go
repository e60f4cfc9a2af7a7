package sql

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Unjoined: what Joinable made text of (an Array, Tuple or Map, as toString writes it) is read
// back as the values the column's own reading gives, so a row read out of a join shows as the
// same row read from its table: ["a","b c"], not ['a','b c']. Text that does not parse is left
// as it is.
func (chDialect) Unjoined(v any, c Column) any {
	s, ok := v.(string)
	if !ok || !chComposite(c.Type) {
		return v
	}
	p := chText{s: s}
	out, err := p.value(c.Type)
	if err != nil || p.i != len(p.s) {
		return v
	}
	return out
}

func chComposite(t string) bool {
	for _, p := range []string{"Array(", "Tuple(", "Map(", "Nested("} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// chText reads ClickHouse's text of a value ([1,2], ('a',NULL), {'k':1}) by the type it has.
type chText struct {
	s string
	i int
}

func (p *chText) fail(want string) error {
	return fmt.Errorf("at %d of %q: want %s", p.i, p.s, want)
}

func (p *chText) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *chText) value(typ string) (any, error) {
	typ = unwrapType(typ)
	if strings.HasPrefix(p.s[p.i:], "NULL") {
		p.i += len("NULL")
		return nil, nil
	}
	name, args := typ, ""
	if open := strings.IndexByte(typ, '('); open > 0 && strings.HasSuffix(typ, ")") {
		name, args = typ[:open], typ[open+1:len(typ)-1]
	}
	switch name {
	case "Array", "Nested":
		elem := args
		if name == "Nested" {
			elem = "Tuple(" + args + ")"
		}
		return p.list('[', ']', func(int) (any, error) { return p.value(elem) })
	case "Tuple":
		fields := typeArgs(args)
		return p.list('(', ')', func(i int) (any, error) {
			if i >= len(fields) {
				return nil, p.fail("no more tuple fields")
			}
			return p.value(fieldType(fields[i]))
		})
	case "Map":
		kv := typeArgs(args)
		if len(kv) != 2 {
			return nil, p.fail("a Map of two types")
		}
		out := map[string]any{}
		_, err := p.list('{', '}', func(int) (any, error) {
			k, err := p.value(kv[0])
			if err != nil {
				return nil, err
			}
			if !p.eat(':') {
				return nil, p.fail(":")
			}
			v, err := p.value(kv[1])
			out[fmt.Sprint(k)] = v
			return nil, err
		})
		return out, err
	}
	if p.i < len(p.s) && p.s[p.i] == '\'' {
		text, err := p.quoted()
		if err != nil {
			return nil, err
		}
		switch {
		case name == "Date":
			if t, err := time.Parse("2006-01-02", text); err == nil {
				return t, nil
			}
		case strings.HasPrefix(name, "DateTime"):
			if t, err := time.Parse("2006-01-02 15:04:05.999999999", text); err == nil {
				return t, nil
			}
		}
		return text, nil
	}
	start := p.i
	for p.i < len(p.s) && !strings.ContainsRune(",)]}:", rune(p.s[p.i])) {
		p.i++
	}
	word := p.s[start:p.i]
	switch {
	case strings.HasPrefix(name, "UInt"):
		if n, err := strconv.ParseUint(word, 10, 64); err == nil {
			return n, nil
		}
	case strings.HasPrefix(name, "Int"):
		if n, err := strconv.ParseInt(word, 10, 64); err == nil {
			return n, nil
		}
	case strings.HasPrefix(name, "Float"):
		if f, err := strconv.ParseFloat(word, 64); err == nil {
			return f, nil
		}
	case strings.HasPrefix(name, "Decimal"):
		return json.Number(word), nil
	}
	if word == "" {
		return nil, p.fail("a value")
	}
	return word, nil
}

// list reads open item, item… close.
func (p *chText) list(open, close byte, item func(i int) (any, error)) ([]any, error) {
	if !p.eat(open) {
		return nil, p.fail(string(open))
	}
	out := []any{}
	if p.eat(close) {
		return out, nil
	}
	for i := 0; ; i++ {
		v, err := item(i)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if p.eat(close) {
			return out, nil
		}
		if !p.eat(',') {
			return nil, p.fail(", or " + string(close))
		}
	}
}

// quoted reads a '…' string with ClickHouse's backslash escapes.
func (p *chText) quoted() (string, error) {
	p.i++ // the opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch c {
		case '\'':
			return b.String(), nil
		case '\\':
			if p.i >= len(p.s) {
				return "", p.fail("an escaped character")
			}
			e := p.s[p.i]
			p.i++
			if r, ok := map[byte]byte{'n': '\n', 't': '\t', 'r': '\r', '0': 0, 'b': '\b', 'f': '\f', 'a': '\a', 'v': '\v'}[e]; ok {
				e = r
			}
			b.WriteByte(e)
		default:
			b.WriteByte(c)
		}
	}
	return "", p.fail("a closing quote")
}

// typeArgs splits a type's arguments at its top-level commas: "String, Array(UInt8)".
func typeArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case '\'':
			for i++; i < len(s) && s[i] != '\''; i++ { // an Enum's names
				if s[i] == '\\' {
					i++
				}
			}
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// fieldType is a tuple field's type without its name: "a String" is String.
func fieldType(f string) string {
	if sp := strings.IndexByte(f, ' '); sp > 0 && (strings.IndexByte(f, '(') < 0 || sp < strings.IndexByte(f, '(')) {
		return strings.TrimSpace(f[sp+1:])
	}
	return f
}
