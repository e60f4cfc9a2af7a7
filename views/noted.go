package views

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"trueup/fault"

	tsql "trueup/sql"
)

// On an engine that keeps a note with a view in the transaction that repoints it (DuckDB, see
// tsql.NotedRepointer), a publish records no intent in the ledger first. The note on each view —
// who, why, what moved, and a token — commits together with the views, and the ledger records the
// outcome after, with the same token. A crash before the engine commits leaves nothing changed
// anywhere; a crash after it leaves views whose note names a publish the ledger has not recorded,
// and start-up recovery records it from the note (recoverNotes). That is one durable commit fewer
// on the way than intent, repoint, outcome, and no moment at which the views have moved without a
// record of who moved them and why. ClickHouse cannot change a view and keep a note in one step:
// there the intent is recorded first (intentFirst).

// viewNote is the note a publish leaves on each view it moves.
type viewNote struct {
	Ledger  string      `json:"ledger"` // the ledger's identity: notes of another ledger are not ours to recover
	Token   string      `json:"token"`
	Publish Publish     `json:"publish"`
	Gate    []GateCheck `json:"gate,omitempty"` // what the gate said, for an override recorded by recovery
}

// noted is the strategy of an engine that keeps a note with each view (tsql.NotedRepointer):
// check, repoint and note in one engine transaction, then the outcome in the ledger.
type noted struct {
	s  *Service
	nr tsql.NotedRepointer
}

// publish carries out p with notes: one RepointNoted, which checks inside its transaction that
// every view still reads the version p moves it from, then the outcome in the ledger. With
// recorded (p was planned from the ledger alone), a refused repoint — nothing was changed —
// reports false, having written nothing, so that the caller plans again from the engine;
// otherwise the failure is recorded. When the views moved and the ledger cannot record it, the
// tables stay held (keepHeld) until recovery records it at the next start-up: nothing may move
// them or repair the ledger from them before.
func (n noted) publish(ctx context.Context, h *holder, p Publish, gate []GateCheck, recorded map[string][]Version) (Publish, bool, error) {
	s, speculative := n.s, recorded != nil
	p.StartedAt = s.ledger.Now()
	p.State, p.Detail = PublishIntent, ""
	p.Token = newToken()
	note, err := json.Marshal(viewNote{Ledger: s.ledger.ID(), Token: p.Token, Publish: p, Gate: gate})
	if err != nil {
		return p, true, err
	}
	if err := s.recordMarks(ctx, p); err != nil {
		return p, true, err
	}
	if s.hooks.AfterIntent != nil && !h.hooked {
		h.hooked = true
		s.hooks.AfterIntent(p)
	}
	// As in intentFirst: once started, the outcome is recorded whatever happens to the request.
	ctx = context.WithoutCancel(ctx)
	points := make([]tsql.NotedPoint, len(p.Changes))
	for i, c := range p.Changes {
		points[i] = tsql.NotedPoint{ViewPoint: tsql.ViewPoint{View: c.Table, Table: Physical(c.Table, c.To)}, Note: string(note),
			Carry: c.notedCarries()}
		if c.From != 0 {
			points[i].From = Physical(c.Table, c.From)
		}
	}
	// The ledger writes the outcome while the engine repoints — the row and the versions' states —
	// and, once the engine has committed, the finish time and the audit entry, then commits.
	done := p
	done.State = PublishDone
	pending := s.prepareOutcome(ctx, &done, gate)
	defer pending.abandon() // unless committed
	repointErr := n.nr.RepointNoted(ctx, points)
	if errors.Is(repointErr, tsql.ErrCarryMoved) && carryRetries(ctx) < 2 {
		// A writer still writing the version being made live changed a partition to be carried
		// into since it was measured: nothing landed (one transaction); measure and try again.
		pending.abandon()
		if err := s.planCarries(ctx, p.Changes); err != nil {
			return p, true, err
		}
		return n.publish(context.WithValue(ctx, carryRetriesKey{}, carryRetries(ctx)+1), h, p, gate, recorded)
	}
	if repointErr != nil {
		// One transaction: it landed whole or not at all. An error may still come after the
		// commit landed (the engine lost the connection answering it): the notes tell.
		switch landed, err := s.landed(ctx, p); {
		case err != nil:
			s.keepHeld(h)
			return p, true, fmt.Errorf("views: %s %s: %w; reading the views back failed too (%v): the tables stay held until a restart lets recovery settle it", p.Kind, p.Table, repointErr, err)
		case landed:
			repointErr = nil
		case speculative:
			return p, false, nil
		}
	}
	p.State = PublishDone
	if repointErr != nil {
		p.State, p.Detail = PublishFailed, "repoint failed: "+repointErr.Error()
		pending.abandon()
	} else {
		if s.hooks.AfterRepoint != nil {
			s.hooks.AfterRepoint(p)
		}
		if pending.commit(ctx, s.ledger.Now()) == nil {
			return done, true, nil
		}
		pending.abandon()
	}
	// Written now, on its own: the repoint failed, or the outcome written meanwhile did not commit.
	p.FinishedAt = s.ledger.Now()
	if err := s.recordOutcome(ctx, &p, gate, true); err != nil {
		if p.State == PublishDone {
			s.keepHeld(h)
			return p, true, fmt.Errorf("%w; the views did move, and the tables stay held until a restart lets recovery record it", err)
		}
		return p, true, err
	}
	if repointErr != nil {
		return p, true, fmt.Errorf("views: %s %s: %w", p.Kind, p.Table, repointErr)
	}
	return p, true, nil
}

