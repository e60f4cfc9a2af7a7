package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"trueup/fault"
	tsql "trueup/sql"
)

// maxSampledSidePartitions bounds how many one-sided partitions are sampled (one query each).
const maxSampledSidePartitions = 20

// Diff compares spec.Old with spec.New: one partition scan per side for counts, measure totals
// and row-hash checksums; a row-level comparison only of the partitions whose checksums differ;
// then each partition is judged against spec.Expect. An invalid error (fault) means the diff
// could not run as asked; differences are findings in the Result, not errors.
func Diff(ctx context.Context, spec Spec) (*Result, error) {
	r, err := diff(ctx, spec)
	return r, cannotRun(err)
}

// cannotRun gives an engine's error while a diff runs (a Binder error, a type it cannot compare,
// a query failing on the data) the kind invalid: the diff could not run, which is no difference,
// so an edge answers it as unusable input with the engine's cause (exit 2), never as the exit 1
// of a difference. Errors of a kind keep theirs; a cancellation stays one.
func cannotRun(err error) error {
	if err == nil || fault.Of(err) != fault.None || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fault.Mark(fault.Invalid, err)
}

func diff(ctx context.Context, spec Spec) (*Result, error) {
	started := time.Now()
	p, err := resolve(ctx, spec)
	if err != nil {
		return nil, err
	}
	shards, err := p.shardsOf(ctx)
	if err != nil {
		return nil, err
	}
	var sums [2]map[string]*summary
	if shards != nil {
		sums, err = p.summarizeShards(ctx, shards)
	} else {
		sums, err = p.summarize(ctx)
	}
	if err != nil {
		return nil, err
	}
	r := p.newResult(started)
	parts := p.comparePartitions(sums[0], sums[1])
	r.Partitions = parts
	p.markConfirmed(r, parts)

	var both, oneSided []*Partition
	var nullPart *Partition // the rows whose partition value is NULL, when they differ
	nullPartition := false
	for _, pt := range parts {
		nullPartition = nullPartition || (p.part != nil && pt.value == nil)
		switch {
		case pt.ChecksumMatch:
		case pt.Presence != PresenceBoth:
			oneSided = append(oneSided, pt)
		case p.part != nil && pt.value == nil:
			nullPart = pt
		default:
			both = append(both, pt)
		}
	}
	if nullPart != nil {
		n, err := p.diffNullPartition(ctx, r, nullPart)
		if err != nil {
			return nil, err
		}
		r.RowsTransferred += n
	}

	df := newDiffer(p)
	if len(both) > 0 {
		// Only differing partitions are joined; when that is every partition, no filter is
		// needed. (Rows of a NULL partition match nothing, so it must be filtered out.)
		everyPartition := len(both) == len(parts) && !nullPartition
		var n int64
		if shards != nil {
			n, err = p.rowDiffShards(ctx, df, shards, both)
		} else {
			n, err = p.rowDiff(ctx, df, both, everyPartition)
		}
		if err == nil {
			err = df.err
		}
		if err != nil {
			return nil, err
		}
		r.RowsTransferred += n
	}
	for _, pt := range both {
		pd := p.partDiffOf(df, pt)
		rows := pd.rows
		pt.Rows = &rows
		pt.ChangedColumns = df.changed(pd)
		pd.samples.setPartition(pt.Partition)
		if p.cross {
			pd.samples.sortByKey()
		}
		if !pd.samples.empty() {
			s := pd.samples
			pt.Samples = &s
		}
	}
	if err := p.settleNullKeys(ctx, both); err != nil {
		return nil, err
	}
	n, err := p.sampleOneSided(ctx, oneSided)
	if err != nil {
		return nil, err
	}
	r.RowsTransferred += n
	if p.nullableKey() {
		n, err := p.sampleNullKeys(ctx, parts)
		if err != nil {
			return nil, err
		}
		r.RowsTransferred += n
	}
	p.finish(r)
	r.ElapsedMS = time.Since(started).Milliseconds()
	return r, nil
}

