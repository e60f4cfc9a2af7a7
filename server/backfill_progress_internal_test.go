package server

import (
	"bytes"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"trueup/backfill"
	"trueup/server/page"
)

// TestProgressSaysWhatTheRunDid reads the progress fragment's two lines as a visitor does: the
// run's state and what it did to its versions (only a running run is "building"), and the counts
// with their commas against the word before them.
func TestProgressSaysWhatTheRunDid(t *testing.T) {
	eta := 25.0
	tests := []struct {
		name     string
		state    string
		failed   int
		eta      *float64
		wantRun  string
		wantText string
	}{
		{"running", backfill.RunRunning, 0, &eta,
			"Run 7: running, building orders__v2, customer_ltv__v2",
			"50%: 2 of 4 partitions, 8,255 rows written, about 25s left"},
		{"running_with_failures", backfill.RunRunning, 1, &eta,
			"Run 7: running, building orders__v2, customer_ltv__v2",
			"50%: 2 of 4 partitions, 8,255 rows written, 1 failed, about 25s left"},
		{"validating", backfill.RunValidating, 0, nil,
			"Run 7: validating, built orders__v2, customer_ltv__v2, checking them",
			"50%: 2 of 4 partitions, 8,255 rows written"},
		{"validated", backfill.RunValidated, 0, nil,
			"Run 7: validated, built orders__v2, customer_ltv__v2",
			"50%: 2 of 4 partitions, 8,255 rows written"},
		{"validation_failed", backfill.RunValidationFailed, 0, nil,
			"Run 7: validation-failed, built orders__v2, customer_ltv__v2",
			"50%: 2 of 4 partitions, 8,255 rows written"},
		{"cancelled", backfill.RunCancelled, 0, nil,
			"Run 7: cancelled, stopped building orders__v2, customer_ltv__v2",
			"50%: 2 of 4 partitions, 8,255 rows written"},
		{"failed", backfill.RunFailed, 2, nil,
			"Run 7: failed, stopped while building orders__v2, customer_ltv__v2",
			"50%: 2 of 4 partitions, 8,255 rows written, 2 failed"},
		{"interrupted", backfill.RunInterrupted, 0, nil,
			"Run 7: interrupted, stopped while building orders__v2, customer_ltv__v2",
			"50%: 2 of 4 partitions, 8,255 rows written"},
		{"sampled", backfill.RunSampled, 0, nil,
			"Run 7: sampled, built a sample of orders__v2, customer_ltv__v2",
			"50%: 2 of 4 partitions, 8,255 rows written"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &backfill.Status{RunID: 7, Backfill: "fix", Table: "orders", State: tt.state,
				PartitionsTotal: 4, PartitionsDone: 2, PartitionsFailed: tt.failed, RowsWritten: 8255, ETASeconds: tt.eta,
				Tables: []backfill.TableStatus{{Table: "orders", Version: "v2"}, {Table: "customer_ltv", Version: "v2"}}}
			var buf bytes.Buffer
			if err := page.BackfillProgressFragment(*progressView("fix", st)).Render(t.Context(), &buf); err != nil {
				t.Fatal(err)
			}
			doc, err := goquery.NewDocumentFromReader(&buf)
			if err != nil {
				t.Fatal(err)
			}
			run := doc.Find("[data-testid=run-state]").Parent()
			if got := strings.Join(strings.Fields(run.Text()), " "); got != tt.wantRun {
				t.Errorf("run line %q, want %q", got, tt.wantRun)
			}
			if got := strings.Join(strings.Fields(doc.Find("[data-testid=progress-text]").Text()), " "); got != tt.wantText {
				t.Errorf("progress line %q, want %q", got, tt.wantText)
			}
			// the bad mark draws a red dot: only beside partitions that failed
			if bad := doc.Find("[data-testid=progress-text] .status.bad").Length(); bad != min(tt.failed, 1) {
				t.Errorf("%d bad marks on the progress line with %d failed", bad, tt.failed)
			}
		})
	}
}
