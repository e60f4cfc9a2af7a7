package reconcile

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
	"trueup/fault"

	tsql "trueup/sql"
)

// plan is a Spec checked against both relations' columns.
type plan struct {
	spec     Spec
	cross    bool // the sides live in different engines: nothing is joined inside an engine
	key      []pair
	part     *pair  // nil: the relations are compared whole
	grain    string // Spec.Grain when it groups values into partitions (grain.go); "" otherwise
	measures []pair
	compared []pair // key columns, then the partition column, then the rest in the old side's order
	tol      map[string]Tolerance
	prec     []colPrecision // per compared column
	values   []any          // Spec.Partitions read as the partition column's type
	expect   *Expectations  // Spec.Expect with its ranges read; nil when none
	schema   Schema
	rel      [2][]tsql.Column // each side's columns, in its order
	fp       *fingerprinting  // nil: every summary is read (see fingerprints.go)
}

// partitionKinds are the column types a diff can partition by.
var partitionKinds = map[tsql.Type]bool{tsql.TypeDate: true, tsql.TypeTimestamp: true, tsql.TypeInt: true, tsql.TypeString: true}

func resolve(ctx context.Context, spec Spec) (*plan, error) {
	if spec.Old.Engine == nil || spec.New.Engine == nil {
		return nil, badInput("both sides need an engine")
	}
	if spec.Old.Relation == "" || spec.New.Relation == "" {
		return nil, badInput("both sides need a relation (--old and --new)")
	}
	if len(spec.Key) == 0 {
		return nil, badInput("a key is needed to match rows (--key)")
	}
	oldCols, err := columns(ctx, spec.Old, "old")
	if err != nil {
		return nil, err
	}
	newCols, err := columns(ctx, spec.New, "new")
	if err != nil {
		return nil, err
	}
	p := &plan{spec: spec, cross: spec.Old.Engine != spec.New.Engine, tol: map[string]Tolerance{}, rel: [2][]tsql.Column{oldCols, newCols}}
	renamed, err := mapColumns(spec, oldCols, newCols)
	if err != nil {
		return nil, err
	}
	// inNew finds an old column's counterpart in the new relation: by its mapped name, else by
	// its own unless that name is another column's new name.
	inNew := func(old string) (tsql.Column, bool) {
		if n, ok := renamed.to[old]; ok {
			return findColumn(newCols, n)
		}
		n, ok := findColumn(newCols, old)
		if ok && renamed.from[n.Name] != "" {
			return tsql.Column{}, false
		}
		return n, ok
	}

	both := func(what, name string) (pair, error) {
		o, ok := findColumn(oldCols, name)
		if !ok {
			return pair{}, badInput("%s %q: no such column in old relation %s", what, name, spec.Old.Relation)
		}
		n, ok := inNew(o.Name)
		if !ok {
			return pair{}, badInput("%s %q: no such column in new relation %s", what, name, spec.New.Relation)
		}
		return pair{Name: o.Name, Old: o, New: n}, nil
	}
	taken := map[string]bool{}
	for _, k := range spec.Key {
		c, err := both("key column", k)
		if err != nil {
			return nil, err
		}
		if c.Old.Kind != c.New.Kind {
			return nil, badInput("key column %q is %s in old and %s in new: rows cannot be matched", k, c.Old.Type, c.New.Type)
		}
		if taken[c.Name] {
			return nil, badInput("key column %q named twice", k)
		}
		taken[c.Name] = true
		p.key = append(p.key, c)
	}
	if spec.Partition != "" {
		c, err := both("partition column", spec.Partition)
		if err != nil {
			return nil, err
		}
		if !partitionKinds[c.Old.Kind] || !partitionKinds[c.New.Kind] {
			return nil, badInput("partition column %q must be a date, timestamp, integer or string column (old %s, new %s)", c.Name, c.Old.Type, c.New.Type)
		}
		if c.Old.Kind != c.New.Kind {
			return nil, badInput("partition column %q is %s in old and %s in new: partitions cannot be matched", c.Name, c.Old.Type, c.New.Type)
		}
		p.part = &c
	}
	for _, name := range spec.Ignore {
		if _, ok := findColumn(oldCols, name); ok {
			continue
		}
		if _, ok := findColumn(newCols, name); !ok {
			return nil, badInput("ignored column %q: in neither relation", name)
		}
	}
	for _, c := range p.key {
		if contains(spec.Ignore, c.Name) {
			return nil, badInput("key column %q cannot be ignored", c.Name)
		}
	}
	if p.part != nil && contains(spec.Ignore, p.part.Name) {
		return nil, badInput("partition column %q cannot be ignored", p.part.Name)
	}

	measures := append([]string(nil), spec.Measures...)
	if spec.Expect != nil {
		for _, m := range spec.Expect.measures() {
			if !contains(measures, m) {
				measures = append(measures, m)
			}
		}
	}
	for _, m := range measures {
		c, err := both("measure", m)
		if err != nil {
			return nil, err
		}
		if !c.Old.Kind.Numeric() || !c.New.Kind.Numeric() {
			return nil, badInput("measure %q must be numeric (old %s, new %s)", m, c.Old.Type, c.New.Type)
		}
		p.measures = append(p.measures, c)
	}

	for _, name := range spec.Columns {
		if _, err := both("--columns column", name); err != nil {
			return nil, err
		}
	}
	// left out: ignored, or not among --columns (the key and the partition column never are)
	leftOut := func(name string) bool {
		return contains(spec.Ignore, name) || (len(spec.Columns) > 0 && !contains(spec.Columns, name) && !taken[name])
	}

	p.compared = append(p.compared, p.key...)
	if p.part != nil && !taken[p.part.Name] {
		p.compared = append(p.compared, *p.part)
		taken[p.part.Name] = true
	}
	matched := map[string]bool{} // the new relation's columns that have an old counterpart
	for _, o := range oldCols {
		n, ok := inNew(o.Name)
		switch {
		case !ok:
			p.schema.Removed = append(p.schema.Removed, ColumnInfo{Name: o.Name, Type: o.Type, Ignored: leftOut(o.Name)})
			continue
		case o.Kind != n.Kind || (!p.cross && baseType(o.Type) != baseType(n.Type)):
			p.schema.Changed = append(p.schema.Changed, TypeChange{Name: o.Name, OldType: o.Type, NewType: n.Type})
		}
		matched[n.Name] = true
		if !taken[o.Name] && !leftOut(o.Name) {
			p.compared = append(p.compared, pair{Name: o.Name, Old: o, New: n})
			taken[o.Name] = true
		}
	}
	for _, n := range newCols {
		if !matched[n.Name] {
			p.schema.Added = append(p.schema.Added, ColumnInfo{Name: n.Name, Type: n.Type, Ignored: leftOut(n.Name) || len(spec.Columns) > 0})
		}
	}

	for name, t := range spec.Tolerance {
		if name == AnyColumn {
			continue
		}
		c, err := both("tolerance column", name)
		if err != nil {
			return nil, err
		}
		if !c.Old.Kind.Numeric() || !c.New.Kind.Numeric() {
			return nil, badInput("tolerance column %q must be numeric (old %s, new %s)", name, c.Old.Type, c.New.Type)
		}
		p.tol[c.Name] = t
	}
	if t, ok := spec.Tolerance[AnyColumn]; ok {
		for _, c := range p.compared {
			_, own := p.tol[c.Name]
			if !own && (isFractional(c.Old.Kind) || isFractional(c.New.Kind)) {
				p.tol[c.Name] = t
			}
		}
	}

	if err := p.resolvePrecision(); err != nil {
		return nil, err
	}
	if err := p.checkWhere(ctx); err != nil {
		return nil, err
	}

	if len(spec.Partitions) > 0 || len(spec.Windows) > 0 {
		if p.part == nil {
			return nil, badInput("restricting a diff to partitions needs a partition column")
		}
	}
	if err := p.resolveGrain(); err != nil {
		return nil, err
	}
	for _, s := range spec.Partitions {
		v, err := parseValue(p.part.Old.Kind, s)
		if err != nil {
			return nil, badInput("partition %q: %v", s, err)
		}
		p.values = append(p.values, p.partOf(v))
	}
	if spec.Expect != nil {
		if p.expect, err = spec.Expect.resolve(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// resolvePrecision reads each compared column's precision from its declared types, then applies
// Spec.Precision.
func (p *plan) resolvePrecision() error {
	p.prec = make([]colPrecision, len(p.compared))
	for i, c := range p.compared {
		p.prec[i] = precisionOf(c, p.spec.scale())
	}
	for name, want := range p.spec.Precision {
		i := -1
		for j, c := range p.compared {
			if strings.EqualFold(c.Name, name) {
				i = j
			}
		}
		if i < 0 {
			return badInput("precision column %q: not a compared column", name)
		}
		c, cur := p.compared[i], p.prec[i]
		switch {
		case cur.time:
		case c.Old.Kind.Numeric() && c.New.Kind.Numeric() && (c.Old.Kind != tsql.TypeInt || c.New.Kind != tsql.TypeInt):
		default:
			return badInput("precision column %q must be a timestamp, float or decimal column (old %s, new %s)", name, c.Old.Type, c.New.Type)
		}
		if want.Digits < 0 {
			want.Digits = cur.Digits
		}
		if cur.Exact && !want.Float32 { // two DECIMALs: no finer than the digits they hold
			want.Exact, want.Digits = true, min(want.Digits, cur.Digits)
		}
		p.prec[i] = colPrecision{Precision: want, stated: true, time: cur.time, overridden: true}
	}
	return nil
}

func columns(ctx context.Context, s Side, which string) ([]tsql.Column, error) {
	cols, err := s.Engine.Columns(ctx, s.Relation)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, badInput("%s relation %s: not found in %s", which, s.Relation, s.target())
	}
	if err != nil {
		return nil, err
	}
	return cols, nil
}

func isFractional(t tsql.Type) bool { return t == tsql.TypeFloat || t == tsql.TypeDecimal }

// parseValue reads a partition value written as text in the partition column's type.
func parseValue(kind tsql.Type, s string) (any, error) {
	s = strings.TrimSpace(s)
	switch kind {
	case tsql.TypeDate:
		t, err := time.Parse("2006-01-02", s)
		if err != nil {
			return nil, errors.New("want a date like 2026-07-10")
		}
		return t, nil
	case tsql.TypeTimestamp:
		for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05", "2006-01-02"} {
			if t, err := time.Parse(layout, s); err == nil {
				return t.UTC(), nil
			}
		}
		return nil, errors.New("want a timestamp like 2026-07-10 13:00:00")
	case tsql.TypeInt:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, errors.New("want an integer")
		}
		return n, nil
	}
	return s, nil
}

