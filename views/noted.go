package views

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

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
// there the intent is recorded first (execute).

// viewNote is the note a publish leaves on each view it moves.
type viewNote struct {
	Ledger  string  `json:"ledger"` // the ledger's identity: notes of another ledger are not ours to recover
	Token   string  `json:"token"`
	Publish Publish `json:"publish"`
}

// noted returns the engine as a NotedRepointer when it is one.
func (s *Service) noted() (tsql.NotedRepointer, bool) {
	nr, ok := s.engine.(tsql.NotedRepointer)
	return nr, ok
}

// executeNoted carries out p, whose tables the caller holds, with notes: one RepointNoted, which
// checks inside its transaction that every view still reads the version p moves it from, then
// the outcome in the ledger. With speculative (p was planned from the ledger alone), a refused
// repoint — nothing was changed — reports false, having written nothing, so that the caller
// plans again from the engine; otherwise the failure is recorded.
func (s *Service) executeNoted(ctx context.Context, nr tsql.NotedRepointer, p Publish, gate []GateCheck, speculative bool) (Publish, bool, error) {
	p.StartedAt = s.ledger.Now()
	p.State, p.Detail = PublishIntent, ""
	p.Token = newToken()
	note, err := json.Marshal(viewNote{Ledger: s.ledger.ID(), Token: p.Token, Publish: p})
	if err != nil {
		return p, true, err
	}
	if s.hooks.AfterIntent != nil {
		s.hooks.AfterIntent(p)
	}
	// As in complete: once started, the outcome is recorded whatever happens to the request.
	ctx = context.WithoutCancel(ctx)
	points := make([]tsql.NotedPoint, len(p.Changes))
	for i, c := range p.Changes {
		points[i] = tsql.NotedPoint{ViewPoint: tsql.ViewPoint{View: c.Table, Table: Physical(c.Table, c.To)}, Note: string(note)}
		if c.From != 0 {
			points[i].From = Physical(c.Table, c.From)
		}
	}
	repointErr := nr.RepointNoted(ctx, points)
	if repointErr != nil && speculative {
		return p, false, nil
	}
	p.State = PublishDone
	if repointErr != nil {
		p.State, p.Detail = PublishFailed, "repoint failed: "+repointErr.Error()
	} else if s.hooks.AfterRepoint != nil {
		s.hooks.AfterRepoint(p)
	}
	p.FinishedAt = s.ledger.Now()
	if err := s.recordOutcome(ctx, &p, gate, true); err != nil {
		return p, true, err
	}
	if repointErr != nil {
		return p, true, fmt.Errorf("views: %s %s: %w", p.Kind, p.Table, repointErr)
	}
	return p, true, nil
}

func newToken() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// recoverNotes records the publishes whose notes are on the views of tables but which the ledger
// has not recorded: a crash came between the engine's commit and the ledger's. Each is recorded
// done, oldest first, as the swap or rollback it was, with the versions' states following.
func (s *Service) recoverNotes(ctx context.Context, tables []string) ([]Repair, error) {
	if _, ok := s.noted(); !ok || len(tables) == 0 {
		return nil, nil
	}
	entries, err := tsql.ViewCatalog(ctx, s.engine, tables, nil)
	if err != nil {
		return nil, fmt.Errorf("views: read the views' notes: %w", err)
	}
	byToken := map[string]Publish{}
	for _, c := range entries {
		var n viewNote
		if !c.View || c.Note == "" || json.Unmarshal([]byte(c.Note), &n) != nil {
			continue
		}
		if n.Ledger != s.ledger.ID() || n.Publish.Target != s.target || n.Token == "" {
			continue
		}
		n.Publish.Token = n.Token
		byToken[n.Token] = n.Publish
	}
	var todo []Publish
	for token, p := range byToken {
		recorded, err := s.queryPublishes(ctx, "target = ? AND token = ?", s.target, token)
		if err != nil {
			return nil, err
		}
		if len(recorded) == 0 {
			todo = append(todo, p)
		}
	}
	slices.SortFunc(todo, func(a, b Publish) int { return a.StartedAt.Compare(b.StartedAt) })
	var out []Repair
	for _, p := range todo {
		_, unlock, err := s.lock(p.Tables(), actor, "recover")
		if err != nil {
			continue // its owner in this process is recording it now
		}
		p.ID = 0
		p.State, p.Detail = PublishDone, "recovered after a crash: the views had been repointed, the ledger had not recorded it"
		if p.Kind == KindRollback {
			if undo, err := s.GetPublish(ctx, p.Undoes); err != nil || undo.UndoneBy != 0 {
				p.Undoes = 0 // gone, or taken back already: nothing to mark
			}
		}
		r, err := s.settle(ctx, &p, true)
		unlock()
		if err != nil {
			return out, err
		}
		out = append(out, r...)
		s.after(ctx, &p)
	}
	return out, nil
}
