package notices

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"trueup/fault"
	"trueup/ledger"
)

// Announce sends a draft to its subscribers before the change goes live. Announcing a notice
// that is not a draft is ErrConflict and sends nothing.
func (s *Service) Announce(ctx context.Context, id int64, actor string) (Notice, error) {
	return s.transition(ctx, id, step{actor: actor, to: StateAnnounced, from: []State{StateDraft}})
}

// Withdraw calls a notice off: the change will not happen as announced. Subscribers who were
// told hear that it is withdrawn; a draft is withdrawn silently.
func (s *Service) Withdraw(ctx context.Context, id int64, actor, reason string) (Notice, error) {
	return s.transition(ctx, id, step{actor: actor, reason: reason, to: StateWithdrawn, from: []State{StateDraft, StateAnnounced}})
}

// RunCancelled withdraws the draft notice of run runID of backfill, cancelled by by ("": the
// process building it shut down): the change will not go live as drafted. Nobody was told of a
// draft, so nobody is sent anything. A notice already announced stays as it is: its readers
// were told the change is coming, and a cancel is often a pause before a resume; whether the
// change is off is the operator's to say (Withdraw). It reports the notice withdrawn, if any.
func (s *Service) RunCancelled(ctx context.Context, backfill string, runID int64, by string) (*Notice, error) {
	n, err := s.ofRun(ctx, backfill, runID)
	if err != nil || n == nil || n.State != StateDraft {
		return nil, err
	}
	reason := fmt.Sprintf("Run %d of backfill %s was cancelled by %s.", runID, backfill, by)
	if by == "" {
		reason = fmt.Sprintf("Run %d of backfill %s was stopped when trueup shut down.", runID, backfill)
	}
	done, err := s.transition(ctx, n.ID, step{actor: by, reason: reason, to: StateWithdrawn, from: []State{StateDraft}})
	return &done, err
}

// RunResumed makes the notice of run runID of backfill, resumed by by, a draft again when it was
// withdrawn as a draft (RunCancelled, or by hand before anyone was told): the change is coming
// after all, and the run's validation refreshes the draft. A notice withdrawn after it was
// announced stays withdrawn: its readers were told the change is off, and hear again only when
// it goes live. It reports the notice reopened, if any.
func (s *Service) RunResumed(ctx context.Context, backfill string, runID int64, by string) (*Notice, error) {
	n, err := s.ofRun(ctx, backfill, runID)
	if err != nil || n == nil || n.State != StateWithdrawn {
		return nil, err
	}
	if t, _ := n.Transitioned(StateWithdrawn); t.From != StateDraft {
		return nil, nil
	}
	done, err := s.transition(ctx, n.ID, step{actor: by, reason: fmt.Sprintf("Run %d of backfill %s was resumed by %s.", runID, backfill, actorOr(by)),
		to: StateDraft, from: []State{StateWithdrawn}})
	return &done, err
}

// ofRun is the notice of run runID of backfill, nil when it has none.
func (s *Service) ofRun(ctx context.Context, backfill string, runID int64) (*Notice, error) {
	var id int64
	err := s.l.DB().QueryRowContext(ctx, `SELECT id FROM notices WHERE backfill = ? AND run_id = ? ORDER BY id LIMIT 1`, backfill, runID).Scan(&id)
	if errors.Is(err, dbsql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("notices: the notice of run %d: %w", runID, err)
	}
	n, err := s.Get(ctx, id)
	return &n, err
}

// MarkCompleted completes one notice by hand, for a change published while the notices did
// not hear of it (views tells them on every swap; this is the way back when that failed).
func (s *Service) MarkCompleted(ctx context.Context, id int64, actor, reason string) (Notice, error) {
	return s.transition(ctx, id, step{actor: actor, reason: reason, to: StateCompleted, from: completable})
}

// completable are the states a notice completes from when its versions go live: a draft nobody
// announced (its subscribers still hear of the change), an announced one, one rolled back whose
// versions go live again, and one withdrawn whose versions went live anyway (the readers told
// it would not happen must hear that it did).
var completable = []State{StateDraft, StateAnnounced, StateRolledBack, StateWithdrawn}

// step is one lifecycle transition to make.
type step struct {
	actor, reason string
	to            State
	from          []State
	// override, on a completion, is the gate override the publish carried: it is kept on the
	// notice's evidence.
	override *Override
	// left, on a rollback, is what it left behind in the notice's versions: kept on the
	// notice's evidence (replacing what an earlier rollback left).
	left []LeftBehind
}

// Moved is what a swap or a rollback moved: for a swap the versions that went live, for a
// rollback the versions that were taken back.
type Moved struct {
	Target   string
	Backfill string
	RunID    int64
	Versions map[string]int // table → version
	Actor    string
	// Reason is recorded on the completed transition, e.g. a gate override.
	Reason string
	// Override is the gate override of a swap published past a failed validation.
	Override *Override
}

