package views

import (
	"context"
	dbsql "database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	tsql "trueup/sql"
)

// The marks: per-partition fingerprints of versions at the moments that decide what is carried
// (see carry.go), kept in the ledger's version_marks.

// Mark kinds (the ledger's version_marks.mark).
const (
	markBasis = "basis"
	markLive  = "live"
	markLeft  = "left"
)

// Marks are the fingerprints of one version's partitions at one moment.
type Marks struct {
	Column string    `json:"column"`
	Type   tsql.Type `json:"type"`
	Grain  string    `json:"grain"`
	// Scope lists the partitions the backfill rebuilt: not carried, and, changed in the live
	// version since the build, a refusal.
	Scope []string                 `json:"scope,omitempty"`
	Parts map[string]tsql.PartMark `json:"parts"`
	// WriteMark is the engine's write mark of Of, the relation the mark describes: the version as
	// its built mark was recorded, or live just before a basis measured it. Partial says the built
	// mark lacks the partitions carried from live (see RecordBuilt).
	WriteMark string `json:"write_mark,omitempty"`
	Of        string `json:"of,omitempty"`
	Partial   bool   `json:"partial,omitempty"`
	// Carried says a basis's partitions outside the scope are in the version it was taken for
	// exactly as measured (CarriedExactly); a catch-up that carries more clears it.
	Carried bool `json:"carried,omitempty"`
	// ScopeParts says a live mark's Parts hold the scope's partitions too, as the version made
	// live held them then (marks recorded before they did hold only those outside the scope).
	ScopeParts bool `json:"scope_parts,omitempty"`
	// LeftFor is, in a left mark, the version made live when this one was left: of the two, the
	// newer rebuilt the scope (marks recorded before it was kept lack it: 0).
	LeftFor int `json:"left_for,omitempty"`

	takenAt time.Time
}

func (m Marks) inScope(label string) bool { return slices.Contains(m.Scope, label) }

// nullLabel labels the partition of the rows whose column is NULL (a tsql.Window's Null): never
// in a scope, carried like any partition outside it.
const nullLabel = "null"

// label is how marks record the partition starting at t (the zero time: the NULL partition).
func label(t time.Time) string {
	if t.IsZero() {
		return nullLabel
	}
	return t.UTC().Format(time.RFC3339)
}

// windowLabel is the label of w's partition.
func windowLabel(w tsql.Window) string {
	if w.Null {
		return nullLabel
	}
	return label(w.Start)
}

// window is the window of the partition label names.
func (m Marks) window(label string) (tsql.Window, error) {
	if label == nullLabel {
		return tsql.Window{Column: m.Column, Type: m.Type, Null: true}, nil
	}
	t, err := time.Parse(time.RFC3339, label)
	if err != nil {
		return tsql.Window{}, fmt.Errorf("views: partition %q in a mark: %w", label, err)
	}
	return tsql.Window{Column: m.Column, Type: m.Type, Start: t, End: tsql.NextGrain(t, m.Grain)}, nil
}

// show is how people read partition label.
func (m Marks) show(label string) string {
	if label == nullLabel {
		return m.Column + " IS NULL"
	}
	t, err := time.Parse(time.RFC3339, label)
	if err != nil {
		return label
	}
	return tsql.FormatGrain(t, m.Grain)
}

// measure fingerprints relation's partitions as m's (only those of labels, when given).
func (m Marks) measure(ctx context.Context, e tsql.Engine, relation string, labels []string) (map[string]tsql.PartMark, error) {
	return m.measureWith(ctx, tsql.MeasurePartitions, e, relation, labels)
}

// measureRows is measure with rows and row-hash sums only: enough to tell what changed (a swap's
// carry, a stale version), not to stand for the version in a diff.
func (m Marks) measureRows(ctx context.Context, e tsql.Engine, relation string, labels []string) (map[string]tsql.PartMark, error) {
	return m.measureWith(ctx, tsql.MeasureRows, e, relation, labels)
}

type measurer func(ctx context.Context, e tsql.Engine, relation, column, grain string, only []tsql.Window) (map[time.Time]tsql.PartMark, error)

