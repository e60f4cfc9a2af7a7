package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// itemsWarehouse creates the table items on the engine at url: six rows over three days and
// one without a day, with one planted problem per kind and NULLs that every kind lets pass.
//
//	d           id  status    amount  code   region
//	2026-07-01   1  placed       10   AB-1   EU
//	2026-07-01   2  shipped      20   AB-2   EU
//	2026-07-02   3  lost         30   XY     EU
//	2026-07-02   4  NULL       NULL   NULL   EU
//	2026-07-03   5  placed       -5   AB-5   NA
//	NULL         6  placed       10   AB-6   NA
func itemsWarehouse(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	e := sqltest.Open(t, url)
	cols := []tsql.Column{
		{Name: "d", Kind: tsql.TypeDate, Nullable: true},
		{Name: "id", Kind: tsql.TypeInt},
		{Name: "status", Kind: tsql.TypeString, Nullable: true},
		{Name: "amount", Kind: tsql.TypeFloat, Nullable: true},
		{Name: "code", Kind: tsql.TypeString, Nullable: true},
		{Name: "region", Kind: tsql.TypeString},
	}
	if err := e.CreateTable(ctx, "items", cols, "", nil); err != nil {
		t.Fatal(err)
	}
	d := func(s string) any { v, _ := time.Parse("2006-01-02", s); return v }
	rows := [][]any{
		{d("2026-07-01"), int64(1), "placed", 10.0, "AB-1", "EU"},
		{d("2026-07-01"), int64(2), "shipped", 20.0, "AB-2", "EU"},
		{d("2026-07-02"), int64(3), "lost", 30.0, "XY", "EU"},
		{d("2026-07-02"), int64(4), nil, nil, nil, "EU"},
		{d("2026-07-03"), int64(5), "placed", -5.0, "AB-5", "NA"},
		{nil, int64(6), "placed", 10.0, "AB-6", "NA"},
	}
	if err := e.Insert(ctx, "items", []string{"d", "id", "status", "amount", "code", "region"}, rows); err != nil {
		t.Fatal(err)
	}
}

// writeRules writes rule files under a new folder and returns it.
func writeRules(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "rules")
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkDoc is what trueup check --format json prints.
type checkDoc struct {
	Queries int `json:"queries"`
	Results []struct {
		Rule              string           `json:"rule"`
		Severity          string           `json:"severity"`
		Status            string           `json:"status"`
		Violations        int64            `json:"violations"`
		FailingPartitions []string         `json:"failing_partitions"`
		Sample            []map[string]any `json:"sample"`
		Message           string           `json:"message"`
	} `json:"results"`
}

// checkJSON runs trueup check --format json over rulesDir on the target url.
func checkJSON(t *testing.T, url, rulesDir string, args ...string) (int, checkDoc, string) {
	t.Helper()
	code, out, errs := cli(t, append([]string{"--target", url, "check", "--rules", rulesDir, "--format", "json"}, args...)...)
	var doc checkDoc
	if code != exitUsage {
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("exit %d, stdout is not JSON: %v\n%s\nstderr:\n%s", code, err, out, errs)
		}
	}
	return code, doc, errs
}

type kindOutcome struct {
	Status     string
	Violations int64
	Failing    []string
}

func kindOutcomes(doc checkDoc) map[string]kindOutcome {
	out := map[string]kindOutcome{}
	for _, r := range doc.Results {
		out[r.Rule] = kindOutcome{r.Status, r.Violations, r.FailingPartitions}
	}
	return out
}

