package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// bindBody reads a write's body into v, the one way every handler does. A JSON body is read
// strictly: a field v does not have is a 400 naming it, and so is anything after the object, so
// that a misspelt {"dry-run": true} is refused instead of a real swap being made without it. A
// form (the pages post the same fields, with their CSRF token and confirmation beside them) is
// bound as echo binds forms; no body leaves v as it is. what names the request in the message,
// with an example of its body: `a swap request {"to": "v2", …}`.
func bindBody(c echo.Context, v any, what string) error {
	if err := decodeBody(c, v); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("The request body is not %s: %s.", what, err)).SetInternal(err)
	}
	return nil
}

// noBody is h for a write that takes no body (a run, an announcement): a body with fields is a
// 400 before anything else is asked, the server's operations included. {"sample": 1} to a
// backfill's run is not quietly a run of every partition.
func noBody(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := decodeBody(c, &struct{}{}); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("This request takes no body: %s.", err)).SetInternal(err)
		}
		return h(c)
	}
}

// decodeBody is bindBody's reading; its error is the cause in a few words.
func decodeBody(c echo.Context, v any) error {
	req := c.Request()
	if !strings.HasPrefix(req.Header.Get(echo.HeaderContentType), echo.MIMEApplicationJSON) {
		if req.ContentLength == 0 {
			return nil
		}
		if err := (&echo.DefaultBinder{}).BindBody(c, v); err != nil {
			return errors.New("send it as JSON (Content-Type: application/json) or as a form")
		}
		if strings.HasPrefix(req.URL.Path, "/api/") {
			// A form sent to the API is read as strictly as JSON: dry-run=true (for dry_run)
			// is refused, not a real swap. (The pages post their CSRF token and confirmations
			// beside the fields, to their own routes.)
			if _, err := c.FormParams(); err != nil {
				return errors.New("the form cannot be read")
			}
			known := formFields(reflect.TypeOf(v))
			for _, k := range slices.Sorted(maps.Keys(req.PostForm)) { // the body's, not the query's
				list, ok := known[k]
				switch {
				case !ok:
					return fmt.Errorf("unknown field %q%s", k, suggestField(k, slices.Collect(maps.Keys(known)), "field names"))
				case !list && len(req.PostForm[k]) > 1:
					// echo binds the first of them: to=v2&to=v3 is not a swap to v2.
					return fmt.Errorf("field %q is given twice", k)
				}
			}
		}
		return nil
	}
	raw, err := io.ReadAll(req.Body)
	if err != nil {
		return errors.New("the body cannot be read")
	}
	// encoding/json matches a key to a field whatever its case and keeps the last of a key
	// given twice: {"DRY_RUN": true} would be a dry run and {"dry_run": true, "dry_run": false}
	// a real one. The keys are checked first, exactly, so that neither reaches the handler.
	if err := checkKeys(raw, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	switch {
	case errors.Is(err, io.EOF):
		return nil // an empty body: nothing to bind
	case err != nil:
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("there is more after the JSON object")
	}
	return nil
}

// formFields are the form fields a request of type t binds (its form tags, in embedded structs
// too), and from when its JSON has one (the tables a swap was confirmed as moving, from=table=vN),
// each true when it takes a list (the field may be given more than once).
func formFields(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	out := map[string]bool{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			maps.Copy(out, formFields(f.Type))
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("form"), ","); name != "" && name != "-" {
			out[name] = f.Type.Kind() == reflect.Slice
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == "from" {
			out[name] = true
		}
	}
	return out
}

// jsonError says what is wrong with a request's JSON in the API's words: the field and the JSON
// kind it wants, never a Go type.
func jsonError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("the body is not JSON (at byte %d)", syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the body's JSON ends early")
	case errors.As(err, &typ) && typ.Field == "":
		return fmt.Errorf("the body is a JSON %s: want an object", typ.Value)
	case errors.As(err, &typ):
		return fmt.Errorf("field %q: want %s, got a JSON %s", typ.Field, jsonKind(typ.Type), typ.Value)
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s", field) // encoding/json has no type for it
	}
	return fmt.Errorf("the body's JSON cannot be read: %v", err)
}

// jsonKind names the JSON a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}