// diffNullPartition compares the rows whose partition value is NULL on both sides row by row:
// a join on the partition column never matches them, so they are compared as a relation of
// their own, filtered to them, by key alone. It fills pt as the row pass fills a partition and
// returns the rows read out. A partition column named differently on each side (Spec.Map) can
// not be filtered by one condition: then the partition is noted, not compared.
func (p *plan) diffNullPartition(ctx context.Context, r *Result, pt *Partition) (int64, error) {
	if p.part.Old.Name != p.part.New.Name {
		r.Notes = append(r.Notes, "partition NULL differs but is not compared row by row: its column has another name on each side")
		return 0, nil
	}
	s := p.spec
	cond := tsql.QuoteBoth(p.part.Old.Name) + " IS NULL"
	if w := strings.TrimSpace(s.Where); w != "" {
		cond = "(" + w + ") AND " + cond
	}
	s.Where, s.Partition, s.Grain, s.Windows, s.Partitions, s.Scope, s.Expect = cond, "", "", nil, nil, nil, nil
	s.Old.Fingerprints, s.New.Fingerprints = nil, nil
	if rows := s.Rows; rows != nil {
		s.Rows = func(l RowLine) error {
			l.Partition = pt.Partition
			return rows(l)
		}
	}
	sub, err := diff(ctx, s)
	if err != nil {
		return 0, err
	}
	rows := sub.Rows
	pt.Rows = &rows
	pt.ChangedColumns = sub.ChangedColumns
	if len(pt.ChangedColumns) == 0 {
		pt.ChangedColumns = nil
	}
	samples := sub.Samples
	samples.setPartition(pt.Partition)
	if !samples.empty() {
		pt.Samples = &samples
	}
	return sub.RowsTransferred, nil
}

// rowDiff runs the row-level comparison of partitions present on both sides with different
// checksums, in one engine or across two.
func (p *plan) rowDiff(ctx context.Context, df *differ, parts []*Partition, everyPartition bool) (int64, error) {
	if p.cross {
		return p.rowDiffAcross(ctx, df, parts)
	}
	var values []any
	if !everyPartition {
		values = partValues(parts)
	}
	var n int64
	redo := parts
	if p.spec.Rows == nil {
		var err error
		n, redo, err = p.rowDiffWide(ctx, df, parts, values)
		if err != nil || len(redo) == 0 {
			return n, err
		}
		// Keys with several rows on a side: compare those partitions again, exactly.
		for _, pt := range redo {
			p.resetPart(df, pt)
		}
		values = partValues(redo)
	}
	// Streaming every row, the exact comparison runs first: a row streamed cannot be taken back
	// as the wide pass's findings in partitions with duplicate keys are.
	m, err := p.rowDiffExact(ctx, df, values)
	n += m
	if err != nil {
		return n, err
	}
	// Rows not read out belong to keys whose rows are all equal, on both sides; where the rows
	// read do not make up the partition's summary, some such key has its rows a different
	// number of times on each side.
	var unexplained []any
	for _, pt := range redo {
		if !p.partDiffOf(df, pt).accountsFor(pt) {
			unexplained = append(unexplained, pt.value)
		}
	}
	if len(unexplained) > 0 {
		if err := p.findDuplicates(ctx, df, unexplained); err != nil {
			return n, err
		}
	}
	return n, nil
}

func partValues(parts []*Partition) []any {
	out := make([]any, len(parts))
	for i, pt := range parts {
		out[i] = pt.value
	}
	return out
}

// sampleOneSided fills the row counts of partitions present on one side only and reads a few of
// their rows as samples.
func (p *plan) sampleOneSided(ctx context.Context, parts []*Partition) (int64, error) {
	var read int64
	df := newDiffer(p)
	for i, pt := range parts {
		new := pt.Presence == PresenceNewOnly
		if new {
			pt.Rows = &RowCounts{Added: pt.NewCount - pt.NewNullKeys}
		} else {
			pt.Rows = &RowCounts{Removed: pt.OldCount - pt.OldNullKeys}
		}
		if (i >= maxSampledSidePartitions && df.rows == nil) || (p.part != nil && pt.value == nil) {
			continue
		}
		side := p.side(new)
		d := side.Engine.Dialect()
		b := newBinder()
		sel := make([]string, len(p.compared))
		for j, c := range p.compared {
			sel[j] = readExpr(d, c, new)
		}
		// the first rows by key, so the same diff shows the same samples every time
		order := make([]string, len(p.key))
		for j, c := range p.key {
			order[j] = d.Quote(c.side(new).Name)
		}
		text := "SELECT " + strings.Join(sel, ", ") + " FROM " + d.QuoteRelation(side.Relation) +
			where(p.filter(), p.partFilter(d, b, new, []any{pt.value}), p.keyNotNull(d, new)) +
			" ORDER BY " + strings.Join(order, ", ")
		if df.rows == nil { // streaming reads every row, and keeps the first as samples
			text += fmt.Sprintf(" LIMIT %d", p.spec.samples())
		}
		q, args, err := b.expand(d, text)
		if err != nil {
			return read, err
		}
		var rows []Row
		err = side.Engine.Each(ctx, q, args, func(row []any) error {
			read++
			df.stream(new, row, 1)
			if len(rows) < p.spec.samples() {
				rows = append(rows, Row{Partition: pt.Partition, Key: df.keyOf(row), Values: df.valuesOf(row, new)})
			}
			return df.err
		})
		if err != nil {
			return read, fmt.Errorf("reconcile: sample rows of %s: %w", side.Relation, err)
		}
		s := &Samples{}
		if new {
			s.Added = rows
		} else {
			s.Removed = rows
		}
		if !s.empty() {
			s.setPartition(pt.Partition)
			pt.Samples = s
		}
	}
	return read, nil
}

