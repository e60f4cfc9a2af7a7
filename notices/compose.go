package notices

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"trueup/views"
)

// maxNumbersInText bounds how many changed numbers of one report the plain text names; the
// table under it has them all.
const maxNumbersInText = 3

// Compose writes a notice's title and plain-language body from the evidence: what problem was
// found, what data is rebuilt, when it changes, which reports may change, what was checked and
// who to contact. The body is text with "# " headings and "- " bullets; the numbers themselves
// are laid out as tables from the evidence by each channel (see Numbers).
func Compose(ev Evidence) (title, body string) { return compose(ev, nil) }

// Body is the text a reader sees now. Words trueup wrote (the last revision is the system's)
// are written again for the notice's state, so that after the change goes live, is taken back
// or is withdrawn they still read true ("were rebuilt", "went live on …", not "will be
// rebuilt" and "you will get another message"); words a person wrote are shown as written.
func Body(n Notice) string {
	if n.State == StateDraft || n.State == StateAnnounced || len(n.Revisions) == 0 || n.Revisions[len(n.Revisions)-1].Actor != SystemActor {
		return n.Body
	}
	if _, body := Compose(n.Evidence); body != n.Body {
		return n.Body // not the text trueup composed from this evidence: keep it
	}
	_, body := compose(n.Evidence, &n)
	return body
}

// compose writes the text; n, when given, is the notice whose state the text describes
// (nil: a draft).
func compose(ev Evidence, n *Notice) (title, body string) {
	var b strings.Builder
	section := func(h string) {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("# " + h + "\n")
	}

	section("What happened")
	objective := strings.TrimSpace(ev.Objective)
	if objective == "" {
		objective = "The data team is rebuilding part of the history of these tables."
	}
	b.WriteString(strings.TrimSpace(objective+" "+reasonPhrase(ev.Reason)) + "\n")

	section("What changes")
	b.WriteString(whatChanges(ev, n) + "\n")

	section("When")
	if line := whenNow(n); line != "" {
		b.WriteString(line + "\n")
	} else if ev.PlannedSwap.IsZero() {
		b.WriteString("The date the new data goes live is not set yet. You will get another message when it does.\n")
	} else {
		fmt.Fprintf(&b, "The new data is planned to go live on %s. You will get another message when it does, and if the change is taken back.\n",
			plannedText(ev.PlannedSwap))
	}

	section("Reports that may change")
	b.WriteString(reportsText(ev))

	section("How it was checked")
	b.WriteString(checksText(ev))

	section("Questions")
	contact := ev.Owner
	if contact == "" && strings.Contains(ev.Actor, "@") {
		contact = ev.Actor // an address to write to, not a login such as cli
	}
	if contact == "" {
		contact = "the data team"
	}
	ref := ""
	if ev.Backfill != "" {
		ref = " (backfill " + ev.Backfill
		if ev.RunID != 0 {
			ref += fmt.Sprintf(", run %d", ev.RunID)
		}
		ref += ")"
	}
	fmt.Fprintf(&b, "Contact %s%s.\n", contact, ref)
	return composeTitle(ev), b.String()
}

func allMonths(ps []string) bool { return allOf(ps, "2006-01") }

func allDates(ps []string) bool { return allOf(ps, "2006-01-02") }

// allOf reports whether there are partitions ps and each is written as layout says.
func allOf(ps []string, layout string) bool {
	for _, p := range ps {
		if _, err := time.Parse(layout, p); err != nil {
			return false
		}
	}
	return len(ps) > 0
}

func composeTitle(ev Evidence) string {
	lead := map[string]string{
		"bug":           "Correction",
		"late-data":     "Late data added",
		"new-data":      "New data added",
		"schema-change": "Structure change",
		"migration":     "Migration",
	}[ev.Reason]
	if lead == "" {
		lead = "Change"
	}
	tables := ev.Tables
	if len(tables) > 3 {
		tables = append(append([]string{}, tables[:2]...), fmt.Sprintf("%d more tables", len(ev.Tables)-2))
	}
	t := lead + " to " + andList(tables)
	if len(tables) == 0 {
		t = lead + " to the data"
	}
	if !ev.From.IsZero() && !ev.To.IsZero() {
		t += ", " + dateRange(ev.From, ev.To)
	}
	return t
}

// at says when the notice went to a state: "1 December 2026 at 22:34 UTC".
func at(n *Notice, s State) string {
	if t, ok := n.Transitioned(s); ok {
		return t.At.UTC().Format("2 January 2006 at 15:04 UTC")
	}
	return ""
}

// whenNow says when the change went live or was taken back, for a notice past announcing; ""
// before it goes live (the planned time is said instead).
func whenNow(n *Notice) string {
	if n == nil {
		return ""
	}
	switch n.State {
	case StateCompleted:
		return "The new data went live on " + at(n, StateCompleted) + ". You will get another message if the change is taken back."
	case StateRolledBack:
		if live := at(n, StateCompleted); live != "" {
			return "The new data went live on " + live + " and was taken back on " + at(n, StateRolledBack) + "."
		}
		return "The change was taken back on " + at(n, StateRolledBack) + "."
	case StateWithdrawn:
		return "The change was withdrawn on " + at(n, StateWithdrawn) + ": the new data does not go live as announced."
	}
	return ""
}