// param binds a partition value as the partition column's type.
func (p *plan) param(v any) tsql.Param {
	switch p.part.Old.Kind {
	case tsql.TypeDate:
		return tsql.Date(tsql.AsTime(v))
	case tsql.TypeTimestamp:
		return tsql.Timestamp(tsql.AsTime(v))
	case tsql.TypeInt:
		return tsql.Int(tsql.AsInt64(v))
	}
	return tsql.String(tsql.AsText(v))
}

// column returns the column as one side has it.
func (c pair) side(new bool) tsql.Column {
	if new {
		return c.New
	}
	return c.Old
}

// selectExpr is how a compared column is read on one side. Inside one engine both sides are
// read in one UNION, so a column whose type differs is brought to a common one: numbers as
// doubles, anything else as text.
func (p *plan) selectExpr(d tsql.Dialect, c pair, new bool) string {
	x := readExpr(d, c, new)
	if !p.cross {
		x = d.Joinable(x, c.side(new)) // the row comparisons inside one engine join the sides
	}
	if c.uuid() || p.cross || c.sameType() || c.Old.Kind == tsql.TypeDecimal && c.New.Kind == tsql.TypeDecimal {
		return x // two DECIMALs of other scales: read exactly, compared at the coarser (equal)
	}
	if c.Old.Kind.Numeric() && c.New.Kind.Numeric() {
		return d.ToFloat(x)
	}
	if c.Old.Kind == c.New.Kind {
		return x
	}
	return d.ToText(x)
}