func (m Marks) measureWith(ctx context.Context, measure measurer, e tsql.Engine, relation string, labels []string) (map[string]tsql.PartMark, error) {
	var only []tsql.Window
	for _, l := range labels {
		w, err := m.window(l)
		if err != nil {
			return nil, err
		}
		only = append(only, w)
	}
	if labels != nil && len(only) == 0 {
		return map[string]tsql.PartMark{}, nil
	}
	got, err := measure(ctx, e, relation, m.Column, m.Grain, only)
	if err != nil {
		return nil, err
	}
	out := make(map[string]tsql.PartMark, len(got))
	for t, pm := range got {
		out[label(t)] = pm
	}
	return out, nil
}

// RecordBasis measures live, the version a backfill run carries partitions from, and records it
// as the basis of version n of table, the one the run builds, whose scope lists the partitions
// the run rebuilds (as their starts), with mark, live's settled write mark (tsql.SettledWriteMark)
// taken just before ("": none), for LiveFingerprints. Call it before the carry: a row written
// between the two is in the new version and not in the basis, and is carried again, harmlessly,
// at the swap.
func (s Store) RecordBasis(ctx context.Context, e tsql.Engine, target, table string, n int, live, mark, column string,
	typ tsql.Type, grain string, scope []time.Time) error {
	m := Marks{Column: column, Type: typ, Grain: grain, Of: live, WriteMark: mark}
	for _, t := range scope {
		m.Scope = append(m.Scope, label(t))
	}
	parts, err := m.measure(ctx, e, live, nil)
	if err != nil {
		return err
	}
	m.Parts = parts
	return s.saveMarks(ctx, nil, target, table, n, markBasis, m)
}

// RefreshBasis records the live version's partitions of labels again in version n's basis: a
// catch-up recomputed them from what live holds now.
func (s Store) RefreshBasis(ctx context.Context, e tsql.Engine, target, table string, n int, live string, starts []time.Time) error {
	m, ok, err := s.marks(ctx, target, table, n, markBasis)
	if err != nil || !ok {
		return err
	}
	labels := make([]string, len(starts))
	for i, t := range starts {
		labels[i] = label(t)
	}
	now, err := m.measure(ctx, e, live, labels)
	if err != nil {
		return err
	}
	for _, l := range labels {
		if pm, ok := now[l]; ok {
			m.Parts[l] = pm
		} else {
			delete(m.Parts, l)
		}
	}
	return s.saveMarks(ctx, nil, target, table, n, markBasis, m)
}

// saveMarks records m as version n's mark of kind, replacing the one before; in tx when given.
func (s Store) saveMarks(ctx context.Context, tx *dbsql.Tx, target, table string, n int, kind string, m Marks) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	const q = `INSERT OR REPLACE INTO version_marks (target, table_name, version, mark, taken_at, body)
		VALUES (?, ?, ?, ?, ?, ?)`
	args := []any{target, table, n, kind, s.L.Now(), string(body)}
	if tx != nil {
		_, err = tx.ExecContext(ctx, q, args...)
	} else {
		_, err = s.L.DB().ExecContext(ctx, q, args...)
	}
	if err != nil {
		return fmt.Errorf("views: record the partitions of %s: %w", Physical(table, n), err)
	}
	return nil
}

// marks reads version n's mark of kind; ok is false when there is none.
func (s Store) marks(ctx context.Context, target, table string, n int, kind string) (Marks, bool, error) {
	var m Marks
	ok := false
	err := s.eachMark(ctx, `SELECT table_name, version, mark, body, taken_at FROM version_marks
		WHERE target = ? AND table_name = ? AND version = ? AND mark = ?`, []any{target, table, n, kind},
		func(_ string, _ markKey, got Marks) { m, ok = got, true })
	if err != nil {
		return Marks{}, false, fmt.Errorf("views: read the partitions recorded of %s: %w", Physical(table, n), err)
	}
	return m, ok, nil
}

// markKey names one mark of a table: its version and kind.
type markKey struct {
	n    int
	kind string
}

