package views

import (
	"context"
	"fmt"
	"slices"
	"trueup/ledger"
)

// A publish's outcome commits in the ledger, and then the listener hears of it (the notices
// complete or roll back) in transactions of its own. A crash between the two used to leave the
// notices as they were for good. The outcome's row says whether the listener has heard of it
// (swaps.notified_at, set once it has), and start-up recovery tells it, oldest first, of every
// done publish it has not (tellUntold). Hearing of a publish twice — a crash after the listener
// and before the mark — moves nothing twice: a notice moves only from the states it moves from.
//
// The listener is not called inside the outcome's transaction instead: the notices read version
// states and other notices, take their own lock, and enqueue deliveries; on DuckDB the outcome's
// transaction is open while the warehouse repoints (pendingOutcome), and a listener's failure
// would then undo a publish whose views have moved.

// tell tells the listener of p, a done publish, records that it has heard, and returns the
// notices it moved. Without a listener nothing is recorded: a later start-up with one tells it.
func (s *Service) tell(ctx context.Context, p Publish) ([]NoticeMove, error) {
	if s.listener == nil {
		return nil, nil
	}
	var moves []NoticeMove
	var err error
	switch p.Kind {
	case KindAdopt, KindUnadopt:
		// nothing for a listener: no data changed, only where the name reads it
	case KindRollback:
		moves, err = s.listener.RolledBack(ctx, p, p.Reason)
	default:
		moves, err = s.listener.Published(ctx, p)
	}
	if err != nil {
		return nil, err // not marked: the next start-up tells it again
	}
	st, err := s.ledger.Prepared(ctx, `UPDATE swaps SET notified_at = ? WHERE id = ?`)
	if err == nil {
		_, err = st.ExecContext(ctx, s.ledger.Now(), p.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("views: record that the notices heard of %s #%d: %w", p.Kind, p.ID, err)
	}
	return moves, nil
}

// foresee sets the notices plan p, carried out as pub, would move, when the listener can say.
func (s *Service) foresee(ctx context.Context, p *Plan, pub Publish) error {
	f, ok := s.listener.(Foreseer)
	if !ok {
		return nil
	}
	moves, err := f.Foresee(ctx, pub)
	if err != nil {
		return fmt.Errorf("views: which notices %s %s moves: %w", p.Kind, p.Table, err)
	}
	p.Notices = moves
	return nil
}

// tellUntold tells the listener of the done publishes of the target it has not heard of, oldest
// first, and reports each as a repair. A publish whose tables are held in this process is left
// to its owner, which tells it.
func (s *Service) tellUntold(ctx context.Context) ([]Repair, error) {
	if s.listener == nil {
		return nil, nil
	}
	ps, err := s.queryPublishes(ctx, "target = ? AND state = ? AND notified_at IS NULL", s.target, PublishDone)
	if err != nil {
		return nil, err
	}
	slices.Reverse(ps) // oldest first
	var out []Repair
	for _, p := range ps {
		_, unlock, err := s.lock(p.Tables(), actor, "recover")
		if err != nil {
			continue
		}
		s.after(ctx, &p)
		unlock()
		what := fmt.Sprintf("%s #%d (%s): the notices were told after a crash", p.Kind, p.ID, p.Summary())
		if len(p.Warnings) > 0 {
			what = fmt.Sprintf("%s #%d (%s): telling the notices after a crash failed: %s", p.Kind, p.ID, p.Summary(), p.Warnings[0])
		}
		out = append(out, Repair{Target: s.target, Table: p.Table, What: what})
	}
	return out, nil
}

// after tells the listener about a done publish and, after a swap, applies automatic retention.
// Failures here do not undo the publish; they are logged, audited and returned as warnings.
func (s *Service) after(ctx context.Context, p *Publish) {
	if s.hooks.AfterOutcome != nil {
		s.hooks.AfterOutcome(*p)
	}
	if moves, err := s.tell(ctx, *p); err != nil {
		s.warn(ctx, p, "notify", err)
	} else {
		p.Notices = moves
	}
	if p.Kind == KindSwap && s.autoRetire && s.keep > 0 {
		for _, t := range p.Tables() {
			if _, err := s.ApplyRetention(ctx, t, actor); err != nil {
				s.warn(ctx, p, "retention of "+t, err)
			}
		}
	}
}

func (s *Service) warn(ctx context.Context, p *Publish, what string, err error) {
	msg := fmt.Sprintf("%s after %s #%d failed: %v", what, p.Kind, p.ID, err)
	p.Warnings = append(p.Warnings, msg)
	s.log.Warn("views: "+msg, "target", s.target, "table", p.Table)
	s.ledger.Audit(ctx, ledger.Entry{Actor: actor, Action: "view." + p.Kind + ".after", Target: p.Table,
		Outcome: ledger.OutcomeFailed, Params: map[string]any{"target": s.target, "swap": p.ID}, Detail: msg})
}
