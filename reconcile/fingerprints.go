package reconcile

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	tsql "trueup/sql"
)

// Fingerprints: which partitions a diff must read. trueup records each partition of a version it
// builds as it writes or carries it (rows, row-hash sum, totals, NULLs: tsql.PartMark), and of the
// live version as a run measures it before carrying from it, and the caller passes a side's
// fingerprints only while it still trusts them (views.Store.Fingerprints and LiveFingerprints:
// the engine's write mark of the relation has not moved). Then:
//
//   - a side with fingerprints is not scanned: its summaries come from them;
//   - the other side, when it has none, is scanned once, its rows hashed as the fingerprints
//     hash them (every column as stored);
//   - a partition whose fingerprints match is confirmed identical without reading the side that
//     has them (ConfirmedBy), the others are read and compared row by row as ever.
//
// Fingerprints apply to a diff of two relations of one engine with the same columns, partitioned
// by a date column at a day grain, every column compared (no --where, --ignore, --columns or
// --map: the fingerprint covers the whole rows of the whole partition), unless Spec.Rescan.

// Fingerprints are one side's partitions as recorded: by partition start, at Grain along Column,
// the rows whose column is NULL by the zero time. They cover every partition of the relation
// that holds rows.
type Fingerprints struct {
	Column string
	Grain  string
	Parts  map[time.Time]tsql.PartMark
}

// ConfirmedByFingerprint is Partition.ConfirmedBy of a partition found identical from recorded
// fingerprints, at least one side of it not read.
const ConfirmedByFingerprint = "fingerprint"

// fingerprinting is what a plan knows from the sides' fingerprints.
type fingerprinting struct {
	known     [2]map[string]tsql.PartMark // by valueKey; nil for a side without fingerprints
	values    [2]map[string]any
	confirmed map[string]bool
}

func (p *plan) relation(new bool) []tsql.Column {
	if new {
		return p.rel[1]
	}
	return p.rel[0]
}

// useFingerprints sets p.fp when the sides' fingerprints can stand in for reading them.
func (p *plan) useFingerprints() bool {
	spec := p.spec
	if spec.Rescan || p.cross || p.part == nil || p.grain != "" || p.part.Old.Kind != tsql.TypeDate || strings.TrimSpace(spec.Where) != "" ||
		len(spec.Ignore) > 0 || len(spec.Columns) > 0 || len(spec.Map) > 0 || !sameLayout(p.rel[0], p.rel[1]) {
		return false
	}
	f := &fingerprinting{confirmed: map[string]bool{}}
	used := false
	for s, side := range []Side{spec.Old, spec.New} {
		fp := side.Fingerprints
		if fp == nil || fp.Grain != "day" || !strings.EqualFold(fp.Column, p.part.Name) {
			continue
		}
		f.known[s], f.values[s] = map[string]tsql.PartMark{}, map[string]any{}
		for t, pm := range fp.Parts {
			var v any // the zero time: the rows whose column is NULL
			if !t.IsZero() {
				v = partValue(tsql.TypeDate, t)
			}
			if pm.Rows == 0 || !p.restrictedTo(v) {
				continue
			}
			k := valueKey(v)
			f.known[s][k], f.values[s][k] = pm, v
		}
		used = true
	}
	if used {
		p.fp = f
	}
	return used
}

// sameLayout reports whether two relations have the same columns, in the same order, of the
// same types: then one fingerprint hash means the same rows in both.
func sameLayout(a, b []tsql.Column) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || baseType(a[i].Type) != baseType(b[i].Type) {
			return false
		}
	}
	return true
}

// restrictedTo reports whether partition value v is among those the spec compares.
func (p *plan) restrictedTo(v any) bool {
	if len(p.spec.Windows) == 0 && len(p.values) == 0 {
		return true
	}
	t, _ := v.(time.Time)
	for _, w := range p.spec.Windows {
		if !t.Before(w.Start) && t.Before(w.End) {
			return true
		}
	}
	k := valueKey(v)
	for _, x := range p.values {
		if valueKey(x) == k {
			return true
		}
	}
	return false
}

