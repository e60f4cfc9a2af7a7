package server

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// checkKeys refuses a JSON body whose object keys are not exactly the field names of t, or that
// names a key twice, at any depth: in the body's own object, in an object one of its fields
// holds, and in a map ({"from": {"orders": "v1", "orders": "v2"}} is refused too). A body that
// is not JSON passes: the strict decoding that follows names what is wrong with it.
func checkKeys(raw []byte, t reflect.Type) error {
	w := keyWalker{dec: json.NewDecoder(bytes.NewReader(raw))}
	w.dec.UseNumber()
	if err := w.value(t, ""); err != nil && !errors.Is(err, errNotJSON) {
		return err
	}
	return nil
}

// errNotJSON stops the walk where the body stops being JSON.
var errNotJSON = errors.New("not JSON")

type keyWalker struct{ dec *json.Decoder }

func (w keyWalker) token() (json.Token, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return nil, errNotJSON
	}
	return tok, nil
}

// value walks one JSON value that decodes into t (nil: any value, whose keys only must differ).
func (w keyWalker) value(t reflect.Type, path string) error {
	tok, err := w.token()
	if err != nil {
		return err
	}
	t = keyedType(t)
	switch tok {
	case json.Delim('{'):
		return w.object(t, path)
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(elem, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		_, err := w.token() // ]
		return err
	}
	return nil
}

// object walks the members of an object after its '{'.
func (w keyWalker) object(t reflect.Type, path string) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	switch {
	case t != nil && t.Kind() == reflect.Struct:
		fields = jsonFields(t)
	case t != nil && t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		name := key
		if path != "" {
			name = path + "." + key
		}
		if seen[key] {
			if fields != nil {
				return fmt.Errorf("field %q is given twice", name)
			}
			return fmt.Errorf("key %q is given twice", name)
		}
		seen[key] = true
		vt := elem
		if fields != nil {
			ft, ok := fields[key]
			if !ok {
				return fmt.Errorf("unknown field %q%s", name, suggestField(key, slices.Collect(maps.Keys(fields)), "field names"))
			}
			vt = ft
		}
		if err := w.value(vt, name); err != nil {
			return err
		}
	}
	_, err := w.token() // }
	return err
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// keyedType is t without its pointers, or nil when encoding/json does not read t's keys as
// fields (an interface, or a type that reads its own JSON, such as time.Time).
func keyedType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface {
		return nil
	}
	if p := reflect.PointerTo(t); p.Implements(jsonUnmarshaler) || p.Implements(textUnmarshaler) {
		return nil
	}
	return t
}

// jsonFields are the JSON names of struct t's fields, as encoding/json names them (the json
// tag's, else the Go name; an embedded struct's fields as the struct's own), with their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		out[cmp.Or(name, f.Name)] = f.Type
	}
	// A field of the struct itself hides one of the same name in a struct it embeds.
	for _, e := range embedded {
		for name, ft := range jsonFields(e) {
			if _, ok := out[name]; !ok {
				out[name] = ft
			}
		}
	}
	return out
}

// suggestField is the hint after an unknown field (or query parameter: names says which): the
// one it probably means, when one reads the same but for case, dashes or underscores
// ("DRY_RUN", "dry-run", "dryrun" for dry_run).
func suggestField(key string, fields []string, names string) string {
	slices.Sort(fields)
	for _, f := range fields {
		if strings.EqualFold(key, f) {
			if f == strings.ToLower(f) {
				return fmt.Sprintf(" (%s are lower case: %q)", names, f)
			}
			return fmt.Sprintf(" (did you mean %q?)", f)
		}
	}
	loose := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(s))
	}
	for _, f := range fields {
		if loose(key) == loose(f) {
			return fmt.Sprintf(" (did you mean %q?)", f)
		}
	}
	return ""
}
