package notices_test

import (
	"context"
	"strings"
	"testing"

	"trueup/internal/golden"
	"trueup/ledger"
	"trueup/ledger/ledgertest"
	"trueup/notices"
)

func TestDraftFromDemoEvidence(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	s := notices.New(ledgertest.Open(t, ledger.WithClock(c.Now)), notices.Options{})
	n, err := s.Draft(ctx, demoEvidence())
	if err != nil {
		t.Fatal(err)
	}
	if n.State != notices.StateDraft || n.Revision != 1 || len(n.Transitions) != 1 {
		t.Errorf("state %s revision %d transitions %d, want a fresh draft", n.State, n.Revision, len(n.Transitions))
	}
	golden.Check(t, "draft.golden.txt", notices.Text(n))
	golden.Check(t, "draft.golden.html", notices.HTML(n, "https://trueup.example.com/notices/1", "https://trueup.example.com/notices/1/ack/TOKEN"))

	t.Run("plain_language_comes_before_numbers", func(t *testing.T) {
		text := notices.Text(n)
		for _, want := range []string{"# What happened", "# What changes", "# When", "# Reports that may change", "# How it was checked", "# Questions", "# Numbers"} {
			if !strings.Contains(text, want) {
				t.Errorf("draft lacks %q", want)
			}
		}
		if strings.Index(text, "# Numbers") < strings.Index(text, "# Questions") {
			t.Error("numbers come before the plain-language text")
		}
		if !strings.Contains(text, "July 2026 revenue 1.92M → 2.01M (+4.7%)") {
			t.Error("the board revenue move is not said in words")
		}
	})
}

func TestDraftWithoutValidationSaysSo(t *testing.T) {
	ev := notices.Evidence{Backfill: "late_events", Reason: "late-data", Tables: []string{"events"}, Partitions: []string{"2026-07-01"},
		Exposures: []notices.ExposureChange{{Exposure: "sessions", Title: "Sessions by day", Error: "Catalog Error: Table with name events__v2 does not exist!"}}}
	_, body := notices.Compose(ev)
	if strings.Contains(body, "Catalog Error") {
		t.Errorf("an engine error reached the readers:\n%s", body)
	}
	if _, none := notices.Compose(notices.Evidence{Tables: []string{"events"}}); !strings.Contains(none, "No report is registered as reading these tables.") {
		t.Errorf("no exposures:\n%s", none)
	}
	for _, want := range []string{
		"The new data has not been checked yet.",
		"The date the new data goes live is not set yet.",
		"Sessions by day: its numbers could not be compared yet",
		"This takes in data that arrived late.",
		"Contact the data team (backfill late_events).",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
}

func TestDraftShowsOverrideAndUnexpectedChanges(t *testing.T) {
	ev := demoEvidence()
	ev.Override = &notices.Override{By: "bob", Reason: "the CFO needs July numbers today", At: ev.PlannedSwap}
	ev.Diff[25].Verdict, ev.Diff[25].NewCount, ev.Diff[25].PctChange = notices.VerdictUnexpected, ev.Diff[25].OldCount-21, -1.0
	ev.Rules[1].Passed, ev.Rules[1].Message = false, "3 duplicate order_id"
	_, body := notices.Compose(ev)
	for _, want := range []string{
		`Validation did not pass, and bob chose to publish anyway on 4 August 2026: "the CFO needs July numbers today".`,
		"2 of 3 data-quality rules passed on the new data; failed: order_id_unique (3 duplicate order_id).",
		"1 changed in a way that was NOT expected (2026-07-26 -1.0%)",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
}

func TestRedraft(t *testing.T) {
	ctx := context.Background()
	s := notices.New(ledgertest.Open(t, ledger.WithClock(newClock().Now)), notices.Options{})
	early := demoEvidence()
	early.Rules, early.Diff, early.Compared, early.Expectations, early.Exposures = nil, nil, nil, nil, nil
	first, err := s.Draft(ctx, early)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(first.Body, "has not been checked yet") {
		t.Fatalf("early draft claims checks: %s", first.Body)
	}
	again, err := s.Draft(ctx, demoEvidence())
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID || again.Revision != 2 || !strings.Contains(again.Body, "All 3 data-quality rules passed") {
		t.Errorf("redraft: id %d revision %d body %s", again.ID, again.Revision, again.Body)
	}
	edited, err := s.Edit(ctx, first.ID, "alice", "Corrected July revenue", "# What happened\nWe fixed it.\n")
	if err != nil {
		t.Fatal(err)
	}
	if edited.Revision != 3 || len(edited.Revisions) != 3 || edited.Revisions[2].Actor != "alice" {
		t.Errorf("edit: revision %d, revisions %+v", edited.Revision, edited.Revisions)
	}
	kept, err := s.Draft(ctx, demoEvidence())
	if err != nil {
		t.Fatal(err)
	}
	if kept.Title != "Corrected July revenue" || kept.Revision != 3 {
		t.Errorf("a redraft overwrote the operator's text: %q revision %d", kept.Title, kept.Revision)
	}
	if got := len(kept.Revisions); got != 3 || kept.Revisions[0].Actor != notices.SystemActor || !strings.Contains(kept.Revisions[0].Body, "not been checked") {
		t.Errorf("old revisions not kept: %+v", kept.Revisions)
	}
}
