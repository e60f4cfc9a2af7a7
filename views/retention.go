package views

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"slices"
	"time"

	"trueup/ledger"
	tsql "trueup/sql"
)

// RetireRequest asks to drop an old version of a table.
type RetireRequest struct {
	Table   string
	Version string // "v1", "1" or "orders__v1"
	Actor   string
	Reason  string
}

// Retire drops a version's table and records it as retired. The live version, the rollback
// target, versions still building and versions a swap is moving are never retired.
func (s *Service) Retire(ctx context.Context, req RetireRequest) error {
	req.Actor = orLocal(req.Actor)
	n, err := ParseVersionArg(req.Table, req.Version)
	if err != nil {
		return err
	}
	_, unlock, err := s.lock([]string{req.Table}, req.Actor, "retire")
	if err != nil {
		return err
	}
	defer unlock()
	_, stale, err := s.stale(ctx, req.Table)
	if err != nil {
		return err
	}
	return s.retire(ctx, req.Table, n, req.Actor, req.Reason, stale)
}

// retire does Retire's work; the caller holds the table and read what is stale of it.
func (s *Service) retire(ctx context.Context, table string, n int, who, reason string, stale []StaleVersion) error {
	if held, err := s.ledgerHolder(ctx, table); err != nil {
		return err
	} else if held != nil {
		return held
	}
	st, vs, err := s.sync(ctx, table, true)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(vs, func(v Version) bool { return v.N == n })
	if i < 0 {
		return notFoundf("%s has no version v%d in target %s", table, n, s.target)
	}
	v := vs[i]
	target, err := s.rollbackTarget(ctx, table)
	if err != nil {
		return err
	}
	switch {
	case n == st.live:
		return conflictf("%s v%d is live: it cannot be retired", table, n)
	case n == target:
		return conflictf("%s v%d is the rollback target: it cannot be retired while the swap after it is in effect", table, n)
	case v.State == StateBuilding:
		return conflictf("%s v%d is still building", table, n)
	case v.State == StateRetired && !st.physical[n]:
		return conflictf("%s v%d is already retired", table, n)
	}
	if sv := hiding(stale, n); sv != nil {
		return conflictf("%s v%d holds rows readers never saw (%s): retiring it would drop them for good; carry them into the live version first (trueup catch-up %s; those inside a backfill's scope: --acknowledge once dealt with)",
			table, n, CarriedList(append(slices.Clone(sv.Partitions), sv.InScope...)), table)
	}
	start := time.Now()
	err = s.ledger.Tx(ctx, func(tx *dbsql.Tx) error {
		if err := s.store.setState(ctx, tx, s.target, table, n, StateRetired, "", ""); err != nil {
			return err
		}
		_, err := s.ledger.AuditTx(ctx, tx, ledger.Entry{Actor: who, Action: "version.retire", Target: table, Outcome: ledger.OutcomeOK,
			Params: map[string]any{"target": s.target, "version": v.Name(), "from": v.State, "reason": reason, "rows": v.Rows},
			Detail: fmt.Sprintf("retired %s (was %s), dropping %s", v.Name(), v.State, v.Physical())})
		return err
	})
	if err != nil {
		return fmt.Errorf("views: retire %s v%d: %w", table, n, err)
	}
	// Recorded first, dropped second: a crash in between leaves a retired version whose table
	// still exists, and retiring it again drops it. The staging tables a build killed during a
	// partition replace left beside it go first, while retiring again can still reach them.
	if _, err := tsql.DropStagingTables(ctx, s.engine, v.Physical()); err != nil {
		return fmt.Errorf("views: retire %s v%d: recorded as retired but dropping its staging tables failed (retire it again): %w", table, n, err)
	}
	if err := s.engine.DropTable(ctx, v.Physical()); err != nil {
		return fmt.Errorf("views: retire %s v%d: recorded as retired but dropping %s failed (retire it again): %w", table, n, v.Physical(), err)
	}
	s.ledger.Audit(ctx, ledger.Entry{Actor: who, Action: "version.drop", Target: table, Outcome: ledger.OutcomeOK,
		Params: map[string]any{"target": s.target, "version": v.Name(), "duration_ms": time.Since(start).Milliseconds()},
		Detail: "dropped " + v.Physical()})
	return nil
}

// hiding is what version n holds that readers never saw, of stale (Stale), nil when nothing.
func hiding(stale []StaleVersion, n int) *StaleVersion {
	for i := range stale {
		if stale[i].Version == n {
			return &stale[i]
		}
	}
	return nil
}

// RetentionCandidates lists the versions of table that retention would retire now: those older
// than the live version, beyond the newest keep of them, never the live version or the rollback
// target, nor versions building or already retired. keep ≤ 0 keeps everything.
func (s *Service) RetentionCandidates(ctx context.Context, table string, keep int) ([]int, error) {
	if keep <= 0 {
		return nil, nil
	}
	st, vs, err := s.sync(ctx, table, false)
	if err != nil {
		return nil, err
	}
	target, err := s.rollbackTarget(ctx, table)
	if err != nil {
		return nil, err
	}
	var old []int
	for _, v := range vs {
		if v.N < st.live && v.N != target && v.State != StateRetired && v.State != StateBuilding && v.State != StateLive {
			old = append(old, v.N)
		}
	}
	slices.Sort(old)
	if len(old) <= keep {
		return nil, nil
	}
	return old[:len(old)-keep], nil
}

// ApplyRetention retires the versions RetentionCandidates names under the configured keep
// count, and returns them.
func (s *Service) ApplyRetention(ctx context.Context, table, who string) ([]int, error) {
	_, unlock, err := s.lock([]string{table}, orLocal(who), "retire")
	if err != nil {
		return nil, err
	}
	defer unlock()
	ns, err := s.RetentionCandidates(ctx, table, s.keep)
	if err != nil {
		return nil, err
	}
	if len(ns) == 0 {
		return nil, nil
	}
	_, stale, err := s.stale(ctx, table) // once: retiring one version leaves the others as they are
	if err != nil {
		return nil, err
	}
	var done []int
	for _, n := range ns {
		if hiding(stale, n) != nil {
			continue // it holds rows readers never saw (Stale): kept until caught up
		}
		if err := s.retire(ctx, table, n, orLocal(who), fmt.Sprintf("retention keeps %d older versions", s.keep), stale); err != nil {
			return done, err
		}
		done = append(done, n)
	}
	return done, nil
}