var valueKindRules = map[string]string{
	"items/values_ok.sql":   "-- kind: accepted_values\n-- table: items\n-- column: status\n-- values: 'placed', 'shipped', 'lost'\n",
	"items/values_bad.sql":  "-- kind: accepted_values\n-- table: items\n-- column: status\n-- values: 'placed', 'shipped'\n-- partition: d\n",
	"items/values_rows.sql": "-- kind: accepted_values\n-- table: items\n-- column: status\n-- values: 'shipped', 'lost'\n-- partition: d\n",
	"items/values_num.sql":  "-- kind: accepted_values\n-- table: items\n-- column: id\n-- values: 1, 2, 3, 4, 5\n",
	"items/range_ok.sql":    "-- kind: accepted_range\n-- table: items\n-- column: amount\n-- min: -10\n-- max: 30\n",
	"items/range_bad.sql":   "-- kind: accepted_range\n-- table: items\n-- column: amount\n-- min: 0\n",
	"items/range_excl.sql":  "-- kind: accepted_range\n-- table: items\n-- column: amount\n-- min: 10\n-- max: 30\n-- inclusive: false\n-- partition: d\n",
	"items/expr_ok.sql":     "-- kind: expression\n-- table: items\n-- expression: amount < 100\n",
	"items/expr_bad.sql":    "-- kind: expression\n-- table: items\n-- expression: amount > 0 AND id > 0\n-- partition: d\n",
	"items/pattern_ok.sql":  "-- kind: pattern\n-- table: items\n-- column: code\n-- regex: ^[A-Z]{2}(-\\d+)?$\n",
	"items/pattern_bad.sql": "-- kind: pattern\n-- table: items\n-- column: code\n-- regex: ^AB-\\d+$\n",
	"items/pattern_neg.sql": "-- kind: pattern\n-- table: items\n-- column: code\n-- regex: ^X\n-- negate: true\n",
	"items/const_ok.sql":    "-- kind: not_constant\n-- table: items\n-- column: region\n",
	"items/const_day.sql":   "-- kind: not_constant\n-- table: items\n-- column: region\n-- partition: d\n",
	"items/const_null.sql":  "-- kind: not_constant\n-- table: items\n-- column: status\n-- partition: d\n",
	"items/rows_ok.sql":     "-- kind: row_count\n-- table: items\n-- min: 6\n-- max: 6\n",
	"items/rows_bad.sql":    "-- kind: row_count\n-- table: items\n-- max: 5\n",
	"items/rows_day.sql":    "-- kind: row_count\n-- table: items\n-- min: 2\n-- partition: d\n",
	"items/complete.sql":    "-- kind: completeness\n-- table: items\n-- partition: d\n-- not_null: region\n",
}

