package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
)

// checkProject writes a project with a small DuckDB warehouse (orders with a duplicated id on
// 2026-07-03) and the given rule files, and returns its config path.
func checkProject(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	e, err := tsql.Create(ctx, "duckdb:"+filepath.Join(dir, "warehouse.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate}, {Name: "amount", Kind: tsql.TypeFloat}}
	if err := e.CreateTable(ctx, "orders", cols, "d", nil); err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	for i := 0; i < 6; i++ {
		d := time.Date(2026, 7, 1+i/2, 0, 0, 0, 0, time.UTC)
		rows = append(rows, []any{int64(i + 1), d, 10.0})
	}
	rows = append(rows, []any{int64(5), time.Date(2026, 7, 3, 0, 0, 0, 0, time.UTC), 10.0})
	if err := e.Insert(ctx, "orders", []string{"id", "d", "amount"}, rows); err != nil {
		t.Fatal(err)
	}
	e.Close()
	cfg := filepath.Join(dir, "trueup.yaml")
	os.WriteFile(cfg, []byte("targets:\n  warehouse:\n    url: duckdb:warehouse.duckdb\n"), 0o644)
	for name, body := range files {
		p := filepath.Join(dir, "rules", filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	return cfg
}

var (
	rulePasses  = "-- kind: completeness\n-- table: orders\n-- partition: d\n-- expect: 2026-07-01..2026-07-03\n-- tags: nightly\n"
	ruleFails   = "-- kind: uniqueness\n-- table: orders\n-- columns: id\n-- tags: nightly\n"
	ruleWarns   = "-- kind: uniqueness\n-- table: orders\n-- columns: id\n-- severity: warn\n"
	ruleBadKey  = "-- kind: uniqueness\n-- table: orders\n-- column: id\n"
	ruleBadSQL  = "-- kind: custom\nSELECT nope FROM orders\n"
	ruleNoTable = "-- kind: freshness\n-- table: shipments\n-- column: d\n-- max_age: 1d\n"
)

func TestCheckExitCodes(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		args  []string
		code  int
	}{
		{"all_pass", map[string]string{"orders/complete.sql": rulePasses}, nil, exitOK},
		{"error_rule_fails", map[string]string{"orders/complete.sql": rulePasses, "orders/unique.sql": ruleFails}, nil, exitFailed},
		{"warn_rule_fails", map[string]string{"orders/complete.sql": rulePasses, "orders/unique.sql": ruleWarns}, nil, exitOK},
		// valid at load, fails when it reads the rows: an error-severity rule in status error
		{"error_rule_errors", map[string]string{"orders/complete.sql": rulePasses, "orders/cast.sql": "-- kind: custom\nSELECT id FROM orders WHERE CAST('x' || id AS INTEGER) > 0\n"}, nil, exitFailed},
		{"warn_rule_errors", map[string]string{"orders/complete.sql": rulePasses, "orders/cast.sql": "-- kind: custom\n-- severity: warn\nSELECT id FROM orders WHERE CAST('x' || id AS INTEGER) > 0\n"}, nil, exitOK},
		{"only_the_passing_rule", map[string]string{"orders/complete.sql": rulePasses, "orders/unique.sql": ruleFails}, []string{"--rule", "complete"}, exitOK},
		{"unknown_rule", map[string]string{"orders/complete.sql": rulePasses}, []string{"--rule", "nope"}, exitUsage},
		{"no_rule_has_tag", map[string]string{"orders/complete.sql": rulePasses}, []string{"--tag", "weekly"}, exitUsage},
		{"bad_format", map[string]string{"orders/complete.sql": rulePasses}, []string{"--format", "xml"}, exitUsage},
		{"broken_rule_set", map[string]string{"orders/complete.sql": rulePasses, "orders/bad.sql": ruleBadKey}, nil, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := checkProject(t, tt.files)
			code, out, errs := cli(t, append([]string{"--config", cfg, "check"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			if strings.HasSuffix(tt.name, "_errors") && !strings.Contains(out, "ERROR cast") {
				t.Errorf("the cast rule did not end in error:\n%s", out)
			}
		})
	}
}

// TestCheckSyntaxErrorSaysWhatTheQueryLacks: a custom SELECT cut short is reported at its file
// and line with the parser's word on the query itself. It said "syntax error at or near ")"",
// a parenthesis of the wrapper trueup prepares the query in, which the user never wrote.
func TestCheckSyntaxErrorSaysWhatTheQueryLacks(t *testing.T) {
	cfg := checkProject(t, map[string]string{
		"orders/cut.sql": "-- kind: custom\n-- description: amounts below zero\nSELECT id\nFROM orders\nWHERE amount <\n",
	})
	code, out, errs := cli(t, "--config", cfg, "check")
	if code != exitUsage || out != "" {
		t.Fatalf("exit %d, want 2; stdout %q", code, out)
	}
	line, _, _ := strings.Cut(errs, "\n")
	if !strings.Contains(line, "orders/cut.sql:3: the SELECT does not prepare in duckdb:") ||
		!strings.HasSuffix(line, ": Parser Error: syntax error at end of input") {
		t.Errorf("stderr:\n%s\nwant orders/cut.sql:3: the SELECT does not prepare in duckdb:…: Parser Error: syntax error at end of input", errs)
	}
}

// TestCheckReportsEveryProblem: a broken rule set is reported as path:line lines, all at once,
// and nothing runs (no run is recorded).
func TestCheckReportsEveryProblem(t *testing.T) {
	cfg := checkProject(t, map[string]string{
		"orders/ok.sql":      rulePasses,
		"orders/bad_key.sql": ruleBadKey,
		"orders/bad_sql.sql": ruleBadSQL,
		"other/no_table.sql": ruleNoTable,
		"other/bad_cron.sql": "-- kind: schema\n-- table: orders\n-- schedule: every day\n",
	})
	code, out, errs := cli(t, "--config", cfg, "check")
	if code != exitUsage {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, errs)
	}
	rules := filepath.Join(filepath.Dir(cfg), "rules")
	if wd, _ := os.Getwd(); strings.HasPrefix(rules, wd) {
		rules, _ = filepath.Rel(wd, rules)
	}
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	want := []string{
		rules + "/orders/bad_key.sql:1: kind uniqueness needs columns:",
		rules + "/orders/bad_key.sql:3: unknown key column for kind uniqueness (it takes table, columns, partition, grain, nulls, where)",
		rules + "/orders/bad_sql.sql:2: the SELECT does not prepare in duckdb:",
		rules + "/other/bad_cron.sql:3: schedule: \"every day\" has 2 fields, want 5 (minute hour day-of-month month day-of-week)",
		rules + "/other/no_table.sql:2: table shipments does not exist in duckdb:",
		"trueup: check: 5 problems in the rule set, nothing was run",
	}
	if len(lines) != len(want) {
		t.Fatalf("stderr has %d lines, want %d:\n%s", len(lines), len(want), errs)
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d:\n got %s\nwant %s…", i+1, lines[i], want[i])
		}
	}
	if out != "" {
		t.Errorf("stdout should be empty, got %q", out)
	}
	// nothing ran: the first run that does gets id 1
	os.Remove(filepath.Join(rules, "orders", "bad_key.sql"))
	os.Remove(filepath.Join(rules, "orders", "bad_sql.sql"))
	os.RemoveAll(filepath.Join(rules, "other"))
	code, out, errs = cli(t, "--config", cfg, "check", "--format", "json")
	var run struct {
		RunID int64 `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(out), &run); code != exitOK || err != nil || run.RunID != 1 {
		t.Errorf("after fixing the rules: exit %d, run id %d, %v; stderr: %s", code, run.RunID, err, errs)
	}
}

func TestCheckFormats(t *testing.T) {
	cfg := checkProject(t, map[string]string{"orders/complete.sql": rulePasses, "orders/unique.sql": ruleFails, "orders/unique_warn.sql": ruleWarns})

	t.Run("json", func(t *testing.T) {
		code, out, errs := cli(t, "--config", cfg, "check", "--format", "json")
		if code != exitFailed {
			t.Fatalf("exit %d, want 1: %s", code, errs)
		}
		var doc struct {
			RunID   int64 `json:"run_id"`
			Queries int   `json:"queries"`
			Results []struct {
				Rule              string           `json:"rule"`
				Kind              string           `json:"kind"`
				Severity          string           `json:"severity"`
				Status            string           `json:"status"`
				Violations        int64            `json:"violations"`
				FailingPartitions []string         `json:"failing_partitions"`
				Sample            []map[string]any `json:"sample"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
		}
		if doc.RunID == 0 {
			t.Errorf("no run_id")
		}
		// one aggregate scan for completeness, the count and distinct count of id for both
		// uniqueness rules, and as they differ, one GROUP BY id for both
		if doc.Queries != 3 {
			t.Errorf("queries = %d, want 3", doc.Queries)
		}
		got := map[string]string{}
		for _, r := range doc.Results {
			got[r.Rule] = r.Severity + " " + r.Status
			if r.Rule == "unique" {
				if r.Violations != 1 || len(r.Sample) != 1 || r.Sample[0]["id"] != 5.0 || r.Sample[0]["rows"] != 2.0 {
					t.Errorf("unique: violations %d sample %v", r.Violations, r.Sample)
				}
			}
		}
		want := map[string]string{"complete": "error pass", "unique": "error fail", "unique_warn": "warn fail"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("results (-want +got):\n%s", diff)
		}
	})

	t.Run("junit", func(t *testing.T) {
		code, out, _ := cli(t, "--config", cfg, "check", "--format", "junit")
		if code != exitFailed {
			t.Fatalf("exit %d, want 1", code)
		}
		var doc struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Suite    struct {
				Cases []struct {
					Name    string  `xml:"name,attr"`
					Failure *string `xml:"failure"`
					Out     string  `xml:"system-out"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("not JUnit XML: %v\n%s", err, out)
		}
		if doc.Tests != 3 || doc.Failures != 1 {
			t.Errorf("tests %d failures %d, want 3 and 1", doc.Tests, doc.Failures)
		}
		// times to the millisecond, as reports print them
		for _, m := range regexp.MustCompile(`time="([^"]*)"`).FindAllStringSubmatch(out, -1) {
			if !regexp.MustCompile(`^\d+\.\d{3}$`).MatchString(m[1]) {
				t.Errorf("a JUnit time %q is not seconds to the millisecond", m[1])
			}
		}
		for _, c := range doc.Suite.Cases {
			if c.Name == "unique_warn" && (c.Failure != nil || !strings.HasPrefix(c.Out, "warn: ")) {
				t.Errorf("a warn rule is reported as %+v", c)
			}
		}
	})

	t.Run("text", func(t *testing.T) {
		code, out, _ := cli(t, "--config", cfg, "check", "--tag", "nightly")
		if code != exitFailed {
			t.Fatalf("exit %d, want 1", code)
		}
		for _, want := range []string{"PASS  complete", "FAIL  unique ", "1 key occurs more than once", "id=5  rows=2", "2 rules, 1 passed, 1 failed"} {
			if !strings.Contains(out, want) {
				t.Errorf("text output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("text_counts_a_warning_apart", func(t *testing.T) {
		code, out, errs := cli(t, "--config", cfg, "check")
		if code != exitFailed || !strings.Contains(out, "WARN  unique_warn") ||
			!strings.Contains(out, ": 3 rules, 1 passed, 1 failed, 1 warned, 0 could not run;") ||
			!strings.Contains(errs, "check: 1 error-severity rule failed") {
			t.Errorf("exit %d, want 1; the summary counts the warning as failed:\n%s%s", code, out, errs)
		}
	})

	t.Run("explain", func(t *testing.T) {
		code, out, errs := cli(t, "--config", cfg, "check", "--explain")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		for _, want := range []string{"-- 3 rules in 2 queries", `count(DISTINCT "id")`, "-- unique (uniqueness) reads query", "passes when no (id) occurs twice"} {
			if !strings.Contains(out, want) {
				t.Errorf("explain lacks %q:\n%s", want, out)
			}
		}
	})
}

// TestCheckDemo: on the demo project the totals rule fails on exactly the nine days of the
// planted bug, and check exits 1.
// TestCheckSummaryThroughTheServer: the text summary counts a failing warn-severity rule as
// warned, not failed, through a server as locally.
func TestCheckSummaryThroughTheServer(t *testing.T) {
	files := map[string]string{"orders/complete.sql": rulePasses, "orders/unique.sql": ruleFails, "orders/unique_warn.sql": ruleWarns}
	local, served := checkProject(t, files), checkProject(t, files)
	srv := serveDemo(t, filepath.Dir(served))
	tc := remoteCase{"check_text", []string{"check"}, exitFailed, "text"}
	compareModes(t, filepath.Dir(local), srv, tc)
	if _, out, errs := cli(t, "--server", srv.url, "check"); !strings.Contains(out, ": 3 rules, 1 passed, 1 failed, 1 warned, 0 could not run;") {
		t.Errorf("through the server: %s %s", out, errs)
	}
}

func TestCheckDemo(t *testing.T) {
	dir := demoDir(t)
	code, out, errs := cli(t, "--config", filepath.Join(dir, "trueup.yaml"), "check", "--rule", "matches_raw", "--format", "json")
	if code != exitFailed {
		t.Fatalf("exit %d, want 1: %s", code, errs)
	}
	var run struct {
		Results []struct {
			Status            string   `json:"status"`
			FailingPartitions []string `json:"failing_partitions"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatal(err)
	}
	want := []string{"2026-07-10", "2026-07-11", "2026-07-12", "2026-07-13", "2026-07-14", "2026-07-15", "2026-07-16", "2026-07-17", "2026-07-18"}
	if len(run.Results) != 1 || run.Results[0].Status != "fail" || cmp.Diff(want, run.Results[0].FailingPartitions) != "" {
		t.Errorf("matches_raw: %+v", run.Results)
	}
}

// TestServeRunsRules: serve loads the project's rules and answers for them; a broken rule set
// stops it before it listens.
func TestServeRunsRules(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	body := serveAndGet(t, cfg, "/api/v1/rules")
	var list []struct {
		Rule     string `json:"rule"`
		Status   string `json:"status"`
		Schedule string `json:"schedule"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list) < 6 {
		t.Fatalf("GET /api/v1/rules: %v\n%s", err, body)
	}
	for _, r := range list {
		// The demo runs its rules once when it is written: the totals rule starts failing.
		if r.Rule == "matches_raw" && (r.Schedule != "0 6 * * *" || r.Status != "fail") {
			t.Errorf("matches_raw: %+v", r)
		}
	}
	os.WriteFile(filepath.Join(dir, "rules", "broken.sql"), []byte("-- kind: nonsense\n"), 0o644)
	code, _, errs := cli(t, "--config", cfg, "serve", "--addr", freeAddr(t))
	if code != exitUsage || !strings.Contains(errs, "broken.sql:1: kind \"nonsense\"") {
		t.Errorf("serve with a broken rule: exit %d\n%s", code, errs)
	}
}