// setPartition labels every sample with its partition and makes absent kinds empty lists, so the
// JSON says [] rather than null.
func (s *Samples) setPartition(label string) {
	for _, l := range []*[]Row{&s.Added, &s.Removed} {
		if *l == nil {
			*l = []Row{}
		}
	}
	if s.Changed == nil {
		s.Changed = []Change{}
	}
	if s.Duplicates == nil {
		s.Duplicates = []Duplicate{}
	}
	for i := range s.Added {
		s.Added[i].Partition = label
	}
	for i := range s.Removed {
		s.Removed[i].Partition = label
	}
	for i := range s.Changed {
		s.Changed[i].Partition = label
	}
	for i := range s.Duplicates {
		s.Duplicates[i].Partition = label
	}
}

func (p *plan) newResult(started time.Time) *Result {
	side := func(s Side) SideInfo {
		return SideInfo{Target: s.target(), Engine: s.Engine.Info().Kind, Relation: s.Relation}
	}
	r := &Result{
		Old:            side(p.spec.Old),
		New:            side(p.spec.New),
		CrossEngine:    p.cross,
		Started:        started.UTC(),
		Schema:         p.schema,
		ChangedColumns: map[string]int64{},
		Samples:        Samples{Added: []Row{}, Removed: []Row{}, Changed: []Change{}, Duplicates: []Duplicate{}},
	}
	for _, k := range p.key {
		r.Key = append(r.Key, k.Name)
	}
	if p.part != nil {
		r.PartitionColumn = p.part.Name
		r.Grain = p.grain
	}
	for _, m := range p.measures {
		r.Measures = append(r.Measures, m.Name)
	}
	for _, c := range p.compared {
		r.Compared = append(r.Compared, c.Name)
		if c.New.Name != c.Name && !strings.EqualFold(c.New.Name, c.Name) {
			if r.Renamed == nil {
				r.Renamed = map[string]string{}
			}
			r.Renamed[c.Name] = c.New.Name
		}
	}
	r.Where = strings.TrimSpace(p.spec.Where)
	if len(p.tol) > 0 {
		r.Tolerance = p.tol
	}
	for i, c := range p.compared {
		if p.prec[i].stated {
			if r.Precision == nil {
				r.Precision = map[string]string{}
			}
			r.Precision[c.Name] = p.prec[i].String()
		}
	}
	if p.spec.Expect != nil {
		r.Expectations = p.spec.Expect.Text
	}
	return r
}

// finish judges every partition and adds up the totals.
func (p *plan) finish(r *Result) {
	if r.Partitions == nil {
		r.Partitions = []*Partition{} // two empty sides: "partitions": [], not null
	}
	limit := p.spec.samples()
	r.ExpectationsMet = true
	for _, pt := range r.Partitions {
		pt.Verdict, pt.Reasons = p.expect.judge(p, pt)
		if pt.Verdict == VerdictUnexpected {
			r.ExpectationsMet = false
		}
		if pt.Verdict != VerdictUnchanged {
			r.Differs = true
		}
		if pt.Rows != nil {
			r.Rows.add(*pt.Rows)
		}
		for c, n := range pt.ChangedColumns {
			r.ChangedColumns[c] += n
		}
		if s := pt.Samples; s != nil {
			r.Samples.Added = appendUpTo(r.Samples.Added, s.Added, limit)
			r.Samples.Removed = appendUpTo(r.Samples.Removed, s.Removed, limit)
			r.Samples.Changed = appendUpTo(r.Samples.Changed, s.Changed, limit)
			r.Samples.Duplicates = appendUpTo(r.Samples.Duplicates, s.Duplicates, limit)
		}
	}
	if r.Schema.Differs() {
		r.Differs = true
		r.ExpectationsMet = false
		r.Notes = append(r.Notes, "columns were added or removed: compare them with --ignore if that is intended")
	}
	sort.Strings(r.Notes)
}

func appendUpTo[T any](dst, src []T, limit int) []T {
	if room := limit - len(dst); room > 0 {
		if len(src) > room {
			src = src[:room]
		}
		dst = append(dst, src...)
	}
	return dst
}

// Differing lists the labels of the partitions that differ, in order: what a caller passes back
// in Spec.Partitions to rerun a diff on just those.
func (r *Result) Differing() []string {
	var out []string
	for _, p := range r.Partitions {
		if p.Verdict != VerdictUnchanged {
			out = append(out, p.Partition)
		}
	}
	return out
}