// TestCheckValueKinds: each new kind passes and fails on both engines, NULL values pass, a
// NULL partition is named NULL, and all of them are counted by one scan of items.
func TestCheckValueKinds(t *testing.T) {
	for name, url := range warehouseURLs(t) {
		t.Run(name, func(t *testing.T) {
			itemsWarehouse(t, url)
			dir := writeRules(t, valueKindRules)
			code, doc, errs := checkJSON(t, url, dir)
			if code != exitFailed {
				t.Fatalf("exit %d, want 1\n%s", code, errs)
			}
			none := []string{}
			want := map[string]kindOutcome{
				"values_ok":   {"pass", 0, none},
				"values_bad":  {"fail", 1, []string{"2026-07-02"}},
				"values_num":  {"fail", 1, none},
				"values_rows": {"fail", 1, []string{"NULL", "2026-07-01", "2026-07-03"}}, // placed, in three rows
				"range_ok":    {"pass", 0, none},
				"range_bad":   {"fail", 1, none},
				"range_excl":  {"fail", 4, []string{"NULL", "2026-07-01", "2026-07-02", "2026-07-03"}},
				"expr_ok":     {"pass", 0, none},
				"expr_bad":    {"fail", 1, []string{"2026-07-03"}},
				"pattern_ok":  {"pass", 0, none},
				"pattern_bad": {"fail", 1, none},
				"pattern_neg": {"fail", 1, none},
				"const_ok":    {"pass", 0, none},
				// every day holds one region; the NULL day too
				"const_day": {"fail", 4, []string{"NULL", "2026-07-01", "2026-07-02", "2026-07-03"}},
				// 07-02 holds lost and a NULL: one value; 07-01 two
				"const_null": {"fail", 3, []string{"NULL", "2026-07-02", "2026-07-03"}},
				"rows_ok":    {"pass", 0, none},
				"rows_bad":   {"fail", 1, none},
				"rows_day":   {"fail", 2, []string{"NULL", "2026-07-03"}},
				"complete":   {"fail", 1, []string{"NULL"}},
			}
			if diff := cmp.Diff(want, kindOutcomes(doc)); diff != "" {
				for _, r := range doc.Results {
					if r.Status == "error" {
						t.Logf("%s: %s", r.Rule, r.Message)
					}
				}
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			// one scan of items grouped by d carries every count, min, max and row count; the
			// failing row kinds then read their samples (values_bad, values_rows, values_num, range_bad,
			// range_excl, expr_bad, pattern_bad, pattern_neg), and completeness its rows with
			// a NULL region, as it does for any failure beside missing partitions
			if doc.Queries != 10 {
				t.Errorf("queries = %d, want 10", doc.Queries)
			}
			samples := map[string][]map[string]any{}
			messages := map[string]string{}
			for _, r := range doc.Results {
				samples[r.Rule], messages[r.Rule] = r.Sample, r.Message
			}
			wantSamples := map[string][]map[string]any{
				"values_bad":  {{"status": "lost", "rows": 1.0}},
				"pattern_bad": {{"code": "XY", "rows": 1.0}},
				"rows_bad":    {{"rows": 6.0, "min": nil, "max": 5.0}},
				"const_null":  {{"partition": "NULL", "status": "placed", "rows": 1.0}, {"partition": "2026-07-02", "status": "lost", "rows": 2.0}, {"partition": "2026-07-03", "status": "placed", "rows": 1.0}},
			}
			for rule, w := range wantSamples {
				if diff := cmp.Diff(w, samples[rule]); diff != "" {
					t.Errorf("%s sample (-want +got):\n%s", rule, diff)
				}
			}
			if s := samples["range_bad"]; len(s) != 1 || s[0]["id"] != 5.0 {
				t.Errorf("range_bad sample: %v", s)
			}
			wantMessages := map[string]string{
				"values_bad":  "1 value of status is not one of 'placed', 'shipped' (1 row)",
				"values_rows": "1 value of status is not one of 'shipped', 'lost' (3 rows, 1 with a NULL d)",
				"range_excl":  "4 rows whose amount is outside (10, 30) (1 row with a NULL d)",
				"expr_bad":    "1 row where amount > 0 AND id > 0 is false",
				"pattern_neg": "1 row whose code matches ^X",
				"const_ok":    "",
				"rows_bad":    "items has 6 rows, outside at most 5",
				"rows_day":    "2 partitions of 4 with a row count outside at least 2",
				"complete":    "1 row with a NULL d",
			}
			for rule, w := range wantMessages {
				if messages[rule] != w {
					t.Errorf("%s message %q, want %q", rule, messages[rule], w)
				}
			}
		})
	}
}

// TestCheckValueKindsRefused: what the new kinds refuse at load, as path:line, exit 2.
func TestCheckValueKindsRefused(t *testing.T) {
	for name, url := range warehouseURLs(t) {
		t.Run(name, func(t *testing.T) {
			itemsWarehouse(t, url)
			dir := writeRules(t, map[string]string{
				"a.sql": "-- kind: accepted_values\n-- table: items\n-- column: status\n-- values: 'a', status\n",
				"b.sql": "-- kind: pattern\n-- table: items\n-- column: amount\n-- regex: ^1\n",
				"c.sql": "-- kind: pattern\n-- table: items\n-- column: code\n-- regex: ^(A\n",
				"d.sql": "-- kind: expression\n-- table: items\n-- expression: amount + 1\n",
				"e.sql": "-- kind: row_count\n-- table: items\n",
				"f.sql": "-- kind: accepted_range\n-- table: items\n-- column: amount\n-- min: 1\n-- max: read_csv('x')\n",
				"g.sql": "-- kind: expression\n-- table: items\n-- expression: nope > 1\n",
				"h.sql": "-- kind: expression\n-- table: items\n-- expression: sum(amount) > 0\n",
			})
			code, _, errs := checkJSON(t, url, dir)
			if code != exitUsage {
				t.Fatalf("exit %d, want 2\n%s", code, errs)
			}
			for _, want := range []string{
				"a.sql:4: values \"'a', status\": status is not a literal",
				"b.sql:3: pattern needs a text column; amount is",
				"c.sql:4: regex \"^(A\": missing closing )",
				"d.sql:3: expression amount + 1 is not a true/false condition over items",
				"e.sql:1: kind row_count needs min:, max: or compare_to:",
				"f.sql:5: max \"read_csv('x')\": SQL calls read_csv()",
				"g.sql:3: expression does not prepare in",
				"h.sql:3: expression does not prepare in",
			} {
				if !strings.Contains(errs, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errs)
				}
			}
		})
	}
}

// pairsTable creates pairs(a, b): keys with NULLs that occur twice.
func pairsTable(t *testing.T, url string) {
	t.Helper()
	e := sqltest.Open(t, url)
	ctx := context.Background()
	cols := []tsql.Column{{Name: "a", Kind: tsql.TypeInt, Nullable: true}, {Name: "b", Kind: tsql.TypeString, Nullable: true}}
	if err := e.CreateTable(ctx, "pairs", cols, "", nil); err != nil {
		t.Fatal(err)
	}
	rows := [][]any{{int64(1), "x"}, {nil, "y"}, {nil, "y"}, {int64(2), nil}, {int64(2), nil}}
	if err := e.Insert(ctx, "pairs", []string{"a", "b"}, rows); err != nil {
		t.Fatal(err)
	}
}

