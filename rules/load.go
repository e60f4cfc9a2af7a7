package rules

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"trueup/fault"

	tsql "trueup/sql"
)

// Targets gives the engine of a named target; "" names the default target.
type Targets interface {
	Engine(name string) (tsql.Engine, error)
	// Name is how results and snapshots name the target a rule with the given target: key runs
	// on: the key itself, or for a rule without one "" (the configured default) or the target
	// chosen instead of it.
	Name(target string) string
}

// TargetMap is Targets over a fixed set of open engines.
type TargetMap struct {
	Default string
	Engines map[string]tsql.Engine
	// Chosen names the target picked for this run instead of the configured default (trueup
	// --target), "" when there is none. Such a run is recorded but is not the rules' monitored
	// state: it moves no state and raises no alert.
	Chosen string
}

// Name implements Targets.
func (m TargetMap) Name(target string) string {
	if target != "" {
		return target
	}
	return m.Chosen
}

// Engine implements Targets.
func (m TargetMap) Engine(name string) (tsql.Engine, error) {
	if name == "" {
		name = m.Default
	}
	if e, ok := m.Engines[name]; ok {
		return e, nil
	}
	names := slices.Sorted(maps.Keys(m.Engines))
	return nil, fmt.Errorf("unknown target %q (have %s)", name, strings.Join(names, ", "))
}

// Set is a validated rule set.
type Set struct {
	Rules []*Rule

	// mu guards Rules for a set that Replace changes while Get and Select read it: the one a
	// serving process's backfills validate with, reloaded on SIGHUP. Who reads Rules itself
	// holds a set nothing replaces.
	mu sync.RWMutex
}

// Replace makes s the rules of from, for who looks them up through Get and Select from now on.
func (s *Set) Replace(from *Set) {
	rules := from.list()
	s.mu.Lock()
	s.Rules = rules
	s.mu.Unlock()
}

// list is s's rules as they are now.
func (s *Set) list() []*Rule {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.Rules
}

// Load parses every rule file in fsys and validates the rules against their targets: relations
// and columns exist, SQL prepares. Every problem is reported at once, as a *LoadError.
func Load(ctx context.Context, fsys fs.FS, prefix string, targets Targets) (*Set, error) {
	rules, err := ParseFS(fsys, prefix)
	var problems []Problem
	var le *LoadError
	if errors.As(err, &le) {
		problems = le.Problems
	} else if err != nil {
		return nil, err
	}
	problems = append(problems, Validate(ctx, rules, targets)...)
	if len(problems) > 0 {
		sortProblems(problems)
		return nil, &LoadError{problems}
	}
	return &Set{Rules: rules}, nil
}

// Get returns a rule by name.
func (s *Set) Get(name string) (*Rule, error) { return get(s.list(), name) }

func get(rules []*Rule, name string) (*Rule, error) {
	for _, r := range rules {
		if r.Name == name {
			return r, nil
		}
	}
	return nil, fmt.Errorf("rules: %w", NotFound(name))
}