func whatChanges(ev Evidence, n *Notice) string {
	what, were := "The tables "+andList(ev.Tables), "were"
	if len(ev.Tables) == 1 {
		what, were = "The table "+ev.Tables[0], "was"
	}
	if len(ev.Tables) == 0 {
		what, were = "The data", "was"
	}
	one, unit := "partition", "partitions"
	if allDates(ev.Partitions) {
		one, unit = "day", "days"
	}
	scope := ""
	switch {
	case !ev.From.IsZero() && !ev.To.IsZero():
		scope = " for " + dateRange(ev.From, ev.To)
		if n := len(ev.Partitions); n > 0 {
			scope += " (" + plural(n, one, unit) + ")"
		}
	case len(ev.Partitions) > 0 && len(ev.Partitions) <= 5:
		scope = " for " + andList(ev.Partitions)
	case len(ev.Partitions) > 5:
		scope = fmt.Sprintf(" for %d %s, %s to %s", len(ev.Partitions), unit, ev.Partitions[0], ev.Partitions[len(ev.Partitions)-1])
	}
	state := StateDraft
	if n != nil {
		state = n.State
	}
	switch state {
	case StateCompleted:
		s := what + " " + were + " rebuilt" + scope + "."
		if scope != "" {
			s += " Data outside this range stayed as it was."
		}
		return s + " The data from before the change can be brought back."
	case StateRolledBack:
		if n != nil && len(n.Evidence.LeftBehind) > 0 {
			// the versions differ there by design: the rows written inside the range while the
			// rebuild was live stayed with it (see the status)
			return what + " " + were + " rebuilt" + scope + ", and the rebuild was taken back: the data is as it was before the change, except the rows written inside this range while the rebuilt data was live, which are no longer visible."
		}
		return what + " " + were + " rebuilt" + scope + ", and the rebuild was taken back: the data is as it was before the change."
	case StateWithdrawn:
		return what + " " + were + " to be rebuilt" + scope + ". The change was withdrawn: the data stays as it is."
	}
	s := what + " will be rebuilt" + scope + "."
	if scope != "" {
		s += " Data outside this range stays as it is."
	}
	s += " The current data stays in place until the new data goes live, and can be brought back."
	return s
}

func reportsText(ev Evidence) string {
	if len(ev.Exposures) == 0 {
		return "No report is registered as reading these tables. Any report or dashboard built on them may show different numbers for the dates above.\n"
	}
	var b strings.Builder
	for _, x := range ev.Exposures {
		name := x.Title
		if len(x.Audience) > 0 {
			name += " (seen by " + andList(x.Audience) + ")"
		}
		switch {
		case x.Error != "":
			// the engine's error is in the evidence for operators; readers get the plain fact
			fmt.Fprintf(&b, "- %s: its numbers could not be compared yet; they will be shown here before the change goes live.\n", name)
		case len(x.Rows) == 0:
			fmt.Fprintf(&b, "- %s: no number changes.\n", name)
		default:
			var moves []string
			for _, r := range x.Rows[:min(len(x.Rows), maxNumbersInText)] {
				moves = append(moves, moveText(r))
			}
			line := "- " + name + ": " + strings.Join(moves, "; ")
			if more := len(x.Rows) - maxNumbersInText; more > 0 {
				line += fmt.Sprintf("; and %s", plural(more, "more number", "more numbers"))
			}
			fmt.Fprintf(&b, "%s.\n", line)
		}
	}
	return b.String()
}

// moveText says one number's move: "July 2026 revenue 1.92M → 2.01M (+4.7%)".
func moveText(r ExposureRow) string {
	what := strings.TrimSpace(r.Label + " " + r.Column)
	switch {
	case r.Before == nil:
		return fmt.Sprintf("%s appears: %s", what, Compact(*r.After))
	case r.After == nil:
		return fmt.Sprintf("%s disappears (was %s)", what, Compact(*r.Before))
	}
	s := fmt.Sprintf("%s %s → %s", what, Compact(*r.Before), Compact(*r.After))
	if p, ok := r.PctChange(); ok {
		s += " (" + Pct(p) + ")"
	}
	return s
}