var whereRules = map[string]string{
	// each passes only because where: leaves the offending rows out
	"items/where_complete.sql": "-- kind: completeness\n-- table: items\n-- partition: d\n-- not_null: status\n-- where: id <> 4 AND d IS NOT NULL\n",
	"items/where_unique.sql":   "-- kind: uniqueness\n-- table: items\n-- columns: region\n-- where: id >= 4 AND id <= 5\n",
	"items/where_totals.sql":   "-- kind: totals\n-- table: items\n-- partition: d\n-- measure: sum(amount)\n-- where: region = 'EU'\n-- reference: SELECT d, sum(amount) FROM items WHERE region = 'EU' GROUP BY d\n",
	"items/where_rel.sql":      "-- kind: relationships\n-- table: items\n-- column: id\n-- parent: pairs\n-- parent_column: a\n-- where: id <= 2\n",
	"items/where_values.sql":   "-- kind: accepted_values\n-- table: items\n-- column: status\n-- values: 'placed', 'shipped'\n-- where: id <> 3\n",
	"items/where_rows.sql":     "-- kind: row_count\n-- table: items\n-- max: 2\n-- where: region = 'NA'\n",
	// and one that fails within the rows where: keeps
	"items/where_unique_bad.sql": "-- kind: uniqueness\n-- table: items\n-- columns: region\n-- where: id <= 2\n",
	"items/where_rel_bad.sql":    "-- kind: relationships\n-- table: items\n-- column: id\n-- parent: pairs\n-- parent_column: a\n-- where: id <= 3\n",
	"items/where_fresh.sql":      "-- kind: freshness\n-- table: items\n-- column: d\n-- max_age: 1d\n-- where: id > 100\n",
	"items/where_fresh_null.sql": "-- kind: freshness\n-- table: items\n-- column: d\n-- max_age: 1d\n-- where: id = 6\n",
	"items/totals_bad.sql":       "-- kind: totals\n-- table: items\n-- partition: d\n-- measure: sum(amount)\n-- reference: SELECT d, sum(amount) FROM items WHERE region = 'EU' OR id = 6 GROUP BY d\n",
	// NULLs in a key: ignored (the default, as dbt's unique) or grouped (unique_combination_of_columns)
	"pairs/nulls_ignore.sql": "-- kind: uniqueness\n-- table: pairs\n-- columns: a, b\n",
	"pairs/nulls_equal.sql":  "-- kind: uniqueness\n-- table: pairs\n-- columns: a, b\n-- nulls: equal\n",
	// thresholds: range_bad has 1 violation in 6 rows, range_excl 4
	"items/t_warns.sql":      "-- kind: accepted_range\n-- table: items\n-- column: amount\n-- min: 0\n-- error_if: > 1\n",
	"items/t_within.sql":     "-- kind: accepted_range\n-- table: items\n-- column: amount\n-- min: 0\n-- error_if: > 1\n-- warn_if: > 1\n",
	"items/t_share_err.sql":  "-- kind: accepted_range\n-- table: items\n-- column: amount\n-- min: 10\n-- max: 30\n-- inclusive: false\n-- error_if: >= 10%\n",
	"items/t_share_warn.sql": "-- kind: accepted_range\n-- table: items\n-- column: amount\n-- min: 10\n-- max: 30\n-- inclusive: false\n-- error_if: >= 90%\n-- warn_if: >= 50%\n",
	"items/t_warn_rule.sql":  "-- kind: accepted_range\n-- table: items\n-- column: amount\n-- min: 0\n-- severity: warn\n-- warn_if: > 5\n",
}