// Select returns the rules named in names (all when empty) that carry one of tags (any when empty).
func (s *Set) Select(names, tags []string) ([]*Rule, error) {
	rules := s.list()
	want := map[string]bool{}
	for _, n := range names {
		if _, err := get(rules, n); err != nil {
			return nil, err
		}
		want[n] = true
	}
	var out []*Rule
	for _, r := range rules {
		if len(want) > 0 && !want[r.Name] {
			continue
		}
		if len(tags) > 0 && !r.HasTag(tags...) {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// HasTag reports whether the rule carries any of tags.
func (r *Rule) HasTag(tags ...string) bool {
	for _, t := range tags {
		for _, have := range r.Tags {
			if have == t {
				return true
			}
		}
	}
	return false
}

// Validate checks parsed rules against their engines and returns the problems. Rules whose
// files already had problems are skipped, so one mistake is not reported twice.
func Validate(ctx context.Context, rules []*Rule, targets Targets) []Problem {
	v := &validator{ctx: ctx, targets: targets, cols: map[string][]tsql.Column{}, missing: map[string]error{}}
	for _, r := range rules {
		if !r.broken {
			v.rule(r)
		}
	}
	return v.problems
}

type validator struct {
	ctx      context.Context
	targets  Targets
	cols     map[string][]tsql.Column
	missing  map[string]error
	problems []Problem
}

func (v *validator) bad(r *Rule, key string, format string, args ...any) {
	line := r.lines[key]
	if key == "body" {
		line = r.BodyLine
	}
	if key == "reference" {
		line = r.Reference.Line
	}
	if line == 0 {
		line = max(r.first, 1)
	}
	v.problems = append(v.problems, Problem{Path: r.Path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// columns lists a relation's columns once per validation.
func (v *validator) columns(target string, e tsql.Engine, rel string) ([]tsql.Column, error) {
	key := target + "\x00" + rel
	if cols, ok := v.cols[key]; ok {
		return cols, nil
	}
	if err, ok := v.missing[key]; ok {
		return nil, err
	}
	cols, err := e.Columns(v.ctx, rel)
	if err != nil {
		v.missing[key] = err
		return nil, err
	}
	v.cols[key] = cols
	return cols, nil
}

func findColumn(cols []tsql.Column, name string) (tsql.Column, bool) {
	for _, c := range cols {
		if c.Name == name {
			return c, true
		}
	}
	return tsql.Column{}, false
}

func columnNames(cols []tsql.Column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

func (v *validator) relation(r *Rule, key, target, rel string) (tsql.Engine, []tsql.Column, bool) {
	e, err := v.targets.Engine(target)
	if err != nil {
		tk := "target"
		switch key {
		case "reference":
			tk = "reference_target"
		case "compare_to":
			tk = "compare_to_target"
		}
		v.bad(r, tk, "%v", err)
		return nil, nil, false
	}
	if rel == "" {
		return e, nil, true
	}
	cols, err := v.columns(target, e, rel)
	if errors.Is(err, fault.ErrNotFound) {
		v.bad(r, key, "%s %s does not exist in %s", key, rel, e.Info().Target)
		return e, nil, false
	}
	if err != nil {
		v.bad(r, key, "%s %s: %s", key, rel, fault.FirstLine(err.Error()))
		return e, nil, false
	}
	return e, cols, true
}

func (v *validator) column(r *Rule, key, rel string, cols []tsql.Column, name string) (tsql.Column, bool) {
	if name == "" {
		return tsql.Column{}, false
	}
	c, ok := findColumn(cols, name)
	if !ok {
		v.bad(r, key, "%s %s is not a column of %s (it has %s)", key, name, rel, columnNames(cols))
	}
	return c, ok
}

func (v *validator) check(r *Rule, key string, e tsql.Engine, query string) bool {
	if err := e.Check(v.ctx, query); err != nil {
		v.unprepared(r, key, e, err)
		return false
	}
	return true
}

// resultColumns prepares a rule's SELECT and returns the names of its result columns, as the
// run will see them: it reads none of the data (LIMIT 0), wrapped as the run wraps it.
func (v *validator) resultColumns(r *Rule, key string, e tsql.Engine, query string) ([]string, bool) {
	res, err := e.Query(v.ctx, limited(query, 0))
	if err != nil {
		// the engine's Check says it of the query itself where the wrapper muddles it (a query
		// cut short fails at the wrapper's ")" on DuckDB)
		if cerr := e.Check(v.ctx, query); cerr != nil {
			err = cerr
		}
		v.unprepared(r, key, e, err)
		return nil, false
	}
	return res.Columns, true
}

func (v *validator) unprepared(r *Rule, key string, e tsql.Engine, err error) {
	what := key
	if key == "body" {
		what = "the SELECT"
	}
	v.bad(r, key, "%s does not prepare in %s: %s", what, e.Info().Target, engineMessage(err))
}

func (v *validator) rule(r *Rule) {
	e, cols, ok := v.relation(r, "table", r.Target, r.Table)
	if !ok {
		return
	}
	d := e.Dialect()
	if r.Kind == Custom {
		// its partition names a column of the SELECT's result, not of a table
		cols, ok := v.resultColumns(r, "body", e, r.Body)
		if ok && r.Partition != "" && !slices.Contains(cols, r.Partition) {
			v.bad(r, "partition", "partition %s is not a column of the SELECT's result (it has %s)", r.Partition, strings.Join(cols, ", "))
		}
		return
	}
	partitionOK := false
	if pc, ok := v.column(r, "partition", r.Table, cols, r.Partition); ok {
		partitionOK = true
		r.partitionType = pc.Kind
		if r.Expect != nil && !pc.Kind.Temporal() {
			v.bad(r, "expect", "expect needs a date or timestamp partition; %s is %s", r.Partition, pc.Type)
		}
	}
	for _, name := range r.Columns {
		if c, ok := v.column(r, "columns", r.Table, cols, name); ok && len(r.Columns) == 1 {
			r.keyType = c.Kind
		}
	}
	for _, c := range r.NotNull {
		v.column(r, "not_null", r.Table, cols, c)
	}
	v.column(r, "dimension", r.Table, cols, r.Dimension)
	for _, g := range r.GroupBy {
		v.column(r, "group_by", r.Table, cols, g)
	}
	columnOK := r.Column == ""
	if c, ok := v.column(r, "column", r.Table, cols, r.Column); ok {
		columnOK = true
		r.columnType = c.Kind
		if r.Kind == Freshness && !c.Kind.Temporal() {
			v.bad(r, "column", "freshness needs a date or timestamp column; %s is %s", r.Column, c.Type)
		}
	}
	if r.Kind == Pattern && r.Column != "" && columnOK && r.columnType != tsql.TypeString {
		v.bad(r, "column", "pattern needs a text column; %s is %s", r.Column, columnType(cols, r.Column))
		columnOK = false
	}
	// a condition on rows, not on groups: an aggregate passes as a truth value but not in WHERE
	whereOK := r.Where == "" || (v.boolean(r, "where", e, r.Where) &&
		v.check(r, "where", e, "SELECT count(*) FROM "+d.QuoteRelation(r.Table)+" WHERE "+andWhere(r.Where, "")))
	exprOK := r.Expr == "" || v.boolean(r, "expression", e, r.Expr)
	if cond := violation(d, r); cond != "" && whereOK && exprOK && columnOK {
		key := map[Kind]string{AcceptedValues: "values", AcceptedRange: "min", Expression: "expression", Pattern: "regex"}[r.Kind]
		if key == "min" && r.Min == "" {
			key = "max"
		}
		v.check(r, key, e, "SELECT "+d.CountIf("("+cond+")")+" FROM "+d.QuoteRelation(r.Table))
	}
	measureOK := true
	if r.Measure != "" && (partitionOK || r.Partition == "") {
		measureOK = v.check(r, "measure", e, groupedSQL(d, r.Table, r.groupKeys(d, r.Partition, r.partitionType), r.Measure))
	}
	if r.Kind == Relationships {
		if _, pcols, ok := v.relation(r, "parent", r.Target, r.Parent); ok {
			if pc, ok := v.column(r, "parent_column", r.Parent, pcols, r.ParentCol); ok {
				r.parentType = pc.Kind
				if d.FusesLookupJoin() && (r.columnType != tsql.TypeInt || pc.Kind != tsql.TypeInt) {
					// a small parent joins the table's scan (lookupJoin); a count the engine
					// answers from metadata says whether it is small
					res, err := e.Query(v.ctx, "SELECT count(*) FROM "+d.QuoteRelation(r.Parent))
					if err != nil {
						v.bad(r, "parent", "parent %s: %s", r.Parent, engineMessage(err))
					} else if len(res.Rows) == 1 {
						r.parentRows, r.parentCounted = tsql.AsInt64(res.Rows[0][0]), true
					}
				}
			}
		}
	}
	if r.Kind == Uniqueness {
		v.sharding(r, e)
	}
	if r.Reference.IsSet() && (measureOK || r.Reference.Measure != "" || r.Reference.Select != "") {
		v.reference(r)
	}
}

// sharding reads, for a uniqueness rule on a cluster, how the table's rows are spread over the
// shards, for Explain; the check itself groups over the Distributed table either way.
func (v *validator) sharding(r *Rule, e tsql.Engine) {
	sr, ok := e.(tsql.ShardReader)
	if !ok {
		return
	}
	sh, err := sr.ShardsOf(v.ctx, r.Table)
	if err != nil || sh == nil {
		return // not a Distributed table (or no shard answers now): read whole, as on one server
	}
	r.shardedBy = sh.Key
	if r.shardedBy == "" {
		r.shardedBy = "rand()"
	}
	r.shardLocal = len(sh.KeyColumns) > 0
	for _, c := range sh.KeyColumns {
		r.shardLocal = r.shardLocal && slices.ContainsFunc(r.Columns, func(k string) bool { return strings.EqualFold(k, c) })
	}
}

// boolean checks that a where: or an expression is a truth value over the rule's table.
func (v *validator) boolean(r *Rule, key string, e tsql.Engine, expr string) bool {
	cols, err := e.Describe(v.ctx, "SELECT ("+expr+") AS _tu_b FROM "+e.Dialect().QuoteRelation(r.Table))
	if err != nil {
		if serr := tsql.ExpressionSyntax(v.ctx, e, expr); serr != nil {
			err = serr // said of the expression as written, not of trueup's statement around it
		}
		v.unprepared(r, key, e, err)
		return false
	}
	if len(cols) != 1 || !cols[0].Boolean() {
		typ := ""
		if len(cols) == 1 {
			typ = cols[0].Type
		}
		v.bad(r, key, "%s %s is not a true/false condition over %s (it gives %s)", key, expr, r.Table, typ)
		return false
	}
	return true
}

func columnType(cols []tsql.Column, name string) string {
	c, _ := findColumn(cols, name)
	return c.Type
}

func (v *validator) reference(r *Rule) {
	ref := r.Reference
	target := ref.Target
	if target == "" {
		target = r.Target
	}
	key := "reference"
	if r.Kind == RowCount || r.Kind == Equality {
		key = "compare_to"
	}
	e, cols, ok := v.relation(r, key, target, ref.Relation)
	if !ok {
		return
	}
	if ref.Select != "" {
		cols, ok := v.resultColumns(r, "reference", e, ref.Select)
		want := len(r.GroupBy) + 1
		if r.Partition != "" {
			want++
		}
		if ok && r.Kind == Totals && len(cols) < want {
			v.bad(r, "reference", "the reference SELECT returns %s (%s); want %s", plural(int64(len(cols)), "column", "columns"), strings.Join(cols, ", "), r.totalsColumns())
		}
		return
	}
	if r.Kind == Equality {
		for _, c := range r.Columns {
			v.column(r, "columns", ref.Relation, cols, c)
		}
		return
	}
	pcol := ref.Partition
	if pcol == "" {
		pcol = r.Partition
	}
	pk := "reference_partition"
	if r.Kind == RowCount {
		pk = "partition"
	}
	if pcol != "" {
		pc, ok := v.column(r, pk, ref.Relation, cols, pcol)
		if !ok {
			return
		}
		r.refPartType = pc.Kind
	}
	if r.Kind == Totals {
		d := e.Dialect()
		m := ref.Measure
		if m == "" {
			m = r.Measure
		}
		v.check(r, "reference", e, groupedSQL(d, ref.Relation, r.groupKeys(d, pcol, r.refPartType), m))
	}
}

// groupKeys are the SQL keys a totals rule compares by in a relation whose partition column is
// col: the partition (to its grain), then the group_by columns.
func (r *Rule) groupKeys(d tsql.Dialect, col string, typ tsql.Type) []string {
	var keys []string
	if col != "" {
		keys = append(keys, partitionExpr(d, col, typ, r.Grain))
	}
	for _, g := range r.GroupBy {
		keys = append(keys, d.Quote(g))
	}
	return keys
}

// totalsColumns says what a totals reference SELECT returns, in order.
func (r *Rule) totalsColumns() string {
	var cols []string
	if r.Partition != "" {
		cols = append(cols, "the partition")
	}
	cols = append(cols, r.GroupBy...)
	if len(cols) == 0 {
		return "the value"
	}
	return strings.Join(cols, ", ") + " and the value"
}

// groupedSQL aggregates a relation by keys (none: the whole relation).
func groupedSQL(d tsql.Dialect, rel string, keys []string, agg string) string {
	if len(keys) == 0 {
		return "SELECT " + agg + " FROM " + d.QuoteRelation(rel)
	}
	k := strings.Join(keys, ", ")
	return "SELECT " + k + ", " + agg + " FROM " + d.QuoteRelation(rel) + " GROUP BY " + k
}

// partitionExpr is the SQL grouping a relation by partition: the column itself, or its
// truncation to the grain for timestamps (and months).
func partitionExpr(d tsql.Dialect, col string, typ tsql.Type, grain string) string {
	q := d.Quote(col)
	switch {
	case typ == tsql.TypeTimestamp:
		return d.TruncTime(q, grain)
	case typ == tsql.TypeDate && grain == "month":
		return d.TruncTime(q, grain)
	}
	return q
}

// engineMessage shortens an engine error to its first line, without driver boilerplate.
func engineMessage(err error) string {
	msg := fault.FirstLine(err.Error())
	if i := strings.Index(msg, "DB::Exception: "); i >= 0 {
		msg = msg[i+len("DB::Exception: "):]
	}
	if i := strings.Index(msg, ". Stack trace"); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}