// readExpr is how a column's values leave an engine. A UUID is read as its canonical text on both
// sides, whatever the other side holds: DuckDB hands a UUID out as 16 raw bytes (no one can tell
// the row from them), and as text it matches a UUID held as a string on the other side, in one
// engine or across two, as the hashes already see it.
func readExpr(d tsql.Dialect, c pair, new bool) string {
	x := d.Quote(c.side(new).Name)
	if c.uuid() {
		return d.ToText(x)
	}
	return x
}

// hashColumns are the compared columns as one side hashes them: a column that is a number on
// both sides but of different kinds hashes as a float on both, so 5 and 5.0 agree. Inside one
// engine a column of other different kinds is compared as text (selectExpr), so it hashes as
// text on both sides: rows the row comparison finds equal hash alike, which the accounting of
// the rows it reads relies on (accountsFor). A boolean beside an integer hashes alike already.
func (p *plan) hashColumns(new bool) []tsql.Column {
	out := make([]tsql.Column, len(p.compared))
	for i, c := range p.compared {
		col := c.side(new)
		switch o, n := c.Old.Kind, c.New.Kind; {
		case o == n:
		case o.Numeric() && n.Numeric():
			col.Kind = tsql.TypeFloat
		case !p.cross && !(integral(o) && integral(n)):
			col.Kind = tsql.TypeString
		}
		out[i] = col
	}
	return out
}

// integral reports whether a kind hashes as an integer (a boolean as 0 or 1).
func integral(k tsql.Type) bool { return k == tsql.TypeInt || k == tsql.TypeBool }