// TestCheckWhereNullsThresholds: where: narrows every kind that reads a table, nulls: equal
// groups NULL keys, and warn_if / error_if decide from the count or the share of rows.
func TestCheckWhereNullsThresholds(t *testing.T) {
	for name, url := range warehouseURLs(t) {
		t.Run(name, func(t *testing.T) {
			itemsWarehouse(t, url)
			pairsTable(t, url)
			dir := writeRules(t, whereRules)
			code, doc, errs := checkJSON(t, url, dir)
			if code != exitFailed {
				t.Fatalf("exit %d, want 1\n%s", code, errs)
			}
			none := []string{}
			want := map[string]kindOutcome{
				"where_complete":   {"pass", 0, none},
				"where_unique":     {"pass", 0, none},
				"where_totals":     {"pass", 0, none},
				"where_rel":        {"pass", 0, none},
				"where_values":     {"pass", 0, none},
				"where_rows":       {"pass", 0, none},
				"where_unique_bad": {"fail", 1, none},
				"where_rel_bad":    {"fail", 1, none},
				"where_fresh":      {"fail", 1, none},
				"where_fresh_null": {"fail", 1, none},
				"totals_bad":       {"fail", 1, []string{"2026-07-03"}},
				"nulls_ignore":     {"pass", 0, none},
				"nulls_equal":      {"fail", 2, none},
				"t_warns":          {"fail", 1, none},
				"t_within":         {"pass", 1, none},
				"t_share_err":      {"fail", 4, none},
				"t_share_warn":     {"fail", 4, none},
				"t_warn_rule":      {"pass", 1, none},
			}
			if diff := cmp.Diff(want, kindOutcomes(doc)); diff != "" {
				for _, r := range doc.Results {
					if r.Status == "error" {
						t.Logf("%s: %s", r.Rule, r.Message)
					}
				}
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			severity := map[string]string{}
			res := map[string]int{}
			for i, r := range doc.Results {
				severity[r.Rule], res[r.Rule] = r.Severity, i
			}
			for rule, w := range map[string]string{"t_warns": "warn", "t_within": "error", "t_share_err": "error", "t_share_warn": "warn", "t_warn_rule": "warn"} {
				if severity[rule] != w {
					t.Errorf("%s severity %s, want %s", rule, severity[rule], w)
				}
			}
			if m := doc.Results[res["t_within"]].Message; m != "1 row whose amount is outside [0, ∞) (within error_if > 1, warn_if > 1)" {
				t.Errorf("t_within message %q", m)
			}
			for rule, w := range map[string]string{
				"where_fresh":      "no row of items meets where: id > 100",
				"where_fresh_null": "d has no value: it is NULL in every row",
				"totals_bad":       "1 partition of 4 differs from the reference by more than 0 (exact)",
				"where_unique_bad": "1 key occurs more than once",
				"nulls_equal":      "2 keys occur more than once",
			} {
				if m := doc.Results[res[rule]].Message; m != w {
					t.Errorf("%s message %q, want %q", rule, m, w)
				}
			}
			_, text, _ := cli(t, "--target", url, "check", "--rules", dir, "--rule", "t_within,t_warns")
			for _, want := range []string{
				"PASS  t_within                         accepted_range  1 row whose amount is outside [0, ∞) (within error_if > 1, warn_if > 1)",
				"WARN  t_warns                          accepted_range  1 row whose amount is outside [0, ∞)",
			} {
				if !strings.Contains(text, want) {
					t.Errorf("text output lacks %q:\n%s", want, text)
				}
			}
			code, out, errs := cli(t, "--target", url, "check", "--rules", dir, "--explain", "--rule", "where_unique_bad,t_within")
			for _, want := range []string{"WHERE (id <= 2)", "only the rows where id <= 2 are checked", "the violations decide by error_if > 1, warn_if > 1"} {
				if code != exitOK || !strings.Contains(out, want) {
					t.Errorf("explain (exit %d) lacks %q:\n%s%s", code, want, out, errs)
				}
			}
			if s := doc.Results[res["nulls_equal"]].Sample; len(s) != 2 || s[0]["rows"] != 2.0 {
				t.Errorf("nulls_equal sample %v", s)
			}
			if s := doc.Results[res["where_unique_bad"]].Sample; len(s) != 1 || s[0]["region"] != "EU" || s[0]["rows"] != 2.0 {
				t.Errorf("where_unique_bad sample %v", s)
			}
		})
	}
}

// TestCheckWhereRefused: where:, nulls:, warn_if and error_if that cannot be used are refused
// when the rules load, at their line.
func TestCheckWhereRefused(t *testing.T) {
	for name, url := range warehouseURLs(t) {
		t.Run(name, func(t *testing.T) {
			itemsWarehouse(t, url)
			dir := writeRules(t, map[string]string{
				"a.sql": "-- kind: uniqueness\n-- table: items\n-- columns: id\n-- where: amount + 1\n",
				"b.sql": "-- kind: completeness\n-- table: items\n-- not_null: id\n-- where: id IN (SELECT 1)\n",
				"c.sql": "-- kind: row_count\n-- table: items\n-- min: 1\n-- where: read_csv('x') IS NULL\n",
				"d.sql": "-- kind: uniqueness\n-- table: items\n-- columns: id\n-- nulls: distinct\n",
				"e.sql": "-- kind: uniqueness\n-- table: items\n-- columns: id\n-- warn_if: lots\n",
				"f.sql": "-- kind: custom\n-- error_if: > 1%\nSELECT * FROM items WHERE id < 0\n",
				"g.sql": "-- kind: freshness\n-- table: items\n-- column: d\n-- max_age: 1d\n-- where: nope = 1\n",
				"h.sql": "-- kind: schema\n-- table: items\n-- where: id > 1\n",
				"i.sql": "-- kind: uniqueness\n-- table: items\n-- columns: id\n-- where: sum(id) > 1\n",
			})
			code, _, errs := checkJSON(t, url, dir)
			if code != exitUsage {
				t.Fatalf("exit %d, want 2\n%s", code, errs)
			}
			for _, want := range []string{
				"a.sql:4: where amount + 1 is not a true/false condition over items",
				"b.sql:4: where \"id IN (SELECT 1)\": SELECT in an expression",
				"c.sql:4: where \"read_csv('x') IS NULL\": SQL calls read_csv()",
				"d.sql:4: nulls \"distinct\": want ignore",
				"e.sql:4: warn_if \"lots\": want a comparison",
				"f.sql:2: error_if > 1%: a share needs the rows of a table",
				"g.sql:5: where does not prepare in",
				"h.sql:3: unknown key where for kind schema",
				"i.sql:4: where does not prepare in",
			} {
				if !strings.Contains(errs, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errs)
				}
			}
		})
	}
}

