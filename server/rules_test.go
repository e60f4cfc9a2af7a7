package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"

	"trueup/ledger"
	"trueup/monitor"
	"trueup/rules"
	"trueup/server"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// ruleMonitor is a monitor over two rules on a DuckDB table: daily_totals fails on 2026-07-02
// and 2026-07-03, positive passes.
func ruleMonitor(t *testing.T) *monitor.Monitor {
	t.Helper()
	set, targets, l := salesRules(t, "'2026-07-02', '2026-07-03'", fstest.MapFS{
		"sales/daily_totals.sql": {Data: []byte("-- kind: totals\n-- description: sales add up to the reference\n-- owner: finance@example.com\n-- table: sales\n-- partition: d\n-- measure: sum(amount)\n-- reference: sales_ref\n-- schedule: 0 6 * * *\n")},
		"sales/positive.sql":     {Data: []byte("-- kind: custom\n-- tags: money\nSELECT * FROM sales WHERE amount <= 0\n")},
	})
	return monitor.New(set.Rules, rules.NewRunner(targets), rules.NewStore(l), monitor.NewLedgerSlots(l),
		monitor.WithClock(monitor.NewFakeClock(time.Date(2026, 7, 10, 5, 0, 0, 0, time.UTC))))
}

// salesRules loads files, rules on a DuckDB table sales of 2026-07-01 to 04 (10 rows of 10 a
// day) and its reference sales_ref of daily sums, 7 too many on the days listed (SQL literals),
// with a ledger of their own.
func salesRules(t *testing.T, offDays string, files fstest.MapFS) (*rules.Set, rules.TargetMap, *ledger.Ledger) {
	t.Helper()
	ctx := t.Context()
	e := sqltest.DuckDB(t)
	for _, q := range []string{
		"CREATE TABLE sales (d DATE, amount DOUBLE)",
		"INSERT INTO sales SELECT DATE '2026-07-01' + CAST(range % 4 AS INTEGER), 10 FROM range(40)",
		"CREATE TABLE sales_ref AS SELECT d, sum(amount) + CASE WHEN d IN (" + offDays + ") THEN 7 ELSE 0 END AS amount FROM sales GROUP BY d",
	} {
		if err := e.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	targets := rules.TargetMap{Default: "w", Engines: map[string]tsql.Engine{"w": e}}
	set, err := rules.Load(ctx, files, "rules", targets)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return set, targets, l
}

func post(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	client := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Post(url, "application/x-www-form-urlencoded", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, b.String()
}

func TestRulePages(t *testing.T) {
	ts := serve(t, server.Options{Rules: ruleMonitor(t)})
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d$`)

	t.Run("list_before_any_run", func(t *testing.T) {
		doc := getPage(t, ts.URL+"/rules", http.StatusOK)
		got := map[string]string{}
		doc.Find(`[data-testid="rule-row"]`).Each(func(_ int, s *goquery.Selection) {
			got[s.AttrOr("data-rule", "")] = s.AttrOr("data-status", "")
		})
		if diff := cmp.Diff(map[string]string{"daily_totals": "never run", "positive": "never run"}, got); diff != "" {
			t.Errorf("rules (-want +got):\n%s", diff)
		}
		if got := text(doc.Find(`[data-rule="daily_totals"] [data-testid="rule-schedule"]`)); !strings.HasPrefix(got, "0 6 * * *") {
			t.Errorf("schedule cell %q", got)
		}
		if got := text(doc.Find(`[data-rule="daily_totals"] [data-testid="rule-last-run"]`)); stamp.MatchString(got) {
			t.Errorf("last run of a rule that never ran: %q", got)
		}
	})

	t.Run("sql_before_any_run", func(t *testing.T) {
		doc := getPage(t, ts.URL+"/rules/daily_totals", http.StatusOK)
		if doc.Find(`[data-testid="latest"]`).Length() != 0 {
			t.Error("a rule that never ran shows a last run")
		}
		sql := doc.Find(`[data-testid="compiled"] [data-testid="rule-sql"][data-source="plan"] code`)
		for _, want := range []string{"sum(amount)", `FROM "sales"`, `"sales_ref"`} {
			if !strings.Contains(text(sql), want) {
				t.Errorf("the SQL the rule compiles to lacks %s: %q", want, text(sql))
			}
		}
		resp, body := get(t, ts.URL+"/api/v1/rules/daily_totals")
		var d struct {
			SQL    string          `json:"sql"`
			Latest json.RawMessage `json:"latest"`
		}
		if err := json.Unmarshal([]byte(body), &d); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("GET /api/v1/rules/daily_totals: %d %v\n%s", resp.StatusCode, err, body)
		}
		if string(d.Latest) != "null" || !strings.Contains(d.SQL, `FROM "sales_ref"`) || d.SQL != sql.Text() {
			t.Errorf("API: latest %s, sql %q; want null and the page's SQL %q", d.Latest, d.SQL, sql.Text())
		}
	})

	t.Run("run_now_redirects_to_the_result", func(t *testing.T) {
		resp, _ := post(t, ts.URL+"/rules/daily_totals/run")
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/rules/daily_totals?run=1" {
			t.Fatalf("POST run: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		doc := getPage(t, ts.URL+"/rules/daily_totals?run=1", http.StatusOK)
		if got := text(doc.Find(`[data-testid="rule-status"] .status`)); got != "fail" {
			t.Errorf("status %q, want fail", got)
		}
		if doc.Find(`[data-testid="just-ran"]`).Length() != 1 {
			t.Error("no notice of the run just made")
		}
		var parts []string
		doc.Find(`[data-testid="failing-partition"]`).Each(func(_ int, s *goquery.Selection) { parts = append(parts, text(s)) })
		if diff := cmp.Diff([]string{"2026-07-02", "2026-07-03"}, parts); diff != "" {
			t.Errorf("failing partitions (-want +got):\n%s", diff)
		}
		if n := doc.Find(`[data-testid="sample-row"]`).Length(); n != 2 {
			t.Errorf("%d sample rows, want 2", n)
		}
		var cols []string
		doc.Find(`[data-testid="sample"] th`).Each(func(_ int, s *goquery.Selection) { cols = append(cols, text(s)) })
		if diff := cmp.Diff([]string{"partition", "value", "reference", "difference", "difference_pct"}, cols); diff != "" {
			t.Errorf("sample columns (-want +got):\n%s", diff)
		}
		if sql := text(doc.Find(`[data-testid="latest"] [data-testid="rule-sql"][data-source="run"] code`)); !strings.Contains(sql, `sum(amount)`) || !strings.Contains(sql, `FROM "sales"`) {
			t.Errorf("rendered SQL: %s", sql)
		}
		if doc.Find(`[data-testid="compiled"]`).Length() != 0 {
			t.Error("after a run the page still shows the compiled SQL beside the run's")
		}
		if got := text(doc.Find(`[data-testid="rule-explain"]`)); !strings.HasPrefix(got, "passes when sum(amount) per d is within") {
			t.Errorf("explain %q", got)
		}
		if got := text(doc.Find(`[data-testid="alert-change"]`)); got != "first run → fail" {
			t.Errorf("alert %q", got)
		}
	})

	t.Run("list_after_a_run", func(t *testing.T) {
		doc := getPage(t, ts.URL+"/rules", http.StatusOK)
		row := doc.Find(`[data-rule="daily_totals"]`)
		if got := row.AttrOr("data-status", ""); got != "fail" {
			t.Errorf("status %q after the run", got)
		}
		if got := text(row.Find(`[data-testid="rule-last-run"]`)); !stamp.MatchString(got) {
			t.Errorf("last run %q, want the time of the run", got)
		}
	})

	t.Run("api_run_and_history_strip", func(t *testing.T) {
		resp, body := post(t, ts.URL+"/api/v1/rules/daily_totals/run")
		var run struct {
			RunID   int64 `json:"run_id"`
			Results []struct {
				Status            string   `json:"status"`
				FailingPartitions []string `json:"failing_partitions"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(body), &run); resp.StatusCode != http.StatusOK || err != nil || run.RunID != 2 || run.Results[0].Status != "fail" {
			t.Fatalf("API run: %d %s", resp.StatusCode, body)
		}
		doc := getPage(t, ts.URL+"/rules/daily_totals", http.StatusOK)
		var strip []string
		doc.Find(`[data-testid="history-strip"] rect`).Each(func(_ int, s *goquery.Selection) { strip = append(strip, s.AttrOr("data-status", "")) })
		if diff := cmp.Diff([]string{"fail", "fail"}, strip); diff != "" {
			t.Errorf("strip (-want +got):\n%s", diff)
		}
		if n := doc.Find(`[data-testid="history-row"]`).Length(); n != 2 {
			t.Errorf("%d history rows, want 2", n)
		}
		if n := doc.Find(`[data-testid="alert-row"]`).Length(); n != 1 {
			t.Errorf("%d alerts after two failing runs, want 1", n)
		}
	})

	t.Run("api_list", func(t *testing.T) {
		resp, body := get(t, ts.URL+"/api/v1/rules")
		var list []struct {
			Rule       string `json:"rule"`
			Status     string `json:"status"`
			Violations int64  `json:"violations"`
			Schedule   string `json:"schedule"`
			NextRun    string `json:"next_run"`
		}
		if err := json.Unmarshal([]byte(body), &list); resp.StatusCode != http.StatusOK || err != nil || len(list) != 2 {
			t.Fatalf("GET /api/v1/rules: %d %s", resp.StatusCode, body)
		}
		if l := list[0]; l.Rule != "daily_totals" || l.Status != "fail" || l.Violations != 2 || l.Schedule != "0 6 * * *" {
			t.Errorf("daily_totals: %+v", l)
		}
		if l := list[1]; l.Rule != "positive" || l.Status != "never run" {
			t.Errorf("positive: %+v", l)
		}
	})

	t.Run("metrics_per_rule", func(t *testing.T) {
		_, body := get(t, ts.URL+"/metrics")
		for _, want := range []string{
			`trueup_rule_status{kind="totals",rule="daily_totals",severity="error",status="fail"} 1`,
			`trueup_rule_status{kind="totals",rule="daily_totals",severity="error",status="pass"} 0`,
			`trueup_rule_violations{rule="daily_totals"} 2`,
			`trueup_rule_last_run_duration_seconds{rule="daily_totals"}`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})

	t.Run("unknown_rule", func(t *testing.T) {
		getPage(t, ts.URL+"/rules/"+url.PathEscape("nope"), http.StatusNotFound)
		if resp, _ := post(t, ts.URL+"/api/v1/rules/nope/run"); resp.StatusCode != http.StatusNotFound {
			t.Errorf("API run of an unknown rule: %d", resp.StatusCode)
		}
	})
}

// busyRules is a RuleService whose only rule is always running.
type busyRules struct{ server.RuleService }

func (busyRules) RunNow(_ context.Context, name, _ string) (*rules.Run, error) {
	return nil, monitor.Busy(name)
}

func TestRuleRunConflict(t *testing.T) {
	m := ruleMonitor(t)
	ts := serve(t, server.Options{Rules: busyRules{m}})
	resp, body := post(t, ts.URL+"/api/v1/rules/positive/run")
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "already running") {
		t.Errorf("run of a running rule: %d %s", resp.StatusCode, body)
	}
}

func TestRulesWithoutMonitor(t *testing.T) {
	ts := serve(t, server.Options{})
	doc := getPage(t, ts.URL+"/rules", http.StatusOK)
	if doc.Find(`[data-testid="rules-empty"]`).Length() != 1 {
		t.Error("no empty-state message")
	}
}
