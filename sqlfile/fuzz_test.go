package sqlfile_test

import (
	"strings"
	"testing"

	"trueup/sqlfile"
)

// FuzzScan: any text scans without a panic, every key sits on a line of the text, and the body
// starts on one too. Seeds: testdata/fuzz/FuzzScan.
func FuzzScan(f *testing.F) {
	f.Add("-- kind: totals\n-- table: t\n--   continued\nSELECT 1\n")
	f.Add("-- a: 1\n-- a: 2\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		file := sqlfile.Scan("x/y.sql", text)
		lines := strings.Count(text, "\n") + 1
		for k, v := range file.Keys {
			if v.Line < 1 || v.Line > lines {
				t.Errorf("key %q on line %d of %d", k, v.Line, lines)
			}
		}
		if file.BodyLine < 0 || file.BodyLine > lines || (file.Body != "") != (file.BodyLine > 0) {
			t.Errorf("body %q on line %d of %d", file.Body, file.BodyLine, lines)
		}
		for _, p := range file.Problems() {
			if p.Line < 1 || p.Line > lines || p.Path != "x/y.sql" {
				t.Errorf("problem %v outside the file", p)
			}
		}
	})
}
