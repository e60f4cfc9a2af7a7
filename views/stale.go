package views

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"trueup/fault"
	"trueup/ledger"
	tsql "trueup/sql"
)

// Writers after a publish: the versions written after they stopped being live (Stale), carried
// into the live one (CatchUp); where writers write (WriteTarget) and how a writer inside trueup
// takes its tables (Hold).

// StaleVersion is a version written after it stopped being live: its rows in Partitions are not
// visible to readers.
type StaleVersion struct {
	Table      string    `json:"table"`
	Version    int       `json:"version"`
	Live       int       `json:"live"`
	Partitions []Carried `json:"partitions"`
	// InScope are partitions of the scope of the backfill that replaced it: not carried by
	// CatchUp (the backfill rebuilt them), listed for the operator.
	InScope []Carried `json:"in_scope,omitempty"`
	// Backfill is the backfill whose scope InScope are in: the one that built RebuiltIn.
	Backfill string `json:"backfill,omitempty"`
	// RebuiltIn is the version that backfill built: the newer of this version and the one made
	// live when it was left (a swap to it or a rollback from it recorded that scope). LeftFor is
	// that version made live, which need not be live now.
	RebuiltIn int `json:"rebuilt_in,omitempty"`
	LeftFor   int `json:"left_for,omitempty"`

	parts map[string]tsql.PartMark // the version as measured, for CatchUp's new left mark
}

func (v StaleVersion) String() string {
	s := fmt.Sprintf("%s changed after it stopped being live: %s not visible to readers",
		Physical(v.Table, v.Version), CarriedList(append(slices.Clone(v.Partitions), v.InScope...)))
	switch {
	case len(v.InScope) == 0:
	case len(v.Partitions) == 0:
		s += fmt.Sprintf(", inside the scope of %s: trueup catch-up does not carry them", v.backfill())
	default:
		s += fmt.Sprintf("; %s inside the scope of %s: trueup catch-up does not carry %s",
			joinAnd(partitionsOf(v.InScope)), v.backfill(), pluralWord(len(v.InScope), "it", "them"))
	}
	return s
}

// NotCarried says, for the partitions inside the backfill's scope (none: nil), why CatchUp does
// not carry them and what the operator can do instead, one sentence a line.
func (v StaleVersion) NotCarried() []string {
	if len(v.InScope) == 0 {
		return nil
	}
	stale, live := Physical(v.Table, v.Version), Physical(v.Table, v.Live)
	parts := joinAnd(partitionsOf(v.InScope))
	rebuiltIn := v.RebuiltIn
	if rebuiltIn == 0 {
		rebuiltIn = max(v.Version, v.Live)
	}
	rebuilt := Physical(v.Table, rebuiltIn)
	why := fmt.Sprintf("not carried: %s rebuilt %s in %s, so %s and %s hold different rows there by design, and carrying them would mix the rows it rebuilt with the ones it replaced",
		v.backfill(), parts, rebuilt, stale, live)
	writeTo := fmt.Sprintf("write the rows into %s, the live version writers must write to (trueup versions %s --write-target)", live, v.Table)
	todo := "to let readers see them: " + writeTo
	switch {
	case rebuiltIn == v.Version && (v.LeftFor == 0 || v.LeftFor == v.Live):
		// The version the backfill rebuilt was taken back: making it live again shows its rows.
		todo = fmt.Sprintf("to let readers see them: publish %s again (trueup swap %s --to v%d), or %s", stale, v.Table, v.Version, writeTo)
	case rebuiltIn == v.Live:
		// The live version is the rebuilt one: recompute those partitions there from the inputs.
		name := v.Backfill
		if name == "" {
			name = "BACKFILL"
		}
		todo = fmt.Sprintf("to let readers see them: recompute them into %s from the backfill's inputs (trueup run %s --window %s), or %s",
			live, name, windowOf(v.InScope), writeTo)
	}
	// Otherwise another version went live since: publishing this one again would take that back,
	// and the live version was not rebuilt there by this backfill.
	done := fmt.Sprintf("once they are in %s (or not wanted): trueup catch-up %s --acknowledge, and they are no longer reported", live, v.Table)
	return []string{why, todo, done}
}

func (v StaleVersion) backfill() string {
	if v.Backfill == "" {
		return "the backfill that rebuilt them"
	}
	return "backfill " + v.Backfill
}

