package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/app"
	"trueup/backfill"
	"trueup/fault"
	"trueup/notices"
	"trueup/reconcile"
)

func mustEvidence(t *testing.T, run *backfill.Run, diffs app.StoredDiffs) notices.Evidence {
	t.Helper()
	ev, err := app.Evidence(context.Background(), run, diffs)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// fakeDiffs is a diff store holding one saved diff per id, of n partitions.
type fakeDiffs map[int64]int

func (f fakeDiffs) Get(_ context.Context, id int64) (*reconcile.Result, error) {
	n, ok := f[id]
	if !ok {
		return nil, fault.New(fault.NotFound, "There is no diff %d.", id)
	}
	return &reconcile.Result{Partitions: make([]*reconcile.Partition, n)}, nil
}

// A partition the old version did not have has no percentage (reconcile gives none): the
// notice calls it new rather than "0%".
func TestNoticeNewPartitionFromRun(t *testing.T) {
	pct := 2.0
	v := backfill.Validation{Passed: true, Tables: []backfill.TableCheck{{Table: "events", DiffID: 7, ExpectationsMet: true, Expect: "inside scope",
		Changed: []backfill.PartitionSummary{
			{Partition: "2026-07-01", OldCount: 50, NewCount: 51, PctChange: &pct, Verdict: "expected", Measure: "sum(amount)", OldTotal: 100, NewTotal: 104},
			{Partition: "2026-07-02", OldCount: 0, NewCount: 40, Verdict: "expected", Measure: "sum(amount)", NewTotal: 80},
		}}}}
	run := &backfill.Run{ID: 1, Backfill: "late_events", Reason: "late-data", Validation: v.JSON(),
		Tables: []backfill.RunTable{{Table: "events", Version: 2}},
		Plan:   &backfill.Plan{Column: "day", Grain: "day", Partitions: []string{"2026-07-01", "2026-07-02"}}}
	ev := mustEvidence(t, run, fakeDiffs{7: 30})
	n := notices.Notice{Title: "Late data", State: notices.StateDraft, Evidence: ev}
	_, n.Body = notices.Compose(ev)
	text := notices.Text(n)
	for _, want := range []string{
		"- events: of 30 days compared, 2 changed as expected (rows +2.0%, 1 new partition, sum(amount) +4.0%), 28 are identical and none changed unexpectedly.",
		"(28 identical partitions left out)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("notice lacks %q:\n%s", want, text)
		}
	}
	var row []string
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == "2026-07-02" {
			row = f
		}
	}
	if diff := cmp.Diff([]string{"events", "2026-07-02", "0", "40", "new", "sum(amount)", "0", "80", "new", "expected"}, row); diff != "" {
		t.Errorf("new partition's row (-want +got):\n%s", diff)
	}
	if ev := mustEvidence(t, run, nil); ev.Compared != nil || strings.Contains(notices.Numbers(ev), "identical partitions left out") {
		t.Errorf("without the saved diff the notice claims a count of identical partitions: %+v", ev.Compared)
	}
}

// The notice's scope runs from the first partition's start to the end of the last at the plan's
// grain — not only for days — and a validation that cannot be read is said, not dropped.
func TestEvidenceScopeAndErrors(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		grain      string
		partitions []string
		from, to   time.Time
	}{
		{"day", []string{"2026-07-10", "2026-07-18"}, at("2026-07-10T00:00:00Z"), at("2026-07-19T00:00:00Z")},
		{"hour", []string{"2026-07-10T22:00", "2026-07-11T03:00"}, at("2026-07-10T22:00:00Z"), at("2026-07-11T04:00:00Z")},
		{"month", []string{"2026-06", "2026-07"}, at("2026-06-01T00:00:00Z"), at("2026-08-01T00:00:00Z")},
	} {
		run := &backfill.Run{ID: 3, Backfill: "b", Tables: []backfill.RunTable{{Table: "t", Version: 2}},
			Plan: &backfill.Plan{Column: "d", Grain: tc.grain, Partitions: tc.partitions}}
		ev := mustEvidence(t, run, nil)
		if !ev.From.Equal(tc.from) || !ev.To.Equal(tc.to) {
			t.Errorf("%s: scope %v..%v, want %v..%v", tc.grain, ev.From, ev.To, tc.from, tc.to)
		}
	}
	run := &backfill.Run{ID: 4, Backfill: "b", Validation: []byte(`{"passed": tru`),
		Tables: []backfill.RunTable{{Table: "t", Version: 2}}, Plan: &backfill.Plan{Column: "d", Grain: "day", Partitions: []string{"2026-07-10"}}}
	ev, err := app.Evidence(context.Background(), run, nil)
	if err == nil || !strings.Contains(err.Error(), "run 4's validation cannot be read") {
		t.Errorf("unreadable validation: %v", err)
	}
	if ev.Backfill != "b" || len(ev.Tables) != 1 {
		t.Errorf("the plan's evidence was lost with the validation: %+v", ev)
	}
}
