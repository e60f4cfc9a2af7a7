package views

import (
	"context"
	"errors"
	"fmt"

	tsql "trueup/sql"
)

// intentFirst is the strategy of an engine that cannot change a view and keep a note in one step
// (ClickHouse): the intent in the ledger, one Engine.RepointViews call, the outcome in the ledger.
// The ledger and the warehouse are separate databases, so the view change cannot commit in the
// ledger's transaction; the intent and the outcome bracket it, and Recover settles an intent left
// without an outcome by a crash.
type intentFirst struct{ s *Service }

// publish carries out p. With recorded, the engine's catalog (one read of p's tables) must first
// confirm the plan: the engine agrees with the ledger about every table p moves. The intent is
// written only after that: recovery carries out or records an intent it finds after a crash, so
// an intent must never stand for a publish the engine would have refused.
func (i intentFirst) publish(ctx context.Context, h *holder, p Publish, gate []GateCheck, recorded map[string][]Version) (Publish, bool, error) {
	s := i.s
	if recorded != nil && !s.confirmed(ctx, p.Changes, recorded) {
		return Publish{}, false, nil
	}
	// The versions being made live are not read by anyone yet: carrying into them first changes
	// nothing a reader sees, and a crash after leaves rows a later swap carries again the same.
	if err := s.carryFirst(ctx, &p); err != nil {
		return p, true, err
	}
	if err := s.recordMarks(ctx, p); err != nil {
		return p, true, err
	}
	if s.hooks.AfterCarry != nil && p.CarriedSummary() != "" {
		s.hooks.AfterCarry(p)
	}
	if err := s.recordIntent(ctx, h, &p); err != nil {
		return p, true, err
	}
	p, err := s.complete(ctx, h, p, gate)
	return p, true, err
}

// complete repoints the views of p, whose intent is recorded and whose tables the caller holds
// through h, and records the outcome. When the repoint reports an error and the views cannot be
// read back, nobody can tell whether they moved: the intent stays as it is, with its lock rows,
// and the tables stay held (keepHeld) until start-up recovery settles it from the views.
func (s *Service) complete(ctx context.Context, h *holder, p Publish, gate []GateCheck) (Publish, error) {
	if s.hooks.AfterIntent != nil {
		s.hooks.AfterIntent(p)
	}
	// The repoint must not be abandoned half-way because the caller went away: it is short,
	// and the outcome must be recorded whatever happens to the request.
	ctx = context.WithoutCancel(ctx)
	points := make([]tsql.ViewPoint, len(p.Changes))
	for i, c := range p.Changes {
		points[i] = tsql.ViewPoint{View: c.Table, Table: Physical(c.Table, c.To)}
	}
	repointErr := s.repoint(ctx, p, points)
	if s.hooks.AfterRepoint != nil {
		s.hooks.AfterRepoint(p)
	}
	if errors.Is(repointErr, ErrHalfDone) {
		return p, s.halfDone(p, repointErr) // an intent still: recovery or a resume settles it
	}
	p.State, p.Detail = PublishDone, ""
	if repointErr != nil {
		var readErr error
		if p, readErr = s.settleFailure(ctx, p, repointErr); readErr != nil {
			s.keepHeld(h)
			return p, fmt.Errorf("views: %s %s #%d: %w; reading the views back failed too (%v): it stays recorded as an intent and the tables stay held until a restart lets recovery settle it from the views",
				p.Kind, p.Table, p.ID, repointErr, readErr)
		}
	}
	p.FinishedAt = s.ledger.Now()
	if err := s.recordOutcome(ctx, &p, gate, false); err != nil {
		return p, err
	}
	if p.State != PublishDone {
		return p, fmt.Errorf("views: %s %s: %w", p.Kind, p.Table, repointErr)
	}
	return p, nil
}

// settleFailure decides what a failed repoint left behind. Where the engine changed some views
// and not others (ClickHouse from 19.5 repoints one view per statement), the changed ones are
// put back, so that a failed publish leaves every table as it was. It returns the error of
// reading the views back when it cannot tell what the repoint did: then nothing may be recorded
// (a publish written failed whose views moved would disagree with them for good).
func (s *Service) settleFailure(ctx context.Context, p Publish, cause error) (Publish, error) {
	at, err := s.actual(ctx, p.Changes)
	if err != nil {
		return p, err
	}
	switch classify(p.Changes, at) {
	case allTo:
		p.State, p.Detail = PublishDone, fmt.Sprintf("the engine reported %v, but every view reads its new version", cause)
		return p, nil
	case allFrom:
		p.State, p.Detail = PublishFailed, "repoint failed: "+cause.Error()
		return p, nil
	}
	var back []tsql.ViewPoint
	for _, c := range p.Changes {
		if at[c.Table] == c.To && c.From != 0 {
			back = append(back, tsql.ViewPoint{View: c.Table, Table: Physical(c.Table, c.From)})
		}
	}
	p.State, p.Detail = PublishFailed, "repoint failed part-way: "+cause.Error()
	if err := s.engine.RepointViews(ctx, back); err != nil {
		p.Detail += fmt.Sprintf("; putting the views back failed too (%v): start-up recovery will repair the ledger", err)
	} else {
		p.Detail += "; the views it had changed were put back"
	}
	return p, nil
}