// hashOptions: across engines the portable hash; inside one, the engine's fast hash with columns
// of the same type on both sides hashed as stored. Every column is hashed at its precision.
func (p *plan) hashOptions(new bool) tsql.HashOptions {
	opt := tsql.HashOptions{Portable: p.cross, Scale: p.spec.scale(), Precision: map[string]tsql.Precision{}}
	for i, c := range p.compared {
		if p.prec[i].stated {
			opt.Precision[c.side(new).Name] = p.prec[i].Precision
		}
		// The same type on both sides holds the same precision, so as stored it hashes exactly
		// what the row comparison compares, unless --precision asked for a coarser one.
		if !p.cross && c.sameType() && !p.prec[i].overridden {
			opt.Stored = append(opt.Stored, c.side(new).Name)
		}
	}
	return opt
}

func (p *plan) rowHash(d tsql.Dialect, new bool) string {
	return d.RowHash(p.hashColumns(new), p.hashOptions(new))
}

// keyHash is the portable hash of a row's key, used to split partitions into buckets that mean
// the same rows in both engines.
func (p *plan) keyHash(d tsql.Dialect, new bool) string {
	cols := make([]tsql.Column, len(p.key))
	for i, c := range p.key {
		cols[i] = c.side(new)
	}
	return d.RowHash(cols, tsql.HashOptions{Portable: true, Scale: p.spec.scale()})
}

// keyNotNull is the condition that leaves out rows whose key has a NULL ("" when none can).
func (p *plan) keyNotNull(d tsql.Dialect, new bool) string {
	return p.nullableKeyTest(d, new, " IS NOT NULL", " AND ")
}

// keyIsNull is the condition matching rows whose key has a NULL ("" when none can).
func (p *plan) keyIsNull(d tsql.Dialect, new bool) string {
	return p.nullableKeyTest(d, new, " IS NULL", " OR ")
}

// nullableKeyTest puts test after each key column of one side that may hold a NULL, joined by op.
func (p *plan) nullableKeyTest(d tsql.Dialect, new bool, test, op string) string {
	var conds []string
	for _, c := range p.key {
		if col := c.side(new); col.Nullable {
			conds = append(conds, d.Quote(col.Name)+test)
		}
	}
	return strings.Join(conds, op)
}

// nullableKey reports whether either side may hold a row whose key has a NULL.
func (p *plan) nullableKey() bool {
	for _, c := range p.key {
		if c.Old.Nullable || c.New.Nullable {
			return true
		}
	}
	return false
}

// summaryHash is the row hash the partition summary sums. The partition column is left out: every
// row of a partition holds the same value in it on both sides, so hashing it tells nothing —
// unless a grain makes a partition hold several of its values.
func (p *plan) summaryHash(d tsql.Dialect, new bool) string {
	cols, opt := p.summaryHashed(new)
	return d.RowHash(cols, opt)
}

// summaryHashed are the columns of one side that summaryHash hashes, as the relation has them,
// and how it hashes them: with fingerprints, as they are recorded.
func (p *plan) summaryHashed(new bool) ([]tsql.Column, tsql.HashOptions) {
	if p.fp != nil {
		cols := p.relation(new)
		return cols, tsql.FingerprintHashOptions(cols)
	}
	cols := p.hashColumns(new)
	if p.part != nil && p.grain == "" && len(cols) > 1 {
		kept := make([]tsql.Column, 0, len(cols)-1)
		for i, c := range p.compared {
			if c.Name != p.part.Name {
				kept = append(kept, cols[i])
			}
		}
		cols = kept
	}
	return cols, p.hashOptions(new)
}

// joinedSummaryHash is summaryHash of one side's values read out of an outer join under other
// names: as gives the name that holds each hashed column's value as its relation stores it.
func (p *plan) joinedSummaryHash(d tsql.Dialect, new bool, as func(name string) string) string {
	cols, opt := p.summaryHashed(new)
	renamed := make([]tsql.Column, len(cols))
	for i, c := range cols {
		renamed[i] = c
		renamed[i].Name = as(c.Name)
	}
	prec := make(map[string]tsql.Precision, len(opt.Precision))
	for n, x := range opt.Precision {
		prec[as(n)] = x
	}
	stored := make([]string, len(opt.Stored))
	for i, n := range opt.Stored {
		stored[i] = as(n)
	}
	opt.Precision, opt.Stored, opt.Joined = prec, stored, true
	return d.RowHash(renamed, opt)
}

func (p *plan) side(new bool) Side {
	if new {
		return p.spec.New
	}
	return p.spec.Old
}

// and joins conditions, skipping empty ones.
func and(conds ...string) string {
	var out []string
	for _, c := range conds {
		if c != "" {
			out = append(out, "("+c+")")
		}
	}
	return strings.Join(out, " AND ")
}

func where(conds ...string) string {
	if c := and(conds...); c != "" {
		return " WHERE " + c
	}
	return ""
}