// summarizeKnown is summarize with fingerprints: the sides without them are read once (one
// statement), the partitions of a side with them come from its fingerprints, or from the other
// side's summary where the fingerprints match it, or, failing both (a measure or NULL count not
// recorded), are read, just those.
func (p *plan) summarizeKnown(ctx context.Context) ([2]map[string]*summary, error) {
	out := [2]map[string]*summary{{}, {}}
	var read []bool
	for s, known := range p.fp.known {
		if known == nil {
			read = append(read, s == 1)
		}
	}
	if err := p.readSummaries(ctx, out, read, nil); err != nil {
		return out, err
	}
	var need [2][]string
	for s, known := range p.fp.known {
		for k, pm := range known {
			if sm, ok := p.fromMark(pm, p.fp.values[s][k], s == 1); ok {
				out[s][k] = sm
			} else {
				need[s] = append(need[s], k)
			}
		}
	}
	for s := range 2 {
		var only []any
		for _, k := range need[s] {
			pm := p.fp.known[s][k]
			if o, ok := out[1-s][k]; ok && o.count == pm.Rows && o.hash == sumOf(pm) {
				c := *o
				out[s][k] = &c // the same rows: the same counts and totals
				continue
			}
			only = append(only, p.fp.values[s][k])
		}
		if len(only) > 0 {
			if err := p.readSummaries(ctx, out, []bool{s == 1}, only); err != nil {
				return out, err
			}
		}
	}
	for k, o := range out[0] {
		_, a := p.fp.known[0][k]
		_, b := p.fp.known[1][k]
		if n, ok := out[1][k]; ok && (a || b) && o.count == n.count && o.hash == n.hash {
			p.fp.confirmed[k] = true
		}
	}
	return out, nil
}

// readSummaries scans the sides news names (false old, true new) in one statement, every
// partition or, with only, those.
func (p *plan) readSummaries(ctx context.Context, out [2]map[string]*summary, news []bool, only []any) error {
	if len(news) == 0 {
		return nil
	}
	q := p
	if only != nil {
		c := *p
		c.spec.Windows, c.values = nil, only
		q = &c
	}
	e := p.spec.Old.Engine
	d := e.Dialect()
	b := newBinder()
	texts := make([]string, len(news))
	for i, new := range news {
		texts[i] = q.summarySelect(d, b, new, true)
	}
	text, args, err := b.expand(d, strings.Join(texts, " UNION ALL "))
	if err != nil {
		return err
	}
	err = e.Each(ctx, text, args, func(row []any) error {
		p.addSummary(out[tsql.AsInt64(row[0])], row[1:])
		return nil
	})
	if err != nil {
		return fmt.Errorf("reconcile: summarise %s and %s: %w", p.spec.Old.Relation, p.spec.New.Relation, err)
	}
	return nil
}

// fromMark is a partition's summary from its fingerprint, when it records what the diff needs.
func (p *plan) fromMark(pm tsql.PartMark, v any, new bool) (*summary, bool) {
	sm := &summary{value: v, count: pm.Rows, hash: sumOf(pm)}
	if p.nullableKey() {
		for _, k := range p.key {
			n := pm.Nulls[k.side(new).Name]
			if n > 0 && len(p.key) > 1 {
				return nil, false // rows with a NULL in one column of the key, or in two: not recorded
			}
			sm.nullKeys += n
		}
	}
	for _, m := range p.measures {
		t, ok := pm.Totals[m.side(new).Name]
		if !ok {
			return nil, false
		}
		sm.sums = append(sm.sums, t)
	}
	return sm, true
}

func sumOf(pm tsql.PartMark) uint64 {
	n, _ := strconv.ParseUint(pm.Sum, 10, 64)
	return n
}

// markConfirmed says which partitions the fingerprints confirmed.
func (p *plan) markConfirmed(r *Result, parts []*Partition) {
	if p.fp == nil {
		return
	}
	for s, known := range p.fp.known {
		if known != nil {
			r.Fingerprints = append(r.Fingerprints, [2]string{"old", "new"}[s])
		}
	}
	for _, pt := range parts {
		if pt.ChecksumMatch && p.fp.confirmed[valueKey(pt.value)] {
			pt.ConfirmedBy = ConfirmedByFingerprint
		}
	}
}