// TestCheckSeveralRulesInAFile: a file holds several rules between -- --- lines; each names
// itself, the first one's table: carries to the rest, and problems point into the right rule.
func TestCheckSeveralRulesInAFile(t *testing.T) {
	several := `-- kind: uniqueness
-- rule: items_id_unique
-- table: items
-- columns: id
-- ---
-- rule: items_status_values
-- kind: accepted_values
-- column: status
-- values: 'placed', 'shipped'
-- ---
-- A plain comment before the header.
-- rule: items_na_rows
-- kind: row_count
-- max: 3
-- where: region = 'NA'
-- ---
-- rule: items_custom
-- kind: custom
SELECT * FROM items WHERE id < 0
-- ---
`
	broken := `-- rule: a
-- kind: uniqueness
-- table: items
-- columns: id
-- ---
-- kind: not_constant
-- column: region
-- ---
-- rule: c
-- kind: pattern
-- column: nope
-- regex: x
-- ---
-- rule: a
-- kind: expression
`
	for name, url := range warehouseURLs(t) {
		t.Run(name, func(t *testing.T) {
			itemsWarehouse(t, url)
			code, doc, errs := checkJSON(t, url, writeRules(t, map[string]string{"items/tests.sql": several}))
			if code != exitFailed {
				t.Fatalf("exit %d, want 1\n%s", code, errs)
			}
			none := []string{}
			want := map[string]kindOutcome{
				"items_id_unique":     {"pass", 0, none},
				"items_status_values": {"fail", 1, none},
				"items_na_rows":       {"pass", 0, none},
				"items_custom":        {"pass", 0, none},
			}
			if diff := cmp.Diff(want, kindOutcomes(doc)); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}

			code, _, errs = checkJSON(t, url, writeRules(t, map[string]string{"items/broken.sql": broken}))
			if code != exitUsage {
				t.Fatalf("exit %d, want 2\n%s", code, errs)
			}
			for _, want := range []string{
				"items/broken.sql:6: a file of several rules needs rule: in each of them",
				"items/broken.sql:11: column nope is not a column of items",
				"items/broken.sql:14: kind expression needs expression:",
				"items/broken.sql:14: rule a is already defined in ",
			} {
				if !strings.Contains(errs, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errs)
				}
			}
			if strings.Contains(errs, "broken.sql:1:") {
				t.Errorf("a problem of a later rule is reported at line 1:\n%s", errs)
			}
		})
	}
}

