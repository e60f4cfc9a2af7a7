package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// inputFiles are one file of each kind a user writes, each with the command that reads it and
// the exit code that command gives on the demo project as written.
var inputFiles = []struct {
	kind, file string
	args       []string
	code       int
}{
	{"rule", "rules/orders/unique_order_id.sql", []string{"check", "--rule", "unique_order_id"}, 0},
	{"backfill", "backfills/fix_dedup_bug.sql", []string{"backfill", "plan", "fix_dedup_bug"}, 0},
	{"exposure", "exposures/board_revenue.sql", []string{"notice", "list"}, 0},
	{"config", "trueup.yaml", []string{"check", "--rule", "unique_order_id"}, 0},
}

// rewrite replaces a file of the project for the rest of a (sub)test.
func rewrite(t *testing.T, file string, edit func(orig []byte) []byte) {
	t.Helper()
	orig, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, edit(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(file, orig, 0o644) })
}

// padTo appends comment lines (-- in SQL, # in YAML) until the file is size bytes, so it reads
// as before but for its size.
func padTo(file string, orig []byte, size int) []byte {
	out := append([]byte{}, orig...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	line := "-- " + strings.Repeat("x", 76) + "\n"
	if strings.HasSuffix(file, ".yaml") {
		line = "# " + strings.Repeat("x", 77) + "\n"
	}
	for len(out)+len(line) < size {
		out = append(out, line...)
	}
	out = append(out, line[:size-len(out)-1]...)
	return append(out, '\n')
}

// Files over 1 MiB are refused before they are read whole, as path: message, exit 2; the
// command that would have read them does nothing.
func TestOversizedInputsAreRefused(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	for _, tc := range inputFiles {
		t.Run(tc.kind, func(t *testing.T) {
			file := filepath.Join(dir, filepath.FromSlash(tc.file))
			rewrite(t, file, func(orig []byte) []byte { return padTo(file, orig, 1_100_000) })
			code, out, errs := cli(t, append([]string{"--config", cfg}, tc.args...)...)
			want := tc.file + ": file is 1.1 MB, limit 1 MiB"
			if code != exitUsage || !strings.Contains(errs, want) {
				t.Errorf("exit %d, stderr:\n%s%s\nwant 2 and %q", code, errs, out, want)
			}
		})
	}
	// A refused plan ran nothing.
	if code, _, errs := cli(t, "--config", cfg, "backfill", "status", "fix_dedup_bug"); code != exitUsage || !strings.Contains(errs, "has never run") {
		t.Errorf("status after the refused plan: exit %d: %s", code, errs)
	}
}

// runNumber is the run id and time in check's summary line, which differ between two checks.
var runNumber = regexp.MustCompile(`run [0-9]+:|in [0-9.]+s`)

// A UTF-8 byte-order mark (as some Windows editors write) is not part of the first line: each
// file reads as it does without one.
func TestByteOrderMarkIsIgnored(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	for _, tc := range inputFiles {
		t.Run(tc.kind, func(t *testing.T) {
			args := append([]string{"--config", cfg}, tc.args...)
			_, want, _ := cli(t, args...)
			want = runNumber.ReplaceAllString(want, "…")
			rewrite(t, filepath.Join(dir, filepath.FromSlash(tc.file)), func(orig []byte) []byte {
				return append([]byte("\ufeff"), orig...)
			})
			code, out, errs := cli(t, args...)
			out = runNumber.ReplaceAllString(out, "…")
			if code != tc.code || out != want {
				t.Errorf("with a BOM: exit %d, stderr %s\nstdout:\n%s\nwant exit %d and:\n%s", code, errs, out, tc.code, want)
			}
		})
	}
}

// A trueup.yaml that is not text (a NUL byte, bytes that are not UTF-8) is refused naming the
// line, exit 2, before any target or the ledger is opened.
func TestBinaryConfigIsRefusedWithALine(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"nul_byte", "targets:\n  w:\n    url: duckdb:w.duckdb\n\x00\x01\x02\x03", ":4: "},
		{"invalid_utf8", "targets:\n  w:\n    url: duckdb:w\xff\xfe.duckdb\n", ":3: "},
		{"zip_file", "PK\x03\x04\x14\x00\x00\x00\x08\x00\n\x9c\x8b", ":1: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(dir, tc.name+".yaml")
			os.WriteFile(cfg, []byte(tc.body), 0o644)
			code, _, errs := cli(t, "--config", cfg, "check")
			if code != exitUsage || !strings.Contains(errs, cfg+tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("exit %d, stderr %q; want 2 and one line containing %q", code, errs, cfg+tc.want)
			}
		})
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			t.Errorf("a refused config wrote %s", e.Name())
		}
	}
}

// --from 0001-01-01 is a date like any other, not "no scope": the plan is scoped from it.
func TestScopeFromTheFirstDate(t *testing.T) {
	cfg := filepath.Join(demoDir(t), "trueup.yaml")
	plan := func(from, to string) (int, string, string) {
		return cli(t, "--config", cfg, "backfill", "plan", "fix_dedup_bug", "--from", from, "--to", to, "--format", "json")
	}
	code, out, errs := plan("0001-01-01", "0001-01-03")
	var p struct {
		Scope      string   `json:"scope"`
		Partitions []string `json:"partitions"`
		Findings   []struct{ Severity, Message string }
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan: exit %d: %v: %s%s", code, err, out, errs)
	}
	if p.Scope != "0001-01-01..0001-01-03" || !slices.Equal(p.Partitions, []string{"0001-01-01", "0001-01-02", "0001-01-03"}) {
		t.Errorf("plan of 0001-01-01..0001-01-03: scope %q, partitions %v, findings %+v", p.Scope, p.Partitions, p.Findings)
	}
	// The warehouse has no orders in year 1: that blocks the plan, and nothing else does.
	if code != exitUsage || !strings.Contains(out, "input orders_raw has no rows for 3 partitions of the scope") || strings.Contains(out, "no scope") {
		t.Errorf("plan of 0001-01-01..0001-01-03: exit %d: %s%s", code, out, errs)
	}
	// From year 1 to now is more days than one plan may hold.
	code, out, errs = plan("0001-01-01", "2026-07-18")
	if code != exitUsage || !strings.Contains(out+errs, "covers more than 20000 partitions of grain day") {
		t.Errorf("plan of 0001-01-01..2026-07-18: exit %d, want 2 and the partition bound: %s%s", code, out, errs)
	}
}
