package notices

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	dbsql "database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"trueup/fault"
	"trueup/ledger"
)

// SystemActor is the actor of what trueup does by itself: the first draft, automatic transitions.
const SystemActor = "trueup"

// Options configure a Service.
type Options struct {
	Channels Channels
	// Outbox delivers; default NewOutbox(l, Channels, OutboxOptions{}).
	Outbox *Outbox
	// Exposures and Targets let Draft evaluate the reports that read the changed tables when the
	// evidence brings none.
	Exposures []*Exposure
	Targets   Targets
	// KnowsTable reports whether trueup keeps a logical table of that name (on any target):
	// a subscription may follow only such a table, and only a report of Exposures. Nil: what a
	// subscription follows is not checked against the project (a service of its own, in tests).
	KnowsTable func(ctx context.Context, name string) (bool, error)
}

// Service drafts notices, moves them through their lifecycle and hands their deliveries to
// the outbox, each transition and its deliveries in one ledger transaction.
type Service struct {
	l      *ledger.Ledger
	opt    Options
	outbox *Outbox
	mu     sync.Mutex // one transition at a time: state checks and writes do not interleave
}

// New returns the notice service over an open ledger.
func New(l *ledger.Ledger, opt Options) *Service {
	ob := opt.Outbox
	if ob == nil {
		ob = NewOutbox(l, opt.Channels, OutboxOptions{})
	}
	return &Service{l: l, opt: opt, outbox: ob}
}

// Outbox is the service's outbox, for the delivery worker and for other senders (monitor alerts).
func (s *Service) Outbox() *Outbox { return s.outbox }

// Exposures are the exposures the service knows.
func (s *Service) Exposures() []*Exposure { return s.opt.Exposures }

// URL is the public page of a notice (relative when no public_url is configured).
func (s *Service) URL(id int64) string {
	return strings.TrimRight(s.opt.Channels.PublicURL, "/") + "/notices/" + strconv.FormatInt(id, 10)
}

// AckURL is a recipient's acknowledgement link.
func (s *Service) AckURL(id int64, token string) string {
	return s.URL(id) + "/ack/" + url.PathEscape(token)
}

// Draft writes a notice from the evidence and stores it as a draft. For a backfill run that
// already has a notice, it refreshes that notice while it is still a draft: the evidence is
// replaced, and the text too unless someone has edited it. A notice past draft is returned as
// it is: what was announced is not changed behind its readers' backs.
func (s *Service) Draft(ctx context.Context, ev Evidence) (Notice, error) {
	if len(ev.Exposures) == 0 && len(ev.Versions) > 0 && s.opt.Targets != nil {
		ev.Exposures = EvaluateExposures(ctx, s.opt.Exposures, s.opt.Targets, ev.Versions)
	}
	title, body := Compose(ev)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.l.Now()
	var id int64
	err := s.l.Tx(ctx, func(tx *dbsql.Tx) error {
		if ev.RunID != 0 {
			err := tx.QueryRowContext(ctx, `SELECT id FROM notices WHERE backfill = ? AND run_id = ? ORDER BY id LIMIT 1`,
				ev.Backfill, ev.RunID).Scan(&id)
			if err == nil {
				return s.redraft(ctx, tx, id, ev, title, body, now)
			}
			if !errors.Is(err, dbsql.ErrNoRows) {
				return err
			}
		}
		n := Notice{Title: title, Body: body, Target: ev.Target, Backfill: ev.Backfill, RunID: ev.RunID,
			Tables: ev.Tables, Versions: ev.Versions, Evidence: ev}
		if err := insertNotice(ctx, tx, &n, SystemActor, now); err != nil {
			return err
		}
		id = n.ID
		_, err := s.l.AuditTx(ctx, tx, ledger.Entry{Actor: actorOr(ev.Actor), Action: "notice.draft", Target: noticeTarget(id),
			Params: map[string]any{"backfill": ev.Backfill, "run_id": ev.RunID, "tables": ev.Tables}, Outcome: ledger.OutcomeOK})
		return err
	})
	if err != nil {
		return Notice{}, fmt.Errorf("notices: draft: %w", err)
	}
	return s.Get(ctx, id)
}