// marksOfChanges reads every mark of the two versions of each change (with both ends) in one
// statement, by table: a swap reads three per table (the basis of the version made live, the
// live mark of the one left, the left mark of the one made live), and every statement counts
// while readers load the machine.
func (s Store) marksOfChanges(ctx context.Context, target string, changes []Change) (map[string]map[markKey]Marks, error) {
	var match []string
	args := []any{target}
	for _, c := range changes {
		if c.From != 0 && c.To != 0 {
			match = append(match, "(table_name = ? AND version IN (?, ?))")
			args = append(args, c.Table, c.To, c.From)
		}
	}
	out := map[string]map[markKey]Marks{}
	if len(match) == 0 {
		return out, nil
	}
	err := s.eachMark(ctx, `SELECT table_name, version, mark, body, taken_at FROM version_marks
		WHERE target = ? AND (`+strings.Join(match, " OR ")+`)`, args, func(table string, k markKey, m Marks) {
		if out[table] == nil {
			out[table] = map[markKey]Marks{}
		}
		out[table][k] = m
	})
	if err != nil {
		return nil, fmt.Errorf("views: read the partitions recorded of %s: %w", changeTables(changes), err)
	}
	return out, nil
}

// changeTables names the tables of changes, for messages.
func changeTables(changes []Change) string {
	names := make([]string, len(changes))
	for i, c := range changes {
		names[i] = c.Table
	}
	return strings.Join(names, ", ")
}

// eachMark runs query (prepared once) for rows of table_name, version, mark, body and taken_at,
// and hands each mark to fn.
func (s Store) eachMark(ctx context.Context, query string, args []any, fn func(table string, k markKey, m Marks)) error {
	st, err := s.L.Prepared(ctx, query)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var table, body string
		var k markKey
		var at time.Time
		if err := rows.Scan(&table, &k.n, &k.kind, &body, &at); err != nil {
			return err
		}
		var m Marks
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			return err
		}
		if m.Parts == nil {
			m.Parts = map[string]tsql.PartMark{}
		}
		m.takenAt = at
		fn(table, k, m)
	}
	return rows.Err()
}

// CatchUpBuild brings version n of table, built by a backfill run, up to what the live version
// holds now: the partitions outside the run's scope that changed in live since the build are
// carried into it (and recorded so in its basis), and the partitions inside the scope whose live
// rows changed are returned, by their starts, for the backfill to recompute (see
// RefreshBasis); a swap would refuse them (ScopeChangedError). Nothing without a basis.
func (s Store) CatchUpBuild(ctx context.Context, e tsql.Engine, target, table string, n int) ([]time.Time, []Carried, error) {
	basis, ok, err := s.marks(ctx, target, table, n, markBasis)
	if err != nil || !ok {
		return nil, nil, err
	}
	live, err := e.ViewSource(ctx, table)
	if err != nil {
		return nil, nil, err
	}
	now, err := basis.measure(ctx, e, live, nil)
	if err != nil {
		return nil, nil, err
	}
	var inScope []time.Time
	var carries []tsql.Carry
	var carried []Carried
	for _, l := range slices.Sorted(maps.Keys(unionKeys(now, basis.Parts))) {
		if now[l].Same(basis.Parts[l]) {
			continue
		}
		w, err := basis.window(l)
		if err != nil {
			return nil, nil, err
		}
		if basis.inScope(l) {
			inScope = append(inScope, w.Start)
			continue
		}
		carries = append(carries, tsql.Carry{Into: Physical(table, n), From: live, Window: w})
		carried = append(carried, Carried{Partition: basis.show(l), Rows: now[l].Rows, Delta: now[l].Rows - basis.Parts[l].Rows})
		if pm, ok := now[l]; ok {
			basis.Parts[l] = pm
		} else {
			delete(basis.Parts, l)
		}
	}
	if len(carries) > 0 {
		if err := e.CarryPartitions(ctx, carries); err != nil {
			return nil, nil, fmt.Errorf("views: carry into %s: %w", Physical(table, n), err)
		}
		basis.Carried = false // measured before this carry, not checked across it
		if err := s.saveMarks(ctx, nil, target, table, n, markBasis, basis); err != nil {
			return nil, nil, err
		}
	}
	return inScope, carried, nil
}

