package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

var diffCols = []tsql.Column{
	{Name: "order_id", Kind: tsql.TypeInt},
	{Name: "order_date", Kind: tsql.TypeDate},
	{Name: "amount", Type: "DECIMAL(18,2)", Kind: tsql.TypeDecimal},
}

// diffRows are 20 orders a day from 2026-07-09 to 2026-07-12; extra adds orders to a day.
func diffRows(extra map[string]int) [][]any {
	var rows [][]any
	for d := 9; d <= 12; d++ {
		day := time.Date(2026, 7, d, 0, 0, 0, 0, time.UTC)
		for i := 0; i < 20+extra[day.Format("2006-01-02")]; i++ {
			rows = append(rows, []any{int64(d*1000 + i), day, 100.0 + float64(i)})
		}
	}
	return rows
}

func loadDiffTable(t *testing.T, e tsql.Engine, table string, rows [][]any) {
	t.Helper()
	ctx := context.Background()
	if err := e.CreateTable(ctx, table, diffCols, "order_date", []string{"order_id"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Insert(ctx, table, []string{"order_id", "order_date", "amount"}, rows); err != nil {
		t.Fatal(err)
	}
}

// diffProject writes a project whose warehouse holds orders__v1 and, as orders__v2, the same
// orders plus one more on 2026-07-10 and 2026-07-11 (+5%).
func diffProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	e, err := tsql.Create(context.Background(), "duckdb:"+filepath.Join(dir, "warehouse.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	loadDiffTable(t, e, "orders__v1", diffRows(nil))
	loadDiffTable(t, e, "orders__v2", diffRows(map[string]int{"2026-07-10": 1, "2026-07-11": 1}))
	loadDiffTable(t, e, "orders__copy", diffRows(nil))
	// a cent more on one order of 2026-07-10; one order of 2026-07-12 twice
	cents := diffRows(nil)
	cents[25][2] = cents[25][2].(float64) + 0.01
	loadDiffTable(t, e, "orders__cents", cents)
	loadDiffTable(t, e, "orders__dup", append(diffRows(nil), diffRows(nil)[70]))
	e.Close()
	cfg := filepath.Join(dir, "trueup.yaml")
	if err := os.WriteFile(cfg, []byte("targets:\n  warehouse:\n    url: duckdb:warehouse.duckdb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("fix.expect", "# the dedup fix\nexpect: inside 2026-07-10..2026-07-11 rows +0..6%, sum(amount) +0..7%; outside identical\n")
	write("tight.expect", "inside 2026-07-10 rows +0..6%; outside identical\n")
	write("broken.expect", "inside 2026-07-10 bytes +1%\n")
	return cfg
}

func TestDiffCommand(t *testing.T) {
	cfg := diffProject(t)
	dir := filepath.Dir(cfg)
	base := []string{"--config", cfg, "diff", "--old", "orders__v1", "--key", "order_id", "--partition", "order_date"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  []string // lines stdout must contain
		err  string   // text stderr must contain
	}{
		{"identical", []string{"--new", "orders__copy"}, exitOK,
			[]string{"4 partitions: 4 unchanged, 0 expected, 0 unexpected", "rows: 0 added, 0 removed, 0 changed, 0 duplicate keys"}, ""},
		{"difference_without_expectations", []string{"--new", "orders__v2", "--measure", "amount"}, exitFailed,
			[]string{
				"partition   old_count  new_count  delta  pct_change  amount_pct  checksum  verdict",
				"2026-07-10         20         21     +1         5.0         5.5  differs   unexpected",
				"2026-07-11         20         21     +1         5.0         5.5  differs   unexpected",
				"rows: 2 added, 0 removed, 0 changed, 0 duplicate keys",
				"  added    2026-07-10  order_id=10020",
			}, "diff: 2 partitions differ"},
		{"expectations_met", []string{"--new", "orders__v2", "--expect", filepath.Join(dir, "fix.expect")}, exitOK,
			[]string{"2026-07-10         20         21     +1         5.0         5.5  differs   expected",
				"4 partitions: 2 unchanged, 2 expected, 0 unexpected",
				"expectations: met (inside 2026-07-10..2026-07-11 rows +0..6%, sum(amount) +0..7%; outside identical)"}, ""},
		{"expectations_violated", []string{"--new", "orders__v2", "--expect", filepath.Join(dir, "tight.expect")}, exitFailed,
			[]string{"  2026-07-11  expected identical: rows 20 → 21, 1 added", "expectations: NOT met"}, "1 unexpected partition"},
		{"cent_changed", []string{"--new", "orders__cents"}, exitFailed,
			[]string{"rows: 0 added, 0 removed, 1 changed, 0 duplicate keys", "changed  2026-07-10  order_id=10005: amount 105 → 105.01"}, "diff: 1 partition differs"},
		{"tolerance_for_every_column", []string{"--new", "orders__cents", "--tolerance", "0.05"}, exitOK,
			[]string{"4 partitions: 4 unchanged", "rows: 0 added, 0 removed, 0 changed, 0 duplicate keys"}, ""},
		{"ignored_column", []string{"--new", "orders__cents", "--ignore", "amount"}, exitOK,
			[]string{"4 partitions: 4 unchanged"}, ""},
		{"duplicate_key", []string{"--new", "orders__dup"}, exitFailed,
			[]string{"rows: 0 added, 0 removed, 0 changed, 1 duplicate key", "duplicate 2026-07-12  order_id=12010: 1 old rows, 2 new rows"}, "diff: 1 partition differs"},
		{"only_some_partitions", []string{"--new", "orders__v2", "--only", "2026-07-09,2026-07-12"}, exitOK,
			[]string{"2 partitions: 2 unchanged"}, ""},
		{"unknown_relation", []string{"--new", "orders__v9"}, exitUsage, nil, "new relation orders__v9: not found"},
		{"unknown_column", []string{"--new", "orders__v2", "--measure", "revenue"}, exitUsage, nil, `measure "revenue": no such column`},
		{"missing_key", []string{"--new", "orders__v2", "--key", ""}, exitUsage, nil, "--key are required"},
		{"bad_tolerance", []string{"--new", "orders__v2", "--tolerance", "amount=lots"}, exitUsage, nil, "tolerance"},
		{"bad_expectations", []string{"--new", "orders__v2", "--expect", filepath.Join(dir, "broken.expect")}, exitUsage, nil, `unknown measure "bytes"`},
		{"unknown_target", []string{"--new", "orders__v2", "--new-target", "lake"}, exitUsage, nil, `unknown target "lake"`},
		{"bad_format", []string{"--new", "orders__v2", "--format", "yaml"}, exitUsage, nil, "--format"},
		{"most_samples", []string{"--new", "orders__v2", "--samples", "1000"}, exitFailed, []string{"rows: 2 added"}, "2 partitions differ"},
		{"too_many_samples", []string{"--new", "orders__v2", "--samples", "1001"}, exitUsage, nil, "samples 1001: want 0 to 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string(nil), base...), tc.args...)
			if tc.name == "missing_key" {
				args = []string{"--config", cfg, "diff", "--old", "orders__v1", "--new", "orders__v2"}
			}
			code, out, errs := cli(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
			}
			for _, line := range tc.out {
				if !strings.Contains(out, line) {
					t.Errorf("stdout lacks line %q:\n%s", line, out)
				}
			}
			if !strings.Contains(errs, tc.err) {
				t.Errorf("stderr %q lacks %q", errs, tc.err)
			}
		})
	}
}

// TestDiffTextPrintsTheSamplesAsked: the text prints as many samples of each kind as --samples
// keeps (it printed 5 whatever was asked); without the flag, 5.
func TestDiffTextPrintsTheSamplesAsked(t *testing.T) {
	cfg := diffProject(t)
	for samples, want := range map[string]int{"": 2, "1": 1} {
		args := []string{"--config", cfg, "diff", "--old", "orders__v1", "--new", "orders__v2", "--key", "order_id", "--partition", "order_date"}
		if samples != "" {
			args = append(args, "--samples", samples)
		}
		code, out, errs := cli(t, args...)
		if code != exitFailed {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errs)
		}
		if got := strings.Count(out, "\n  added    "); got != want {
			t.Errorf("--samples %q: %d added samples printed, want %d:\n%s", samples, got, want, out)
		}
	}
}

func TestDiffCommandJSON(t *testing.T) {
	cfg := diffProject(t)
	code, out, errs := cli(t, "--config", cfg, "diff", "--old", "orders__v1", "--new", "orders__v2", "--key", "order_id",
		"--partition", "order_date", "--expect", filepath.Join(filepath.Dir(cfg), "fix.expect"), "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		ID         int64 `json:"id"`
		Partitions []struct {
			Partition     string         `json:"partition"`
			OldCount      int64          `json:"old_count"`
			NewCount      int64          `json:"new_count"`
			Delta         int64          `json:"delta"`
			PctChange     *float64       `json:"pct_change"`
			ChecksumMatch bool           `json:"checksum_match"`
			Measures      map[string]any `json:"measures"`
			Verdict       string         `json:"verdict"`
		} `json:"partitions"`
		Rows            map[string]int64 `json:"rows"`
		ChangedColumns  map[string]int64 `json:"changed_columns"`
		Samples         map[string][]any `json:"samples"`
		ExpectationsMet bool             `json:"expectations_met"`
		RowsTransferred *int64           `json:"rows_transferred"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	var got []string
	for _, p := range doc.Partitions {
		pct := "null"
		if p.PctChange != nil {
			pct = fmt.Sprint(*p.PctChange)
		}
		got = append(got, fmt.Sprintf("%s %d %d %+d %s %v %s amount=%v", p.Partition, p.OldCount, p.NewCount, p.Delta, pct, p.ChecksumMatch, p.Verdict, p.Measures["amount"] != nil))
	}
	want := []string{
		"2026-07-09 20 20 +0 0 true unchanged amount=true",
		"2026-07-10 20 21 +1 5 false expected amount=true",
		"2026-07-11 20 21 +1 5 false expected amount=true",
		"2026-07-12 20 20 +0 0 true unchanged amount=true",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("partitions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{"added": 2, "removed": 0, "changed": 0, "duplicate_keys": 0}, doc.Rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if !doc.ExpectationsMet || doc.RowsTransferred == nil || doc.ChangedColumns == nil || len(doc.Samples["added"]) != 2 || doc.ID == 0 {
		t.Errorf("met=%v transferred=%v changed_columns=%v samples=%v id=%d", doc.ExpectationsMet, doc.RowsTransferred, doc.ChangedColumns, doc.Samples, doc.ID)
	}
}

// TestDiffCommandAcrossEngines compares the DuckDB orders with a copy in ClickHouse named by URL.
func TestDiffCommandAcrossEngines(t *testing.T) {
	url := sqltest.ClickHouseURL(t)
	if url == "" {
		t.Skip("needs ClickHouse")
	}
	cfg := diffProject(t)
	ch := sqltest.Open(t, url)
	loadDiffTable(t, ch, "orders", diffRows(map[string]int{"2026-07-12": 1}))
	code, out, errs := cli(t, "--config", cfg, "diff", "--old", "orders__v1", "--new", "orders", "--new-target", url,
		"--key", "order_id", "--partition", "order_date")
	if code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	for _, line := range []string{
		"2026-07-12         20         21     +1         5.0  differs   unexpected",
		"rows: 1 added, 0 removed, 0 changed, 0 duplicate keys",
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("stdout lacks %q:\n%s", line, out)
		}
	}
	if !strings.Contains(out, "(across engines)") {
		t.Errorf("not reported as a cross-engine diff:\n%s", out)
	}
}