func partitionsOf(cs []Carried) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Partition
	}
	return out
}

// windowOf is the partitions of cs as trueup run --window takes them: one, or first..last.
func windowOf(cs []Carried) string {
	if len(cs) == 1 {
		return cs[0].Partition
	}
	return cs[0].Partition + ".." + cs[len(cs)-1].Partition
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Stale finds the versions of table written after they stopped being live: each version not
// live, not retired, whose partitions differ from those recorded as it was left.
func (s *Service) Stale(ctx context.Context, table string) ([]StaleVersion, error) {
	_, out, err := s.stale(ctx, table)
	return out, err
}

// stale is Stale and the live version's number (0 when none is recorded).
func (s *Service) stale(ctx context.Context, table string) (int, []StaleVersion, error) {
	vs, err := s.store.List(ctx, s.target, table)
	if err != nil {
		return 0, nil, err
	}
	if len(vs) == 0 {
		return 0, nil, s.checkLogical(ctx, table)
	}
	live := 0
	byN := map[int]Version{}
	for _, v := range vs {
		if v.State == StateLive {
			live = v.N
		}
		byN[v.N] = v
	}
	var out []StaleVersion
	for _, v := range vs {
		if v.State == StateLive || v.State == StateRetired || live == 0 {
			continue
		}
		left, ok, err := s.store.marks(ctx, s.target, table, v.N, markLeft)
		if err != nil {
			return 0, nil, err
		}
		if !ok {
			continue
		}
		now, err := left.measureRows(ctx, s.engine, v.Physical(), nil)
		if err != nil {
			return 0, nil, err
		}
		leftFor := left.LeftFor
		if leftFor == 0 { // recorded before marks kept it: the live version, as then assumed
			leftFor = live
		}
		rebuilt := max(v.N, leftFor)
		sv := StaleVersion{Table: table, Version: v.N, Live: live, Backfill: byN[rebuilt].Backfill, RebuiltIn: rebuilt, LeftFor: leftFor, parts: now}
		for _, l := range slices.Sorted(maps.Keys(unionKeys(now, left.Parts))) {
			if now[l].Same(left.Parts[l]) || now[l].Rows < left.Parts[l].Rows {
				// A partition that lost rows in a version readers no longer read hides nothing
				// from them (an old version's partition dropped to free space): carrying it would
				// delete live rows.
				continue
			}
			c := Carried{Partition: left.show(l), Rows: now[l].Rows, Delta: now[l].Rows - left.Parts[l].Rows, label: l}
			if left.inScope(l) {
				sv.InScope = append(sv.InScope, c)
			} else {
				sv.Partitions = append(sv.Partitions, c)
			}
		}
		if len(sv.Partitions)+len(sv.InScope) > 0 {
			out = append(out, sv)
		}
	}
	return live, out, nil
}

// seenIn records in left, the marks of sv's version as it was left, the partitions labels as
// Stale measured them now: they are no longer listed until written again.
func (sv StaleVersion) seenIn(left Marks, labels []string) {
	for _, l := range labels {
		if pm, ok := sv.parts[l]; ok {
			left.Parts[l] = pm
		} else {
			delete(left.Parts, l)
		}
	}
}

// checkLogical answers a table the ledger has no version of: nil when it is a logical table all
// the same (its view reads one of its versions, first seen now: none was left, so none is stale),
// else not found, as Versions answers it.
func (s *Service) checkLogical(ctx context.Context, table string) error {
	r, err := s.relation(ctx, table)
	switch {
	case err != nil:
		return err
	case r.view && strings.HasPrefix(r.source, table+"__v"), len(r.versions) > 0:
		return nil
	case r.exists && !r.view:
		return &PlainTableError{Table: table, Target: s.target}
	}
	return notFoundf("%s is not a logical table of target %s (no view over %s__v<N>)", table, s.target, table)
}

// CatchUpResult is what a catch-up carried into table's live version, and what it did not.
type CatchUpResult struct {
	Table string `json:"table"`
	Live  int    `json:"live"` // the live version's number
	// DryRun: nothing was carried; Carried is what a catch-up would carry (Merged not yet known).
	DryRun  bool           `json:"dry_run,omitempty"`
	Carried []StaleVersion `json:"carried"`
	// NotCarried are the versions still written after they stopped being live once the
	// catch-up is done: their partitions inside a backfill's scope (InScope; Partitions empty).
	// While there are any, the table is not caught up.
	NotCarried []StaleVersion `json:"not_carried"`
	// Acknowledged are those the operator said were dealt with (Acknowledge): no longer listed.
	Acknowledged []StaleVersion `json:"acknowledged,omitempty"`
}

// CatchUp carries into table's live version the partitions written to its other versions after
// they stopped being live (Stale), outside the scopes of the backfills that replaced them: each
// replaced whole when the live version was not written there since, merged otherwise. It is
// recorded in the audit log. Partitions inside a scope are not carried: listed in NotCarried.
func (s *Service) CatchUp(ctx context.Context, table, actor string) (CatchUpResult, error) {
	actor = orLocal(actor)
	res, stale, unlock, err := s.heldStale(ctx, table, actor)
	if err != nil {
		return res, err
	}
	defer unlock()
	res.Carried = []StaleVersion{} // each as it is carried
	for _, sv := range stale {
		left, _, err := s.store.marks(ctx, s.target, table, sv.Version, markLeft)
		if err != nil {
			return res, err
		}
		liveMarks, _, err := s.store.marks(ctx, s.target, table, sv.Live, markLive)
		if err != nil {
			return res, err
		}
		from, into := Physical(table, sv.Version), Physical(table, sv.Live)
		var carries []tsql.Carry
		done := sv.Partitions
		for _, c := range done {
			w, err := left.window(c.label)
			if err != nil {
				return res, err
			}
			carries = append(carries, tsql.Carry{Into: into, From: from, Window: w})
		}
		if len(carries) == 0 {
			continue
		}
		intoNow, err := left.measureRows(ctx, s.engine, into, labelsOf(carries))
		if err != nil {
			return res, err
		}
		for i := range carries {
			l := windowLabel(carries[i].Window)
			if !intoNow[l].Same(liveMarks.Parts[l]) {
				carries[i].Merge, done[i].Merged = true, true
			}
		}
		if err := s.engine.CarryPartitions(ctx, carries); err != nil {
			return res, fmt.Errorf("views: catch up %s: %w", table, err)
		}
		// What readers gained, measured: a merge adds only the rows live lacked ("+1 rows
		// (merged)" was said of a row live held already).
		after, err := left.measureRows(ctx, s.engine, into, labelsOf(carries))
		if err != nil {
			return res, err
		}
		for i := range carries {
			l := windowLabel(carries[i].Window)
			done[i].Delta = after[l].Rows - intoNow[l].Rows
		}
		// The version left is taken as Stale measured it: what it held is in the live version.
		sv.seenIn(left, labelsOf(carries))
		if err := s.store.saveMarks(ctx, nil, s.target, table, sv.Version, markLeft, left); err != nil {
			return res, err
		}
		sv.Partitions = done
		res.Carried = append(res.Carried, sv)
		detail := fmt.Sprintf("carried %s from %s into %s", CarriedSummary(done), from, into)
		s.ledger.Audit(ctx, ledger.Entry{Actor: actor, Action: "view.catch-up", Target: table, Outcome: ledger.OutcomeOK, Detail: detail,
			Params: map[string]any{"target": s.target, "from": sv.Version, "into": sv.Live, "partitions": done}})
	}
	return res, nil
}

// Acknowledge records that the operator dealt with the partitions of table's old versions that
// CatchUp does not carry (NotCarried: inside a backfill's scope): the rows were written into
// the live version, recomputed there, or are not wanted. Each is taken as Stale measures it
// now, so it is listed again only once written again. It is recorded in the audit log with the
// reason; the answer lists them under Acknowledged.
func (s *Service) Acknowledge(ctx context.Context, table, actor, reason string) (CatchUpResult, error) {
	actor = orLocal(actor)
	res, _, unlock, err := s.heldStale(ctx, table, actor)
	if err != nil {
		return res, err
	}
	defer unlock()
	res.Acknowledged, res.NotCarried = res.NotCarried, []StaleVersion{}
	for _, sv := range res.Acknowledged {
		left, _, err := s.store.marks(ctx, s.target, table, sv.Version, markLeft)
		if err != nil {
			return res, err
		}
		labels := make([]string, len(sv.InScope))
		for i, c := range sv.InScope {
			labels[i] = c.label
		}
		sv.seenIn(left, labels)
		if err := s.store.saveMarks(ctx, nil, s.target, table, sv.Version, markLeft, left); err != nil {
			return res, err
		}
		detail := fmt.Sprintf("acknowledged %s of %s, not carried (inside the scope of %s)", CarriedList(sv.InScope), Physical(table, sv.Version), sv.backfill())
		if reason != "" {
			detail += ": " + reason
		}
		s.ledger.Audit(ctx, ledger.Entry{Actor: actor, Action: "view.catch-up", Target: table, Outcome: ledger.OutcomeOK, Detail: detail,
			Params: map[string]any{"target": s.target, "from": sv.Version, "acknowledged": sv.InScope, "reason": reason}})
	}
	return res, nil
}

// heldStale takes table for a catch-up and reads what is stale, sorted as a catch-up's answer;
// the caller unlocks.
func (s *Service) heldStale(ctx context.Context, table, actor string) (CatchUpResult, []StaleVersion, func(), error) {
	_, unlock, err := s.lock([]string{table}, actor, "catch-up")
	if err != nil {
		return CatchUpResult{}, nil, nil, err
	}
	live, stale, err := s.stale(ctx, table)
	if err != nil {
		unlock()
		return CatchUpResult{}, nil, nil, err
	}
	return catchUpResult(table, live, stale), stale, unlock, nil
}

// PlanCatchUp is what CatchUp would carry into table's live version, and what not, changing
// nothing: the same answer with DryRun set.
func (s *Service) PlanCatchUp(ctx context.Context, table string) (CatchUpResult, error) {
	live, stale, err := s.stale(ctx, table)
	if err != nil {
		return CatchUpResult{}, err
	}
	res := catchUpResult(table, live, stale)
	res.DryRun = true
	return res, nil
}

// catchUpResult sorts stale versions into what a catch-up carries (their partitions outside a
// backfill's scope) and what it does not (those inside).
func catchUpResult(table string, live int, stale []StaleVersion) CatchUpResult {
	res := CatchUpResult{Table: table, Live: live, Carried: []StaleVersion{}, NotCarried: []StaleVersion{}}
	for _, sv := range stale {
		if len(sv.InScope) > 0 {
			left := sv
			left.Partitions = []Carried{}
			res.NotCarried = append(res.NotCarried, left)
		}
		if len(sv.Partitions) > 0 {
			res.Carried = append(res.Carried, sv)
		}
	}
	return res
}

func labelsOf(cs []tsql.Carry) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = windowLabel(c.Window)
	}
	return out
}