// TestCheckCompareAndGroups: row_count compared with another relation (equal, at most, per
// partition), and freshness per group with allow_future.
func TestCheckCompareAndGroups(t *testing.T) {
	for name, url := range warehouseURLs(t) {
		t.Run(name, func(t *testing.T) {
			itemsWarehouse(t, url)
			pairsTable(t, url)
			e := sqltest.Open(t, url)
			ctx := context.Background()
			// items_copy: items without id 6, the row that has no day
			if err := e.CreateTableAs(ctx, "items_copy", "", nil, "SELECT * FROM items WHERE id < 6"); err != nil {
				t.Fatal(err)
			}
			dir := writeRules(t, map[string]string{
				"items/cmp_equal.sql":     "-- kind: row_count\n-- table: items\n-- compare_to: pairs\n",
				"items/cmp_equal_tol.sql": "-- kind: row_count\n-- table: items\n-- compare_to: pairs\n-- tolerance: 1\n",
				"items/cmp_fewer.sql":     "-- kind: row_count\n-- table: pairs\n-- max: compare_to\n-- compare_to: items\n",
				"items/cmp_more.sql":      "-- kind: row_count\n-- table: pairs\n-- min: compare_to\n-- compare_to: items\n",
				"items/cmp_daily.sql":     "-- kind: row_count\n-- table: items\n-- partition: d\n-- compare_to: items_copy\n",
				// the newest day of EU is 07-02, of NA 07-03: with a clock far off, every group is stale
				"items/fresh_groups.sql":     "-- kind: freshness\n-- table: items\n-- column: d\n-- max_age: 100000d\n-- group_by: region\n",
				"items/fresh_stale.sql":      "-- kind: freshness\n-- table: items\n-- column: d\n-- max_age: 1d\n-- group_by: region, status\n-- where: status IS NOT NULL\n",
				"items/totals_whole.sql":     "-- kind: totals\n-- table: items\n-- measure: sum(amount)\n-- reference: items_copy\n",
				"items/totals_whole_ok.sql":  "-- kind: totals\n-- table: items\n-- measure: sum(amount)\n-- reference: SELECT 60\n-- tolerance: 10%\n",
				"items/totals_group.sql":     "-- kind: totals\n-- table: items\n-- partition: d\n-- group_by: region\n-- measure: sum(amount)\n-- reference: items_copy\n",
				"items/totals_by_region.sql": "-- kind: totals\n-- table: items\n-- group_by: region\n-- measure: count(*)\n-- reference: SELECT region, count(*) FROM items GROUP BY region\n",
				"items/fresh_future.sql":     "-- kind: freshness\n-- table: items\n-- column: d\n-- max_age: 1d\n-- allow_future: false\n-- where: d > '2026-07-01'\n",
			})
			code, doc, errs := checkJSON(t, url, dir)
			if code != exitFailed {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			none := []string{}
			want := map[string]kindOutcome{
				"cmp_equal":        {"fail", 1, none},
				"cmp_equal_tol":    {"pass", 0, none},
				"cmp_fewer":        {"pass", 0, none},
				"cmp_more":         {"fail", 1, none},
				"cmp_daily":        {"fail", 1, []string{"NULL"}},
				"fresh_groups":     {"pass", 0, none},
				"fresh_stale":      {"fail", 4, none},
				"fresh_future":     {"fail", 1, none},
				"totals_whole":     {"fail", 1, none},
				"totals_whole_ok":  {"pass", 0, none},
				"totals_group":     {"fail", 1, []string{"NULL"}},
				"totals_by_region": {"pass", 0, none},
			}
			if diff := cmp.Diff(want, kindOutcomes(doc)); diff != "" {
				for _, r := range doc.Results {
					if r.Status == "error" {
						t.Logf("%s: %s", r.Rule, r.Message)
					}
				}
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			for _, r := range doc.Results {
				switch r.Rule {
				case "cmp_equal":
					if r.Message != "items has 6 rows, outside equal to pairs's 5" || cmp.Diff([]map[string]any{{"rows": 6.0, "pairs": 5.0}}, r.Sample) != "" {
						t.Errorf("cmp_equal: %q %v", r.Message, r.Sample)
					}
				case "totals_whole":
					if r.Message != "sum(amount) is 65, the reference 55: more than 0 (exact) apart" {
						t.Errorf("totals_whole: %q", r.Message)
					}
				case "totals_group":
					if r.Message != "1 group of 4 differs from the reference by more than 0 (exact)" ||
						cmp.Diff([]map[string]any{{"partition": "NULL", "region": "NA", "value": 10.0, "reference": nil, "difference": 10.0}}, r.Sample) != "" {
						t.Errorf("totals_group: %q %v", r.Message, r.Sample)
					}
				case "fresh_stale":
					if len(r.Sample) != 4 || r.Sample[0]["region"] != "EU" || r.Sample[0]["status"] != "lost" {
						t.Errorf("fresh_stale sample %v", r.Sample)
					}
				}
			}
		})
	}
}

// TestCheckSchemaDeclared: a schema rule checks a declared column list (names, types where
// given, and with ordered: their order) without a snapshot.
func TestCheckSchemaDeclared(t *testing.T) {
	idType := map[string]string{"duckdb": "BIGINT", "clickhouse": "Int64"}
	amountType := map[string]string{"duckdb": "double", "clickhouse": "Float64"} // Nullable(Float64) matches
	for name, url := range warehouseURLs(t) {
		t.Run(name, func(t *testing.T) {
			itemsWarehouse(t, url)
			dir := writeRules(t, map[string]string{
				"items/names_ok.sql":  "-- kind: schema\n-- table: items\n-- columns: d, id, status, amount, code, region\n",
				"items/names_bad.sql": "-- kind: schema\n-- table: items\n-- columns: d, id, status, amount, code, country\n",
				"items/unordered.sql": "-- kind: schema\n-- table: items\n-- columns: id, d, status, amount, code, region\n",
				"items/ordered.sql":   "-- kind: schema\n-- table: items\n-- columns: id, d, status, amount, code, region\n-- ordered: true\n",
				"items/types_ok.sql":  "-- kind: schema\n-- table: items\n-- columns: d, id " + idType[name] + ", status, amount " + amountType[name] + ", code, region\n-- ordered: true\n",
				"items/types_bad.sql": "-- kind: schema\n-- table: items\n-- columns: d, id DECIMAL(18, 2), status, amount, code, region\n",
			})
			code, doc, errs := checkJSON(t, url, dir)
			if code != exitFailed {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			none := []string{}
			want := map[string]kindOutcome{
				"names_ok":  {"pass", 0, none},
				"names_bad": {"fail", 2, none},
				"unordered": {"pass", 0, none},
				"ordered":   {"fail", 2, none},
				"types_ok":  {"pass", 0, none},
				"types_bad": {"fail", 1, none},
			}
			if diff := cmp.Diff(want, kindOutcomes(doc)); diff != "" {
				for _, r := range doc.Results {
					t.Logf("%s: %s %v", r.Rule, r.Message, r.Sample)
				}
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			for _, r := range doc.Results {
				if r.Rule == "ordered" && (r.Message != "2 columns differ from the declared columns" ||
					cmp.Diff([]map[string]any{{"column": "d", "change": "moved", "was": 2.0, "now": 1.0}, {"column": "id", "change": "moved", "was": 1.0, "now": 2.0}}, r.Sample) != "") {
					t.Errorf("ordered: %q %v", r.Message, r.Sample)
				}
			}
		})
	}
}

// TestCheckSamplesQuoteWhatWouldNotShow: a failing rule's samples in the text output quote a
// value that would read as another ("DE " as DE, a NUL as nothing, "" as a gap), as the
// diff's samples do; a plain value stays bare.
func TestCheckSamplesQuoteWhatWouldNotShow(t *testing.T) {
	url := sqltest.DuckDBURL(t)
	e := sqltest.Open(t, url)
	ctx := context.Background()
	if err := e.CreateTable(ctx, "c", []tsql.Column{{Name: "country", Kind: tsql.TypeString, Nullable: true}}, "", nil); err != nil {
		t.Fatal(err)
	}
	if err := e.Insert(ctx, "c", []string{"country"}, [][]any{{"DE "}, {"a\x00b"}, {""}, {"FR"}, {"EU"}}); err != nil {
		t.Fatal(err)
	}
	e.Close()
	dir := writeRules(t, map[string]string{"c/known.sql": "-- kind: accepted_values\n-- table: c\n-- column: country\n-- values: 'EU'\n"})
	code, out, errs := cli(t, "--target", url, "check", "--rules", dir)
	if code != exitFailed {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{`country="DE "`, `country="a\x00b"`, `country=""`, "country=FR "} {
		if !strings.Contains(out, want) {
			t.Errorf("samples lack %s:\n%q", want, out)
		}
	}
}