// Watched reports whether trueup recorded a version of table as it stopped being live: whether
// Stale has anything to compare with.
func (s Store) Watched(ctx context.Context, target, table string) (bool, error) {
	var n int
	err := s.L.DB().QueryRowContext(ctx, `SELECT count(*) FROM version_marks WHERE target = ? AND table_name = ? AND mark = ?`,
		target, table, markLeft).Scan(&n)
	return n > 0, err
}

// WatchedTables are the tables of target of which trueup recorded a version as it stopped being
// live (Watched), by name: every table Stale has something to compare for.
func (s Store) WatchedTables(ctx context.Context, target string) ([]string, error) {
	rows, err := s.L.DB().QueryContext(ctx, `SELECT DISTINCT table_name FROM version_marks WHERE target = ? AND mark = ? ORDER BY table_name`,
		target, markLeft)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Scope is the scope recorded in the basis of version n of table, by partition start; ok is
// false when no basis is recorded (a version not built by a run, or not prepared yet).
func (s Store) Scope(ctx context.Context, target, table string, n int) ([]time.Time, bool, error) {
	m, ok, err := s.marks(ctx, target, table, n, markBasis)
	if err != nil || !ok {
		return nil, ok, err
	}
	out := make([]time.Time, 0, len(m.Scope))
	for _, l := range m.Scope {
		t, err := time.Parse(time.RFC3339, l)
		if err != nil {
			return nil, false, err
		}
		out = append(out, t)
	}
	return out, true, nil
}

// The fingerprints of a version as trueup built it (issue #22 §2): the partitions a backfill run
// wrote, recorded as it wrote them (markWritten, one entry per partition before its checkpoint
// says done, so a done partition's entry is of the rows that attempt wrote), and, once every
// partition is built, the version's whole fingerprint (markBuilt): the partitions it carried from
// live, as the basis measured them when live did not change during the carry, and the ones it
// wrote, with the engine's write mark of the version at that moment. A diff uses the built mark
// instead of reading the version only while the write mark is still the engine's (Fingerprints).
const (
	markWritten = "written"
	markBuilt   = "built"
)

// RecordWritten records the fingerprints of partitions version n of table was just written with,
// over those recorded before. The caller serialises calls for one version.
func (s Store) RecordWritten(ctx context.Context, target, table string, n int, column, grain string, typ tsql.Type, parts map[time.Time]tsql.PartMark) error {
	m, ok, err := s.marks(ctx, target, table, n, markWritten)
	if err != nil {
		return err
	}
	if !ok {
		m = Marks{Column: column, Type: typ, Grain: grain, Parts: map[string]tsql.PartMark{}}
	}
	for t, pm := range parts {
		m.Parts[label(t)] = pm
	}
	return s.saveMarks(ctx, nil, target, table, n, markWritten, m)
}

// CarriedExactly records in version n's basis that the partitions outside the scope were
// carried into it exactly as the basis measured them: live's write mark did not move from before
// the measure to after the carry. Only then are they the version's fingerprints (RecordBuilt).
func (s Store) CarriedExactly(ctx context.Context, target, table string, n int) error {
	m, ok, err := s.marks(ctx, target, table, n, markBasis)
	if err != nil || !ok {
		return err
	}
	m.Carried = true
	return s.saveMarks(ctx, nil, target, table, n, markBasis, m)
}

// RecordBuilt records the fingerprint of version n of table once its run built every partition:
// its written partitions and, when outside is true (the run carried live's other partitions into
// it), the basis's partitions outside the scope, with the version's write mark now. A basis not
// carried exactly (CarriedExactly) leaves the mark partial. Without a write mark (an engine or a
// table state that has none) nothing is recorded: the fingerprint could not be trusted later.
func (s Store) RecordBuilt(ctx context.Context, e tsql.Engine, target, table string, n int, outside bool) error {
	written, ok, err := s.marks(ctx, target, table, n, markWritten)
	if err != nil || !ok {
		return err
	}
	wm, err := tsql.SettledWriteMark(ctx, e, Physical(table, n))
	if err != nil || wm == "" {
		return err
	}
	built := Marks{Column: written.Column, Type: written.Type, Grain: written.Grain, Parts: map[string]tsql.PartMark{}, WriteMark: wm,
		Of: Physical(table, n)}
	if outside {
		basis, hasBasis, err := s.marks(ctx, target, table, n, markBasis)
		if err != nil {
			return err
		}
		built.Partial = !hasBasis || !basis.Carried
		for l, pm := range basis.Parts {
			if !basis.inScope(l) {
				built.Parts[l] = pm
			}
		}
		built.Scope = basis.Scope
	}
	for l, pm := range written.Parts {
		if pm.Rows > 0 {
			built.Parts[l] = pm
		} else {
			delete(built.Parts, l)
		}
	}
	return s.saveMarks(ctx, nil, target, table, n, markBuilt, built)
}

// Fingerprints are version n of table's partitions as built, when they still describe it: its
// built mark is recorded, covers every partition, and the engine's write mark of the version is
// the one recorded with it (nothing wrote to it since, as far as the engine can tell: see
// tsql.Engine.WriteMark). ok is false otherwise, and then the version must be read.
func (s Store) Fingerprints(ctx context.Context, e tsql.Engine, target, table string, n int) (Marks, bool, error) {
	return s.unmoved(ctx, e, target, table, n, markBuilt, Physical(table, n))
}

// LiveFingerprints are live's partitions as version n of table's basis measured them (RecordBasis),
// when they still describe live: the basis measured live, the relation the view reads now, and
// live's write mark is the one taken before that measure. Then a validation of version n against
// live need not read live: nothing wrote to it since, as far as the engine can tell (on DuckDB
// its storage digest, see tsql.Engine.WriteMark; a pipeline's insert, delete or update moves it),
// and a reconcile.Spec with Rescan ignores them. ok is false otherwise, and then live must be read.
func (s Store) LiveFingerprints(ctx context.Context, e tsql.Engine, target, table string, n int, live string) (Marks, bool, error) {
	return s.unmoved(ctx, e, target, table, n, markBasis, live)
}

// unmoved is version n's mark of kind, when it is a whole fingerprint of relation (it measured it,
// every partition; a built mark from before Of was kept is of its version) and relation's write
// mark is still the one recorded with it.
func (s Store) unmoved(ctx context.Context, e tsql.Engine, target, table string, n int, kind, relation string) (Marks, bool, error) {
	m, ok, err := s.marks(ctx, target, table, n, kind)
	if err != nil || !ok || m.Partial || m.WriteMark == "" || (m.Of != "" && m.Of != relation) {
		return Marks{}, false, err
	}
	now, err := tsql.SettledWriteMark(ctx, e, relation)
	if err != nil {
		return Marks{}, false, err
	}
	if now != m.WriteMark {
		return Marks{}, false, nil
	}
	return m, true, nil
}

// Starts is m's partitions by start, the NULL partition's by the zero time (as
// tsql.MeasurePartitions keys them).
func (m Marks) Starts() (map[time.Time]tsql.PartMark, error) {
	out := make(map[time.Time]tsql.PartMark, len(m.Parts))
	for l, pm := range m.Parts {
		if l == nullLabel {
			out[time.Time{}] = pm
			continue
		}
		t, err := time.Parse(time.RFC3339, l)
		if err != nil {
			return nil, fmt.Errorf("views: partition %q in a mark: %w", l, err)
		}
		out[t] = pm
	}
	return out, nil
}

// Checksum is the sum modulo 2^64 of m's partitions' row-hash sums: the checksum of a version
// whose fingerprints m are (the engine's fingerprint hash, not the portable one of an adopt).
func (m Marks) Checksum() uint64 {
	var sum uint64
	for _, pm := range m.Parts {
		n, _ := strconv.ParseUint(pm.Sum, 10, 64)
		sum += n
	}
	return sum
}