// WriteTarget is the version writers of table must insert into now: the one its view reads, as
// the engine says, read without a lock or a repair so that a pipeline may ask before every
// batch while swaps go on. 0 when the table has no view.
func (s *Service) WriteTarget(ctx context.Context, table string) (int, error) {
	n, err := ViewWriteTarget(ctx, s.engine, table)
	if n == 0 && err == nil {
		if vs, lerr := s.store.List(ctx, s.target, table); lerr != nil || len(vs) > 0 {
			return 0, lerr // versions, and no view: nothing to write to yet
		}
		return 0, notFoundf("%s is not a logical table in target %s", table, s.target)
	}
	return n, err
}

// ViewWriteTarget is WriteTarget read from the engine e alone, without the ledger (a pipeline
// asking while a local trueup holds the ledger): the version table's view reads, 0 when it has
// no view.
func ViewWriteTarget(ctx context.Context, e tsql.Engine, table string) (int, error) {
	src, err := e.ViewSource(ctx, table)
	if errors.Is(err, fault.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	name, n, ok := ParseVersion(src)
	if !ok || name != table {
		return 0, fault.New(fault.Conflict, "%s reads %s, not a version of it: trueup adopt %s makes it one", table, src, table)
	}
	return n, nil
}

// Hold takes tables of target for a writer inside trueup (trueup run) as a swap takes them,
// waiting up to wait while a swap, rollback or catch-up holds one: no publish measures, carries
// or repoints them while the writer writes, so its rows are in the version a swap makes live.
func Hold(ctx context.Context, l *ledger.Ledger, target string, tables []string, actor string, wait time.Duration) (func(), error) {
	s := &Service{target: target, ledger: l, locks: locksOf(l, target)}
	deadline := time.Now().Add(wait)
	for {
		_, unlock, err := s.tryLock(tables, actor, kindWrite)
		if err == nil {
			return unlock, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
