package sqlfile_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"trueup/sqlfile"
)

// A file over the limit is refused as a problem of that file, naming its size; a file at the
// limit is read.
func TestReadRefusesLargeFiles(t *testing.T) {
	fsys := fstest.MapFS{
		"at_limit.sql":   {Data: []byte(strings.Repeat("-", sqlfile.MaxSize))},
		"over_limit.sql": {Data: []byte(strings.Repeat("-", sqlfile.MaxSize+1))},
		"huge.sql":       {Data: []byte(strings.Repeat("-", 10_800_000))},
	}
	if text, err := sqlfile.Read(fsys, "at_limit.sql", "rules/at_limit.sql"); err != nil || len(text) != sqlfile.MaxSize {
		t.Errorf("at the limit: %d bytes, %v", len(text), err)
	}
	for _, tc := range []struct{ name, want string }{
		{"over_limit.sql", "rules/over_limit.sql: file is 1.1 MB, limit 1 MiB"},
		{"huge.sql", "rules/huge.sql: file is 10.8 MB, limit 1 MiB"},
	} {
		text, err := sqlfile.Read(fsys, tc.name, "rules/"+tc.name)
		var ps sqlfile.Problems
		if !errors.As(err, &ps) || err.Error() != tc.want || text != "" {
			t.Errorf("%s: got %q, %v; want the problem %q", tc.name, text, err, tc.want)
		}
	}
	if _, err := sqlfile.Read(fsys, "missing.sql", "rules/missing.sql"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// A UTF-8 byte-order mark before the header is not part of the first line.
func TestScanIgnoresByteOrderMark(t *testing.T) {
	f := sqlfile.Scan("rules/x.sql", "\ufeff-- kind: custom\n-- table: t\nSELECT 1\n")
	if f.Get("kind") != "custom" || f.Line("kind") != 1 || f.Body != "SELECT 1" || f.BodyLine != 3 {
		t.Errorf("keys %v, body %q on line %d", f.Keys, f.Body, f.BodyLine)
	}
	if f := sqlfile.Scan("exposures/x.sql", "\ufeffSELECT 1\n"); f.Body != "SELECT 1" || f.BodyLine != 1 {
		t.Errorf("body %q on line %d", f.Body, f.BodyLine)
	}
}

// A file whose every line is a comment, and none a header line, is commented out: the loaders
// skip it. A file with a header line, a body, or nothing at all is not.
func TestCommentedOut(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       bool
	}{
		{"whole_example_commented", "-- -- kind: completeness\n-- -- table: orders\n--\n-- SELECT 1\n", true},
		{"prose_only", "-- nothing here yet, still thinking\n\n", true},
		{"header_line", "-- kind: completeness\n", false},
		{"body", "-- -- kind: custom\nSELECT 1\n", false},
		{"empty", "", false},
		{"blank", "\n\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sqlfile.CommentedOut(tc.text); got != tc.want {
				t.Errorf("CommentedOut(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
	fsys := fstest.MapFS{
		"a/off.sql": {Data: []byte("-- -- kind: completeness\n")},
		"a/on.sql":  {Data: []byte("-- kind: completeness\n")},
	}
	var got []string
	if _, err := sqlfile.ReadEach(fsys, "rules", func(shown, _ string) { got = append(got, shown) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "rules/a/on.sql" {
		t.Errorf("ReadEach handed on %v, want only rules/a/on.sql", got)
	}
}