func (s *Service) redraft(ctx context.Context, tx *dbsql.Tx, id int64, ev Evidence, title, body string, now time.Time) error {
	n, err := getNotice(ctx, tx, id)
	if err != nil || n.State != StateDraft {
		return err
	}
	if ev.PlannedSwap.IsZero() && !n.Evidence.PlannedSwap.IsZero() {
		// the backfill does not know the plan; the operator set it (PlanSwap)
		ev.PlannedSwap = n.Evidence.PlannedSwap
		title, body = Compose(ev)
	}
	tables, versions := ev.Tables, ev.Versions
	if tables == nil {
		tables = []string{}
	}
	if versions == nil {
		versions = map[string]int{}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE notices SET evidence = ?, tables = ?, versions = ?, target = ?, updated_at = ? WHERE id = ?`,
		jsonText(ev), jsonText(tables), jsonText(versions), ev.Target, now, id); err != nil {
		return err
	}
	last := n.Revisions[len(n.Revisions)-1]
	if last.Actor != SystemActor || (last.Title == title && last.Body == body) {
		return nil // someone edited the text: keep their words; the numbers follow the evidence
	}
	return s.revise(ctx, tx, n, title, body, SystemActor, now)
}

func (s *Service) revise(ctx context.Context, tx *dbsql.Tx, n Notice, title, body, actor string, now time.Time) error {
	rev := n.Revision + 1
	if _, err := tx.ExecContext(ctx, `UPDATE notices SET title = ?, body = ?, revision = ?, updated_at = ? WHERE id = ?`,
		title, body, rev, now, n.ID); err != nil {
		return err
	}
	return insertRevision(ctx, tx, n.ID, rev, title, body, actor, now)
}

// Get returns a notice with its transitions, revisions and recipients.
func (s *Service) Get(ctx context.Context, id int64) (Notice, error) {
	return getNotice(ctx, s.l.DB(), id)
}

// Filter narrows List. Zero values match everything.
type Filter struct {
	Table string
	State State
	// Told keeps only the notices someone was told of: announced, completed or rolled back once
	// (a draft withdrawn before anyone heard of it, a cancelled run's, was never news).
	Told bool
	// History loads each notice's transitions, revisions and recipients, as Get does: what
	// its text as it reads now (Body) is composed from.
	History bool
}

// List returns the notices that match f, newest first, without their history unless
// f.History.
func (s *Service) List(ctx context.Context, f Filter) ([]Notice, error) {
	all, err := listNotices(ctx, s.l.DB())
	if err != nil {
		return nil, err
	}
	var told map[int64]bool
	if f.Told {
		if told, err = toldNotices(ctx, s.l.DB()); err != nil {
			return nil, err
		}
	}
	var out []Notice
	for _, n := range all {
		if (f.Table == "" || n.HasTable(f.Table)) && (f.State == "" || n.State == f.State) && (!f.Told || told[n.ID]) {
			if f.History {
				if err := loadHistory(ctx, s.l.DB(), &n); err != nil {
					return nil, fmt.Errorf("notices: notice %d: %w", n.ID, err)
				}
			}
			out = append(out, n)
		}
	}
	return out, nil
}

// reread ends a change of notice id: bad (the input refused) as it is, else the transaction's
// error err as the change's (what), else the notice as it is now.
func (s *Service) reread(ctx context.Context, id int64, what string, bad, err error) (Notice, error) {
	if bad != nil {
		return Notice{}, bad
	}
	if err != nil {
		return Notice{}, fmt.Errorf("notices: %s: %w", what, err)
	}
	return s.Get(ctx, id)
}

// Edit replaces a draft's title and body, keeping the old text as a revision.
func (s *Service) Edit(ctx context.Context, id int64, actor, title, body string) (Notice, error) {
	title, body = strings.TrimSpace(title), strings.TrimSpace(body)+"\n"
	s.mu.Lock()
	defer s.mu.Unlock()
	var bad error
	err := s.l.Tx(ctx, func(tx *dbsql.Tx) error {
		// A notice that does not exist is not found, whatever the text given.
		n, err := getNotice(ctx, tx, id)
		if err != nil {
			return err
		}
		if title == "" || strings.TrimSpace(body) == "" {
			bad = fault.New(fault.Invalid, "Notice %d: the title and the text must not be empty.", id)
			return bad
		}
		if n.State != StateDraft {
			return fault.New(fault.Conflict, "Notice %d is %s: only a draft can be edited.", id, n.State)
		}
		if n.Title == title && n.Body == body {
			return nil
		}
		if err := s.revise(ctx, tx, n, title, body, actorOr(actor), s.l.Now()); err != nil {
			return err
		}
		_, err = s.l.AuditTx(ctx, tx, ledger.Entry{Actor: actorOr(actor), Action: "notice.edit", Target: noticeTarget(id),
			Params: map[string]any{"revision": n.Revision + 1}, Outcome: ledger.OutcomeOK})
		return err
	})
	return s.reread(ctx, id, "edit", bad, err)
}

// Link is notice id and the recipient whose acknowledgement link carries token. A token that is
// not one of the notice's and a notice that does not exist are the same not-found (badLink).
func (s *Service) Link(ctx context.Context, id int64, token string) (Notice, Recipient, error) {
	n, err := s.Get(ctx, id)
	if errors.Is(err, fault.ErrNotFound) {
		return n, Recipient{}, fmt.Errorf("notices: %w", badLink())
	}
	if err != nil {
		return n, Recipient{}, err
	}
	for _, r := range n.Recipients {
		// the token is the link's secret: compared in constant time, so its time to answer
		// does not tell a guesser how much of a token was right
		if subtle.ConstantTimeCompare([]byte(r.Token), []byte(token)) == 1 {
			return n, r, nil
		}
	}
	return n, Recipient{}, fmt.Errorf("notices: %w", badLink())
}

// Acknowledge records that the recipient holding token has read notice id. Acknowledging twice
// keeps the first time.
func (s *Service) Acknowledge(ctx context.Context, id int64, token string) (Recipient, error) {
	var r Recipient
	err := s.l.Tx(ctx, func(tx *dbsql.Tx) error {
		var acked dbsql.NullTime
		err := tx.QueryRowContext(ctx, `SELECT recipient, token, added_at, acked_at FROM notice_recipients
			WHERE notice_id = ? AND token = ?`, id, token).Scan(&r.ID, &r.Token, &r.AddedAt, &acked)
		if errors.Is(err, dbsql.ErrNoRows) {
			return badLink()
		}
		if err != nil {
			return err
		}
		if acked.Valid {
			r.AckedAt = acked.Time.UTC()
			return nil
		}
		r.AckedAt = s.l.Now()
		if _, err := tx.ExecContext(ctx, `UPDATE notice_recipients SET acked_at = ? WHERE notice_id = ? AND recipient = ?`,
			r.AckedAt, id, r.ID); err != nil {
			return err
		}
		_, err = s.l.AuditTx(ctx, tx, ledger.Entry{Actor: r.ID, Action: "notice.acknowledge", Target: noticeTarget(id), Outcome: ledger.OutcomeOK})
		return err
	})
	if err != nil {
		return r, fmt.Errorf("notices: %w", err)
	}
	return r, nil
}

func newToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func actorOr(a string) string {
	if a == "" {
		return SystemActor
	}
	return a
}

func noticeTarget(id int64) string { return "notice " + strconv.FormatInt(id, 10) }