// Complete marks the notices of the versions that went live as completed and tells their
// subscribers (see completable for the states they complete from).
func (s *Service) Complete(ctx context.Context, m Moved) ([]Notice, error) {
	return s.move(ctx, m, step{reason: m.Reason, to: StateCompleted, from: completable, override: m.Override}, nil)
}

// RollBack marks the notices of the versions taken back as rolled back, with the reason, and
// tells their subscribers. A notice is about its change as a whole: it rolls back only once none
// of its tables is on the notice's version any more. After `swap orders --to v1`, while
// daily_revenue and the others of the same notice still read v2, the notice stays completed:
// "the previous data is live again" would be false for most of what its readers were told, and
// the notice rolls back when the last of its tables leaves its version (each rollback or swap
// back is checked against the ledger; see foresee).
func (s *Service) RollBack(ctx context.Context, m Moved, reason string) ([]Notice, error) {
	partlyLive := func(ctx context.Context, n Notice) (bool, error) {
		live, err := s.onItsVersion(ctx, n, m.Target, nil)
		return len(live) > 0, err
	}
	return s.move(ctx, m, step{reason: reason, to: StateRolledBack, from: []State{StateAnnounced, StateCompleted}}, partlyLive)
}

// move makes the transitions moving reckons.
func (s *Service) move(ctx context.Context, m Moved, st step, skip func(context.Context, Notice) (bool, error)) ([]Notice, error) {
	plans, err := s.moving(ctx, m, st, skip)
	if err != nil {
		return nil, err
	}
	var out []Notice
	for _, pl := range plans {
		done, err := s.transition(ctx, pl.n.ID, pl.st)
		if err != nil {
			return out, err
		}
		out = append(out, done)
	}
	return out, nil
}

// moving lists the notices m moves by st: those in one of st.from that m matches, less those
// skip picks.
func (s *Service) moving(ctx context.Context, m Moved, st step, skip func(context.Context, Notice) (bool, error)) ([]planned, error) {
	all, err := listNotices(ctx, s.l.DB())
	if err != nil {
		return nil, err
	}
	st.actor = m.Actor
	var out []planned
	for _, n := range all {
		if !slices.Contains(st.from, n.State) || !m.matches(n) {
			continue
		}
		if skip != nil {
			skipped, err := skip(ctx, n)
			if err != nil {
				return out, err
			}
			if skipped {
				continue
			}
		}
		out = append(out, planned{n: n, st: st})
	}
	return out, nil
}

func (m Moved) matches(n Notice) bool {
	if m.Target != "" && n.Target != "" && m.Target != n.Target {
		return false
	}
	if m.RunID != 0 && n.RunID == m.RunID && n.Backfill == m.Backfill {
		return true
	}
	for t, v := range m.Versions {
		if nv, ok := n.Versions[t]; ok && nv == v {
			return true
		}
	}
	return false
}

// transition moves notice id to state st.to from one of st.from, records it with its actor and
// reason, and enqueues its deliveries, all in one ledger transaction.
func (s *Service) transition(ctx context.Context, id int64, st step) (Notice, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	actor, reason, to, from := actorOr(st.actor), st.reason, st.to, st.from
	action := "notice." + map[State]string{StateAnnounced: "announce", StateWithdrawn: "withdraw",
		StateCompleted: "complete", StateRolledBack: "rollback", StateDraft: "reopen"}[to]
	enqueued := 0
	err := s.l.Tx(ctx, func(tx *dbsql.Tx) error {
		n, err := getNotice(ctx, tx, id)
		if err != nil {
			return err
		}
		if !slices.Contains(from, n.State) {
			if n.State == to {
				t, _ := n.Transitioned(to)
				return fault.New(fault.Conflict, "Notice %d is already %s (by %s at %s); nothing was sent again.",
					id, to, t.Actor, t.At.Format(time.RFC3339))
			}
			return fault.New(fault.Conflict, "Notice %d is %s: it cannot become %s.", id, n.State, to)
		}
		now := s.l.Now()
		prev := n.State
		if err := setState(ctx, tx, id, to, now); err != nil {
			return err
		}
		if err := insertTransition(ctx, tx, id, prev, to, actor, reason, now); err != nil {
			return err
		}
		n.State, n.UpdatedAt = to, now
		n.Transitions = append(n.Transitions, Transition{From: prev, To: to, At: now, Actor: actor, Reason: reason})
		if st.override != nil && to == StateCompleted || to == StateRolledBack && (st.left != nil || n.Evidence.LeftBehind != nil) {
			if to == StateCompleted {
				n.Evidence.Override = st.override
			} else {
				n.Evidence.LeftBehind = st.left
			}
			if _, err := tx.ExecContext(ctx, `UPDATE notices SET evidence = ? WHERE id = ?`, jsonText(n.Evidence), id); err != nil {
				return err
			}
		}
		if sends(prev, to) {
			if enqueued, err = s.notify(ctx, tx, n, now); err != nil {
				return fmt.Errorf("enqueue: %w", err)
			}
		}
		_, err = s.l.AuditTx(ctx, tx, ledger.Entry{Actor: actor, Action: action, Target: noticeTarget(id),
			Params:  map[string]any{"from": string(prev), "to": string(to), "reason": reason, "deliveries": enqueued},
			Outcome: ledger.OutcomeOK})
		return err
	})
	if err != nil {
		s.l.Audit(ctx, ledger.Entry{Actor: actor, Action: action, Target: noticeTarget(id), Outcome: ledger.OutcomeRefused, Detail: err.Error()})
		return Notice{}, fmt.Errorf("notices: %w", err)
	}
	if enqueued > 0 {
		s.outbox.Kick()
	}
	return s.Get(ctx, id)
}

