package page

import (
	"bytes"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

// TestCountsHaveThousandsSeparators: every page writes a count as Thousands does (1,234), not as
// 1234 beside a 34,706 on the same page or the next.
func TestCountsHaveThousandsSeparators(t *testing.T) {
	tests := []struct {
		name string
		page templ.Component
		want string // the page's counts, each in the page's text as written
	}{
		{"backfill_progress", BackfillProgressFragment(BackfillProgress{RunID: 1, State: "running", Done: 1234, Total: 20000, Failed: 1500, Rows: 34706,
			Tables: []ProgressTable{{Table: "orders", Version: "v2", Done: 1234, Total: 20000}}}),
			"1,234 of 20,000 partitions, 34,706 rows written, 1,500 failed orders v2: 1,234/20,000"},
		{"backfill_plan", BackfillShowPage(BackfillShow{Name: "b", Partitions: make([]string, 1200), Refreshes: 3600}), "1,200 partitions 3,600 refreshes"},
		{"backfills_by_reason", BackfillListPage(BackfillList{Reasons: []ReasonRow{{Reason: "bug", Runs: 1234, Tables: 5678}}}), "1,234 5,678"},
		{"diff_hidden", DiffPage(Diff{ID: 1, Hidden: 1500, AllHref: "/diffs/1?all=1"}), "1,500 unchanged partitions not listed"},
		{"validation_unchanged", DryRunPage(DryRun{Name: "b", Tables: []DiffTable{{Table: "orders", Unchanged: 2000}}}), "2,000 other partitions unchanged"},
		{"work_list", workList("Backfills", "work-backfills", make([]WorkItem, 1001)), "Backfills (1,001)"},
		{"query_rows", templ.Raw(Plural(12345, "row", "rows")), "12,345 rows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.page.Render(t.Context(), &buf); err != nil {
				t.Fatal(err)
			}
			doc, err := goquery.NewDocumentFromReader(&buf)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(strings.Fields(doc.Text()), " ")
			for _, w := range strings.Split(tt.want, " ") {
				if strings.ContainsAny(w, "0123456789") && !strings.Contains(got, w) {
					t.Errorf("%q missing from the page text:\n%s", w, got)
				}
			}
		})
	}
}

// TestDiffPageGrainAndOne: a diff at a grain says the partition column's span, and a count of
// one is singular.
func TestDiffPageGrainAndOne(t *testing.T) {
	var buf bytes.Buffer
	if err := DiffPage(Diff{ID: 1, PartitionColumn: "ts", Grain: "month", DuplicateKeys: 1}).Render(t.Context(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(strings.Fields(doc.Text()), " ")
	for _, want := range []string{"partitionts by month", "1 duplicate key."} {
		if !strings.Contains(got, want) {
			t.Errorf("%q missing from the page text:\n%s", want, got)
		}
	}
	if Plural(1, "partition", "partitions") != "1 partition" || Plural(2, "partition", "partitions") != "2 partitions" {
		t.Error("Plural")
	}
}
