package notices_test

import (
	"strings"
	"testing"
	"time"

	"trueup/notices"
)

// TestBodyReadsTrueInEveryState: the text trueup composed says what happened once the change
// went live or was taken back; a person's text is shown as written.
func TestBodyReadsTrueInEveryState(t *testing.T) {
	ev := demoEvidence()
	title, body := notices.Compose(ev)
	at := time.Date(2026, 8, 4, 9, 0, 0, 0, time.UTC)
	n := notices.Notice{ID: 1, Title: title, Body: body, Evidence: ev,
		Revisions:   []notices.Revision{{N: 1, Title: title, Body: body, Actor: notices.SystemActor}},
		Transitions: []notices.Transition{{To: notices.StateDraft, At: at}, {From: notices.StateDraft, To: notices.StateAnnounced, At: at.Add(time.Hour)}}}
	for _, c := range []struct {
		name       string
		state      notices.State
		then       []notices.Transition
		want, gone []string
	}{
		{"announced", notices.StateAnnounced, nil, []string{"will be rebuilt", "You will get another message"}, nil},
		{"completed", notices.StateCompleted,
			[]notices.Transition{{From: notices.StateAnnounced, To: notices.StateCompleted, At: at.Add(2 * time.Hour)}},
			[]string{"rebuilt for", "went live on 4 August 2026 at 11:00 UTC", "if the change is taken back"},
			[]string{"will be rebuilt", "not set yet", "until the new data goes live"}},
		{"rolled_back", notices.StateRolledBack,
			[]notices.Transition{{From: notices.StateAnnounced, To: notices.StateCompleted, At: at.Add(2 * time.Hour)},
				{From: notices.StateCompleted, To: notices.StateRolledBack, At: at.Add(3 * time.Hour)}},
			[]string{"the rebuild was taken back", "went live on 4 August 2026 at 11:00 UTC and was taken back on 4 August 2026 at 12:00 UTC"},
			[]string{"will be rebuilt", "You will get another message", "not set yet"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := n
			m.State, m.Transitions = c.state, append(append([]notices.Transition{}, n.Transitions...), c.then...)
			got := notices.Body(m)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("the text does not say %q:\n%s", w, got)
				}
			}
			for _, w := range c.gone {
				if strings.Contains(got, w) {
					t.Errorf("the text still says %q:\n%s", w, got)
				}
			}
		})
	}
	t.Run("a_persons_words_are_kept", func(t *testing.T) {
		m := n
		m.State, m.Body = notices.StateRolledBack, "We will rebuild orders."
		m.Revisions = append(m.Revisions, notices.Revision{N: 2, Body: m.Body, Actor: "alice"})
		if got := notices.Body(m); got != "We will rebuild orders." {
			t.Errorf("edited text became %q", got)
		}
	})
}

// TestBodyCountsInTheTablesOwnUnits: one day rebuilt is "1 day", a downstream table of months
// is counted in months ("of 2 days compared" for a monthly table), and a login is no contact
// ("Contact cli").
func TestBodyCountsInTheTablesOwnUnits(t *testing.T) {
	ev := notices.Evidence{Backfill: "fix", RunID: 3, Reason: "bug", Actor: "cli", Tables: []string{"orders", "monthly"},
		Partitions: []string{"2026-11-10"}, From: time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC),
		Diff: []notices.PartitionDiff{
			{Table: "orders", Partition: "2026-11-10", OldCount: 100, NewCount: 100, Verdict: notices.VerdictExpected},
			{Table: "monthly", Partition: "2026-10", OldCount: 1, NewCount: 1, Verdict: notices.VerdictIdentical},
			{Table: "monthly", Partition: "2026-11", OldCount: 1, NewCount: 1, Verdict: notices.VerdictExpected},
		},
		Compared: []notices.TableComparison{{Table: "orders", Partitions: 1}, {Table: "monthly", Partitions: 2, Identical: 1}}}
	_, body := notices.Compose(ev)
	for _, want := range []string{"for 10 November 2026 (1 day)", "orders: of 1 day compared", "monthly: of 2 months compared",
		"Contact the data team (backfill fix, run 3)."} {
		if !strings.Contains(body, want) {
			t.Errorf("the body lacks %q:\n%s", want, body)
		}
	}
}
