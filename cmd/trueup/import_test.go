package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestImportDBT: a dbt manifest's generic tests become one rule file per model, which load and
// give dbt's verdicts on both engines; the tests with no kind are listed with the reason and
// nothing is written for them; a second import refuses to overwrite.
func TestImportDBT(t *testing.T) {
	manifest := filepath.Join("testdata", "dbt", "manifest.json")
	for name, url := range warehouseURLs(t) {
		t.Run(name, func(t *testing.T) {
			itemsWarehouse(t, url)
			itemsCopies(t, url)
			pairsTable(t, url)
			out := filepath.Join(t.TempDir(), "rules")
			code, stdout, errs := cli(t, "import", "dbt", manifest, "--out", out)
			if code != exitOK {
				t.Fatalf("exit %d\n%s%s", code, stdout, errs)
			}
			for _, want := range []string{
				"wrote " + filepath.Join(out, "items", "dbt.sql") + ": 23 rules",
				"wrote " + filepath.Join(out, "pairs", "dbt.sql") + ": 2 rules",
				"not imported test.shop.assert_positive_amount: a singular test (a SELECT of its own): write it as kind: custom",
				"not imported test.shop.dbt_utils_equal_rowcount_items_by_region.a1b2c3: group_by_columns: row_count compares per partition",
				"not imported test.shop.dbt_utils_at_least_one_items_id.a1b2c3: test dbt_utils.at_least_one has no trueup kind",
				"not imported test.shop.accepted_values_items_status__var.a1b2c3: argument values is Jinja, which only dbt can render",
				"not imported test.shop.dbt_expectations_expect_column_values_to_match_regex_items_code_i.a1b2c3: regex flags \"i\"",
				"not imported test.shop.dbt_utils_equality_items_ref_items_other_excl.a1b2c3: exclude_columns: equality compares the columns it lists",
				"not imported test.shop.not_null_items_region_failcalc.a1b2c3: fail_calc \"sum(n_records)\": a rule counts its failing rows",
				"not imported test.shop.dbt_utils_not_constant_items_region_by_d.a1b2c3: group_by_columns: not_constant checks the table",
				"not imported unit_test.shop.items.test_amounts: a unit test",
				"25 of 34 tests imported",
			} {
				if !strings.Contains(stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, stdout)
				}
			}
			if text, _ := os.ReadFile(filepath.Join(out, "items", "dbt.sql")); !strings.Contains(string(text), "-- tags: volume\n") {
				t.Errorf("the test's tags are not the rule's:\n%s", text)
			}
			entries, _ := os.ReadDir(out)
			if len(entries) != 2 {
				t.Errorf("%d folders written, want items and pairs", len(entries))
			}

			code, doc, errs := checkJSON(t, url, out)
			if code != exitFailed {
				t.Fatalf("check: exit %d, want 1\n%s", code, errs)
			}
			got := map[string]string{}
			for _, r := range doc.Results {
				got[strings.TrimPrefix(r.Rule, "dbt_")] = r.Status + " " + r.Severity
			}
			want := map[string]string{
				"accepted_values_items_id__1__2__3__4__5":                          "fail error",
				"accepted_values_items_status__placed__shipped":                    "pass error", // where: id <> 3
				"expectations_expect_column_values_to_be_between_items_amount":     "pass error",
				"expectations_expect_column_values_to_be_in_set_items_status":      "pass error",
				"expectations_expect_column_values_to_be_unique_items_region":      "fail error", // row_condition: NA twice
				"expectations_expect_column_values_to_match_regex_items_code":      "pass error",
				"expectations_expect_column_values_to_not_be_null_items_status":    "fail error",
				"expectations_expect_column_values_to_not_match_regex_items_code":  "fail error",
				"expectations_expect_table_row_count_to_be_between_items":          "pass error",
				"utils_accepted_range_items_amount__0":                             "fail warn", // 1 violation: not > 1
				"utils_expression_is_true_items_amount___100":                      "pass error",
				"utils_not_constant_items_region":                                  "pass error",
				"utils_recency_items_d":                                            "pass error",
				"not_null_items_region":                                            "pass error",
				"relationships_items_id__a__ref_pairs_":                            "fail warn",
				"unique_items_id":                                                  "pass error",
				"utils_unique_combination_of_columns_pairs_a__b":                   "fail error", // NULLs equal
				"utils_equal_rowcount_items_ref_pairs_":                            "fail error", // 6 rows against 5
				"utils_fewer_rows_than_pairs_ref_items_":                           "pass error",
				"utils_fewer_rows_than_items_ref_items_same_":                      "fail error", // as many rows: not fewer
				"expectations_expect_table_row_count_to_be_between_items_strictly": "fail error", // 6 rows, not below 6
				"not_null_items_quoted_id":                                         "pass error", // dbt wrote "id", quoted
				"utils_recency_items_d_by_region":                                  "fail error", // 1 day: both regions stale
				"utils_equality_items_ref_items_same_":                             "pass error",
				"utils_equality_items_ref_items_other_":                            "fail error", // (6, NA) missing, (5, NA) twice
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}

			before, _ := os.ReadFile(filepath.Join(out, "items", "dbt.sql"))
			code, _, errs = cli(t, "import", "dbt", manifest, "--out", out)
			after, _ := os.ReadFile(filepath.Join(out, "items", "dbt.sql"))
			if code != exitUsage || !strings.Contains(errs, "exists: import writes new files only") || string(before) != string(after) {
				t.Errorf("a second import: exit %d\n%s", code, errs)
			}
		})
	}
}

func TestImportRefuses(t *testing.T) {
	dir := t.TempDir()
	t.Run("out_not_writable", func(t *testing.T) {
		// /proc takes no folders, not even from root
		code, out, errs := cli(t, "import", "dbt", filepath.Join("testdata", "dbt", "manifest.json"), "--out", "/proc/trueup-import/rules")
		if code != exitUsage || !strings.Contains(errs, "nothing was written") || out != "" {
			t.Errorf("--out in /proc: exit %d, stdout %q, stderr %q; want 2, nothing written", code, out, errs)
		}
	})
	bad := filepath.Join(dir, "manifest.json")
	os.WriteFile(bad, []byte(`{"nodes": [1, 2]}`), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no_tool", []string{"import"}, "import: want trueup import dbt PATH/target/manifest.json"},
		{"other_tool", []string{"import", "soda", bad}, "import: want trueup import dbt"},
		{"missing_file", []string{"import", "dbt", filepath.Join(dir, "nope.json")}, "nope.json: no such file"},
		{"not_a_manifest", []string{"import", "dbt", bad}, "not a dbt manifest (target/manifest.json)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := cli(t, append(tc.args, "--out", filepath.Join(dir, "rules"))...)
			if code != exitUsage || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stderr %q, want 2 and %q", code, errs, tc.want)
			}
			if out != "" {
				t.Errorf("stdout %q", out)
			}
			if _, err := os.Stat(filepath.Join(dir, "rules")); err == nil {
				t.Errorf("rules/ was written")
			}
		})
	}
}
