package reconcile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	tsql "trueup/sql"
)

// Field is one named value of a sample row.
type Field struct {
	Name  string
	Value any
}

// Fields are a sample row's columns in order: a key in --key order, values in the order the
// columns are compared. In JSON they are an object whose members keep that order (a Go map
// would sort them by name, and a compound key would read in an order nobody gave).
type Fields []Field

// Get is the value of the named column, nil when there is none.
func (f Fields) Get(name string) any {
	for _, x := range f {
		if x.Name == name {
			return x.Value
		}
	}
	return nil
}

// MarshalJSON writes the fields as one object, in order.
func (f Fields) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, x := range f {
		if i > 0 {
			b.WriteByte(',')
		}
		name, err := json.Marshal(x.Name)
		if err != nil {
			return nil, err
		}
		value, err := json.Marshal(jsonValue(x.Value))
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", x.Name, err)
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// jsonValue is v as JSON can hold it: a NaN or infinite float by name (tsql.Number), which
// reads back as that text; anything else as it is.
func jsonValue(v any) any {
	switch x := v.(type) {
	case float64:
		return tsql.Number(x)
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return tsql.Number(x)
		}
	}
	return v
}

// UnmarshalJSON reads an object, keeping its members' order (a stored diff read back).
func (f *Fields) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		*f = nil
		return nil
	}
	out, err := DecodeFields(data, "fields", storedNumber)
	if err != nil {
		return err
	}
	*f = out
	return nil
}

// storedNumber is a number of a stored diff as it was read from the engine: the float it equals,
// or, when no double holds it, the exact decimal (sampleValue writes a tsql.Decimal's digits).
func storedNumber(n json.Number) any {
	d := tsql.DecimalOf(n.String())
	if f, ok := d.ExactFloat(); ok {
		return f
	}
	return d
}

// DecodeFields reads a JSON object as fields, keeping its members' order; what names the value
// in errors. Numbers are float64, unless number is set: then they are read as json.Number (at
// any depth) and a member that is one is number's value for it.
func DecodeFields(data []byte, what string, number func(json.Number) any) (Fields, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if number != nil {
		dec.UseNumber()
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("%s: want an object", what)
	}
	out := Fields{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := t.(string)
		if !ok {
			return nil, fmt.Errorf("%s: want a column name", what)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if n, ok := v.(json.Number); ok && number != nil {
			v = number(n)
		}
		out = append(out, Field{Name: name, Value: v})
	}
	return out, nil
}

// Text shows the fields as column=value pairs, in order.
func (f Fields) Text() string {
	parts := make([]string, len(f))
	for i, x := range f {
		parts[i] = x.Name + "=" + ValueText(x.Value)
	}
	return strings.Join(parts, " ")
}

// Text is the line trueup diff --rows prints: the sign, then column=value pairs, the key first.
// Text that would read as something else (empty, with spaces, quotes or =, or "NULL") is quoted.
func (l RowLine) Text() string {
	var b strings.Builder
	b.WriteString(l.Sign)
	for _, x := range l.Values {
		b.WriteString(" " + x.Name + "=")
		if s, ok := x.Value.(string); ok && (s == "" || s == "NULL" || strings.ContainsAny(s, " \"'=\\") || !shows(s)) {
			b.WriteString(strconv.Quote(s))
			continue
		}
		b.WriteString(ValueText(x.Value))
	}
	return b.String()
}

// sampleValue makes a value read from a column of the given kind safe and readable in JSON: a
// date as 2006-01-02; a timestamp as 2006-01-02 15:04:05 with its fraction, if any, to the
// digit it has (a midnight timestamp is still a timestamp); non-finite floats as text. Only
// samples are printed so: which rows count as changed is decided on the values read (equal).
func sampleValue(kind tsql.Type, v any) any {
	switch x := v.(type) {
	case time.Time:
		if kind == tsql.TypeDate {
			return x.Format("2006-01-02")
		}
		return x.Format("2006-01-02 15:04:05.999999999")
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return tsql.AsText(x)
		}
	case []byte:
		return string(x)
	}
	return v
}