func checksText(ev Evidence) string {
	var lines []string
	if ev.Override != nil {
		lines = append(lines, fmt.Sprintf("Validation did not pass, and %s chose to publish anyway on %s: %q.",
			ev.Override.By, day(ev.Override.At), ev.Override.Reason))
	}
	if n := len(ev.Rules); n > 0 {
		var failed []string
		for _, r := range ev.Rules {
			if !r.Passed {
				f := r.Rule
				if r.Message != "" {
					f += " (" + r.Message + ")"
				}
				failed = append(failed, f)
			}
		}
		if len(failed) == 0 {
			lines = append(lines, fmt.Sprintf("All %s passed on the new data.", plural(n, "data-quality rule", "data-quality rules")))
		} else {
			lines = append(lines, fmt.Sprintf("%d of %s passed on the new data; failed: %s.", n-len(failed), plural(n, "data-quality rule", "data-quality rules"), strings.Join(failed, "; ")))
		}
	}
	lines = append(lines, diffLines(ev)...)
	for _, x := range ev.Expectations {
		verdict := "met"
		if !x.Met {
			verdict = "NOT met"
		}
		lines = append(lines, fmt.Sprintf("Expected change: %s: %s.", x.Text, verdict))
	}
	if len(lines) == 0 {
		return "The new data has not been checked yet. This notice will show the results of the checks before it is announced.\n"
	}
	return "- " + strings.Join(lines, "\n- ") + "\n"
}

// Text is the whole notice as plain text: the title, its state, the body, then the numbers.
// It is the text part of the email and what `trueup notice show` prints.
func Text(n Notice) string {
	var b strings.Builder
	b.WriteString(n.Title + "\n")
	b.WriteString(strings.Repeat("=", len([]rune(n.Title))) + "\n\n")
	b.WriteString(stateLine(n) + "\n\n")
	b.WriteString(strings.TrimRight(Body(n), "\n") + "\n")
	if nums := Numbers(n.Evidence); nums != "" {
		b.WriteString("\n# Numbers\n\n" + nums)
	}
	return b.String()
}

// StateLine says where the notice is, in words: "Status: announced on 3 August 2026 at …".
func StateLine(n Notice) string { return stateLine(n) }

func stateLine(n Notice) string {
	at := func(s State) string {
		if t, ok := n.Transitioned(s); ok {
			return " on " + t.At.UTC().Format("2 January 2006 at 15:04 UTC")
		}
		return ""
	}
	switch n.State {
	case StateDraft:
		if p := n.Evidence.PlannedSwap; !p.IsZero() {
			return "Status: draft, not sent yet. The new data is planned to go live on " + plannedText(p) + "."
		}
		return "Status: draft, not sent yet."
	case StateAnnounced:
		if p := n.Evidence.PlannedSwap; !p.IsZero() {
			return "Status: announced" + at(StateAnnounced) + ". The change has not gone live yet; it is planned for " + plannedText(p) + "."
		}
		return "Status: announced" + at(StateAnnounced) + ". The change has not gone live yet."
	case StateCompleted:
		t, _ := n.Transitioned(StateCompleted)
		if t.From == StateRolledBack {
			// a rollback (or a swap) made the change live again; the reason is the operator's
			// words, as on the rolled-back line
			return withReason("Status: completed. The new data went live again"+at(StateCompleted)+
				", after it had been rolled back"+at(StateRolledBack)+".", t.Reason)
		}
		s := "Status: completed. The new data went live" + at(StateCompleted)
		if t.From == StateWithdrawn {
			s += ", although the change had been withdrawn" + at(StateWithdrawn)
		}
		s += "."
		if t.Reason != "" {
			s += " " + sentence(t.Reason)
		}
		return s
	case StateRolledBack:
		t, _ := n.Transitioned(StateRolledBack)
		return withReason("Status: rolled back"+at(StateRolledBack)+". The previous data is live again."+leftBehindText(n.Evidence.LeftBehind), t.Reason)
	case StateWithdrawn:
		t, _ := n.Transitioned(StateWithdrawn)
		return withReason("Status: withdrawn"+at(StateWithdrawn)+". The change will not happen as announced.", t.Reason)
	}
	return "Status: " + string(n.State) + "."
}

// leftBehindText says which rows written since the change went live a rollback left out of
// sight, and what would publish them: " Rows written since the change went live are no longer
// visible to readers: orders 2026-07-12 +2 rows (kept in orders__v2). …", "" when none.
func leftBehindText(left []LeftBehind) string {
	if len(left) == 0 {
		return ""
	}
	var rows, swaps, catchUps []string
	for _, l := range left {
		rows = append(rows, fmt.Sprintf("%s %s (kept in %s)", l.Table, views.CarriedList(l.Partitions), views.Physical(l.Table, l.Version)))
		swaps = append(swaps, fmt.Sprintf("trueup swap %s --to v%d", l.Table, l.Version))
		catchUps = append(catchUps, "trueup catch-up "+l.Table)
	}
	return fmt.Sprintf(" Rows written since the change went live are no longer visible to readers: %s. A new swap (%s) would publish them; %s lists them.",
		strings.Join(rows, "; "), strings.Join(swaps, ", "), strings.Join(catchUps, ", "))
}

// withReason adds the operator's reason to a status line, in their words, when they gave one.
func withReason(status, reason string) string {
	if reason == "" {
		return status
	}
	return status + " Reason: " + reason
}

// sentence makes a reason someone typed read as a sentence: a capital first letter and a full
// stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	r, size := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[size:]
	if !strings.ContainsAny(s[len(s)-1:], ".!?") {
		s += "."
	}
	return s
}