// sends reports whether a transition is news to subscribers: withdrawing a draft or rolling back
// something nobody was told of is not.
func sends(from, to State) bool {
	switch to {
	case StateAnnounced, StateCompleted:
		return true
	case StateWithdrawn:
		return from == StateAnnounced
	case StateRolledBack:
		return from != StateDraft
	}
	return false
}

// notify enqueues one delivery per recipient of n's new state: everyone told before plus the
// current subscribers of its tables and exposures (for a withdrawal, only those told before).
func (s *Service) notify(ctx context.Context, tx *dbsql.Tx, n Notice, now time.Time) (int, error) {
	seq, err := transitionCount(ctx, tx, n.ID)
	if err != nil {
		return 0, err
	}
	tokens := map[string]string{}
	var recipients []string
	for _, r := range n.Recipients {
		tokens[r.ID] = r.Token
		recipients = append(recipients, r.ID)
	}
	if n.State != StateWithdrawn {
		var exposures []string
		for _, x := range n.Evidence.Exposures {
			exposures = append(exposures, x.Exposure)
		}
		for _, x := range Reading(s.opt.Exposures, n.Tables) {
			exposures = append(exposures, x.Name)
		}
		subs, err := s.outbox.subscribers(ctx, tx, n.Tables, exposures, false)
		if err != nil {
			return 0, err
		}
		for _, r := range subs {
			if _, ok := tokens[r]; ok {
				continue
			}
			tokens[r] = newToken()
			if _, err := tx.ExecContext(ctx, `INSERT INTO notice_recipients (notice_id, recipient, token, added_at) VALUES (?, ?, ?, ?)`,
				n.ID, r, tokens[r], now); err != nil {
				return 0, err
			}
			recipients = append(recipients, r)
			n.Recipients = append(n.Recipients, Recipient{ID: r, Token: tokens[r], AddedAt: now})
		}
	}
	event := fmt.Sprintf("notice:%d:%d:%s", n.ID, seq, n.State)
	added := 0
	for _, r := range recipients {
		m := s.message(n, event, r, tokens[r])
		ok, err := s.outbox.enqueueTx(ctx, tx, m, r)
		if err != nil {
			return added, err
		}
		if ok {
			added++
		}
	}
	return added, nil
}

// Payload is the JSON body of a notice webhook.
type Payload struct {
	Event string `json:"event"`
	Headline
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
	URL    string    `json:"url"`
	AckURL string    `json:"ack_url"`
}

var subjectLead = map[State]string{
	StateAnnounced:  "Upcoming data change",
	StateCompleted:  "Data change now live",
	StateRolledBack: "Data change taken back",
	StateWithdrawn:  "Data change withdrawn",
}

func (s *Service) message(n Notice, event, recipient, token string) Message {
	page, ack := s.URL(n.ID), s.AckURL(n.ID, token)
	last := n.Transitions[len(n.Transitions)-1]
	text := Text(n) + "\n--\nRead the notice: " + page + "\nLet us know you have read it: " + ack + "\n"
	partitions := n.Partitions()
	if partitions == nil {
		partitions = []string{}
	}
	return Message{
		Event:    event,
		To:       []string{recipient},
		NoticeID: n.ID,
		Subject:  subjectLead[n.State] + ": " + n.Title,
		Text:     text,
		HTML:     HTML(n, page, ack),
		Card:     noticeCard(n, page),
		Payload: Payload{Event: event, Headline: Headline{ID: n.ID, State: n.State, Title: n.Title, Body: Body(n), Text: Text(n),
			Tables: n.Tables, Partitions: partitions}, Reason: last.Reason, At: last.At, URL: page, AckURL: ack},
	}
}

// noticeCard is the notice as a chat message: the title, its state, a line per table that
// changes, the reports' numbers before and after, the link.
func noticeCard(n Notice, page string) *Card {
	c := &Card{Title: n.Title, Status: strings.TrimPrefix(StateLine(n), "Status: "), Numbers: ReportRows(n.Evidence), URL: page, Link: "Read the notice"}
	for _, t := range ChartTables(n.Evidence.Diff) {
		if rows := changedPartitions(tableRows(n.Evidence.Diff, t)); len(rows) > 0 {
			c.Lines = append(c.Lines, t+": "+ChangeSummary(rows)+" over "+partitionCount(n.Evidence, rows, len(rows)))
		}
	}
	return c
}
