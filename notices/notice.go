// Package notices tells the people who rely on a table before a change to it reaches them.
//
// It owns exposures (the report queries stakeholders see, evaluated on the live and the new
// version of a table), notice drafting from the evidence a backfill already holds, the notice
// lifecycle (draft → announced → completed | rolled-back | withdrawn, every step timestamped
// and every edit kept as a revision), the subscribers of tables and exposures, and delivery
// through a durable outbox in the ledger to webhooks and email, with an acknowledgement link per
// recipient. Monitor alerts go through the same outbox (Outbox.Enqueue).
package notices

import (
	"time"
	"trueup/fault"
)

// Errors carry their kind (fault) and the sentence the reader sees: a transition the notice's
// state does not allow (announcing twice) is a fault.Conflict, input that cannot be used (an
// empty title, a planned time in the past) a fault.Invalid, a notice or link that does not exist
// a fault.NotFound. Callers ask with errors.Is(err, fault.ErrConflict) and the like.

// NotFound is the error of a notice id there is none of. The public pages answer it for a draft
// too, so a reader cannot tell a draft from a notice that does not exist: it does not say the id.
func NotFound() error { return fault.New(fault.NotFound, "There is no such notice.") }

// badLink is an acknowledgement link that is not one of its notice's, or whose notice does not
// exist: the two are not told apart, so a guessed link does not say which notices exist.
func badLink() error {
	return fault.New(fault.NotFound, "There is no such notice, or the link is not valid.")
}

// State is where a notice is in its lifecycle.
type State string

// The lifecycle: draft → announced → completed | rolled-back | withdrawn. A notice completes
// whenever its versions go live, from any state but completed (see Service.Complete).
const (
	StateDraft      State = "draft"
	StateAnnounced  State = "announced"
	StateCompleted  State = "completed"
	StateRolledBack State = "rolled-back"
	StateWithdrawn  State = "withdrawn"
)

// States lists every state in lifecycle order.
func States() []State {
	return []State{StateDraft, StateAnnounced, StateCompleted, StateRolledBack, StateWithdrawn}
}

// Valid reports whether s is a known state.
func (s State) Valid() bool {
	for _, x := range States() {
		if s == x {
			return true
		}
	}
	return false
}

// Final reports whether a notice in state s is over unless its versions go live after all (a
// rolled-back or withdrawn notice then completes: its readers hear that the change is live).
func (s State) Final() bool { return s == StateRolledBack || s == StateWithdrawn }

// Notice is one stakeholder change notice.
type Notice struct {
	ID       int64
	State    State
	Title    string
	Body     string // plain-language text, the current revision; numbers come from Evidence
	Revision int
	Target   string
	Backfill string
	RunID    int64
	Tables   []string
	// Versions are the new versions of the tables (table → N) whose swap completes the notice.
	Versions    map[string]int
	Evidence    Evidence
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Transitions []Transition
	Revisions   []Revision
	Recipients  []Recipient
}

// Partitions lists the partitions the notice's change rebuilds.
func (n Notice) Partitions() []string { return n.Evidence.Partitions }

// Transition is one lifecycle step of a notice.
type Transition struct {
	From   State // "" for the draft's creation
	To     State
	At     time.Time
	Actor  string
	Reason string
}

// Revision is one version of a notice's text. Revision 1 is the draft trueup wrote.
type Revision struct {
	N     int
	Title string
	Body  string
	At    time.Time
	Actor string
}

// Recipient is someone an announced notice went to, with their acknowledgement.
type Recipient struct {
	ID      string // webhook:NAME or email:ADDRESS
	Token   string // the secret part of the acknowledgement link
	AddedAt time.Time
	AckedAt time.Time // zero until acknowledged
}

// Acked reports whether the recipient acknowledged the notice.
func (r Recipient) Acked() bool { return !r.AckedAt.IsZero() }

// Transitioned returns when the notice entered state s (zero when it never did).
func (n Notice) Transitioned(s State) (Transition, bool) {
	for i := len(n.Transitions) - 1; i >= 0; i-- {
		if n.Transitions[i].To == s {
			return n.Transitions[i], true
		}
	}
	return Transition{}, false
}

// HasTable reports whether the notice is about table.
func (n Notice) HasTable(table string) bool {
	for _, t := range n.Tables {
		if t == table {
			return true
		}
	}
	return false
}
