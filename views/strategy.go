package views

import (
	"context"

	tsql "trueup/sql"
)

// A swap or a rollback is one pipeline, each step in its own file, entered once and in this
// order:
//
//	swap.go, rollback.go   the request → the plan (what moves from → to), made from the ledger
//	                       (version.go, history.go) under the tables' locks (locks.go)
//	gate.go                the gate's verdict on each version the plan makes live
//	expect.go              what the operator confirmed still holds
//	carry.go (marks.go)    what the pipeline wrote to the version being left that must go
//	                       with it (planCarries; its marks are recorded before the act)
//	noted.go, intentfirst.go   the engine's strategy: have the engine confirm the plan, act in it
//	publish.go             the intent (intent first only) and the outcome in the ledger
//	told.go                the listeners, once the tables are given back (then retention.go)
//
// The plan is made from the ledger alone, which normally agrees with the engine (trueup made
// the views what they are; start-up recovery repairs the ledger otherwise), and the strategy has
// the engine confirm it before anything is written. When the engine does not confirm it (a view
// or a table changed outside trueup), nothing has been written: the ledger is first made to agree
// with the engine (sync.go: adoption, repair) and the publish goes down the same pipeline once
// more, planned from what the engine says. That second pass is the only way back; adoption and
// repair are otherwise left to start-up (Recover) and to the listing (Versions).

// strategy is how one kind of engine carries out a planned publish.
type strategy interface {
	// publish carries out p, whose tables the caller holds through h; gate is the gate's verdict
	// on it. With recorded, p was planned from those versions of the ledger alone: publish first
	// has the engine confirm the plan and, when it does not, reports false having written
	// nothing, so that the caller plans again from the engine. Otherwise it reports true.
	publish(ctx context.Context, h *holder, p Publish, gate []GateCheck, recorded map[string][]Version) (Publish, bool, error)
}

// strategyOf picks the strategy of s's engine: with notes where the engine keeps a note with a
// view in the transaction that repoints it (DuckDB), intent first elsewhere (ClickHouse).
func strategyOf(s *Service) strategy {
	if nr, ok := s.engine.(tsql.NotedRepointer); ok {
		return noted{s: s, nr: nr}
	}
	return intentFirst{s: s}
}