// landed reports whether every view p moves carries p's note.
func (s *Service) landed(ctx context.Context, p Publish) (bool, error) {
	notes, err := s.viewNotes(ctx, p.Tables())
	if err != nil {
		return false, err
	}
	on := 0
	for _, n := range notes {
		if n.Token == p.Token {
			on++
		}
	}
	return on == len(p.Changes), nil
}

// viewNotes reads the notes on the views of tables, by view; a view without one is left out.
func (s *Service) viewNotes(ctx context.Context, tables []string) (map[string]viewNote, error) {
	entries, err := tsql.ViewCatalog(ctx, s.engine, tables, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]viewNote{}
	for _, c := range entries {
		var n viewNote
		if c.View && c.Note != "" && json.Unmarshal([]byte(c.Note), &n) == nil {
			out[c.Name] = n
		}
	}
	return out, nil
}

func newToken() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// recoverNotes records the publishes whose notes are on the views of tables but which the ledger
// has not recorded: a crash came between the engine's commit and the ledger's. Each is recorded
// done, oldest first, as the swap or rollback it was, with the versions' states following. A
// publish it cannot record keeps its tables held (keepHeld), so that nothing moves them or
// repairs the ledger from them before a later start-up records it.
func (s *Service) recoverNotes(ctx context.Context, tables []string) ([]Repair, error) {
	if _, ok := s.strategy.(noted); !ok || len(tables) == 0 {
		return nil, nil
	}
	onViews, err := s.viewNotes(ctx, tables)
	if err != nil {
		return nil, fmt.Errorf("views: read the views' notes: %w", err)
	}
	byToken := map[string]viewNote{}
	for _, n := range onViews {
		if n.Ledger != s.ledger.ID() || n.Publish.Target != s.target || n.Token == "" {
			continue
		}
		n.Publish.Token = n.Token
		byToken[n.Token] = n
	}
	notes := slices.SortedFunc(maps.Values(byToken), func(a, b viewNote) int { return a.Publish.StartedAt.Compare(b.Publish.StartedAt) })
	var out []Repair
	var errs []error
	for _, n := range notes {
		p := n.Publish
		h, unlock, err := s.lock(p.Tables(), actor, "recover")
		if err != nil {
			continue // its owner in this process is at work on it
		}
		r, err := s.recoverNote(ctx, &p, n.Gate)
		if err != nil {
			s.keepHeld(h)
			errs = append(errs, err)
		}
		unlock()
		out = append(out, r...)
		if err == nil && len(r) > 0 {
			s.after(ctx, &p) // the listener hears of it as of any publish
		}
	}
	return out, errors.Join(errs...)
}

// recoverNote records p, found in the notes, unless the ledger has it, and sets its id and state;
// the caller holds its tables.
func (s *Service) recoverNote(ctx context.Context, p *Publish, gate []GateCheck) ([]Repair, error) {
	recorded, err := s.queryPublishes(ctx, "target = ? AND token = ?", s.target, p.Token)
	if err != nil || len(recorded) > 0 {
		return nil, err
	}
	p.ID = 0
	p.State, p.Detail = PublishDone, "recovered after a crash: the views had been repointed, the ledger had not recorded it"
	if p.Kind == KindRollback {
		undo, err := s.GetPublish(ctx, p.Undoes)
		switch {
		case errors.Is(err, fault.ErrNotFound) || (err == nil && undo.UndoneBy != 0):
			p.Undoes = 0 // gone, or taken back already: nothing to mark
		case err != nil:
			return nil, err
		}
	}
	return s.settle(ctx, p, true, gate)
}

type carryRetriesKey struct{}

// carryRetries is how many times a publish planned its carries again because the version being
// made live was written meanwhile (tsql.ErrCarryMoved).
func carryRetries(ctx context.Context) int {
	n, _ := ctx.Value(carryRetriesKey{}).(int)
	return n
}
