package rules

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	tsql "trueup/sql"
)

// needMode is the shape of data a check asks for.
type needMode int

const (
	// aggNeed: aggregates of a relation grouped by keys, every group.
	aggNeed needMode = iota
	// dupNeed: the groups of keys that occur more than once (rows with a NULL key ignored).
	dupNeed
	// rawNeed: the rows of a SELECT, up to a cap.
	rawNeed
	// columnsNeed: a relation's columns as the engine reports them.
	columnsNeed
)

// aggExpr is an aggregate expression and how partial results of it combine ("" when they do not).
type aggExpr struct {
	sql    string
	rollup string // "sum", "min", "max" or ""
}

// need is one piece of data a check asks of one engine. The planner fuses needs into queries;
// after the run, rows holds the need's own view of the data: its keys in order, then the
// group's row count, then its aggregates (aggNeed); its keys then the row count (dupNeed);
// the SELECT's rows (rawNeed).
type need struct {
	engine   tsql.Engine
	mode     needMode
	relation string
	where    string    // aggNeed, dupNeed: a condition on the relation's rows ("" for all)
	keys     []string  // SQL of the grouping keys
	notNull  []string  // dupNeed: SQL of the columns that must not be NULL
	aggs     []aggExpr // aggNeed
	sql      string    // rawNeed
	limit    int       // rawNeed, dupNeed: most rows to fetch; more sets truncated

	// rideOnly marks an aggNeed that is served only by an aggregate query planned for other
	// needs, never by one of its own; with are planned beside it when it rides, alt instead of
	// it when it cannot. Needs in with and alt are conditional: planned only through it. A
	// dupNeed with alt rides on an aggregate query grouped by its keys, or is replaced by alt
	// (aggregates of the same relation).
	rideOnly    bool
	with, alt   []*need
	conditional bool

	// join, on an aggNeed, is a lookup its aggregates read: the query's FROM joins it.
	join *lookup

	cols      []string
	rows      [][]any
	columns   []tsql.Column
	truncated bool
	err       error
	served    *query
}

// query is one statement the planner will issue and the needs it serves.
type query struct {
	engine   tsql.Engine
	mode     needMode
	relation string
	where    string
	keys     []string
	aggs     []aggExpr
	notNull  []string
	joins    []*lookup
	sql      string
	limit    int
	needs    []*need
	rules    map[string]bool

	text  string // rendered SQL
	cols  []string
	rows  [][]any
	trunc bool
	err   error
	secs  float64
}

// planner fuses needs: per engine and relation, aggregates at the widest grouping carry every
// narrower grouping whose aggregates add up (counts, sums, min, max), and duplicate checks ride
// on an aggregate query grouped by the same keys.
type planner struct {
	queries []*query
}

// engineKey is the target's Key, not its Target: two targets that differ only in their
// credentials are two engines, whose queries do not fuse.
func engineKey(e tsql.Engine) string { return e.Info().Key }

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	return subset(a, b)
}

func subset(small, big []string) bool {
	in := map[string]bool{}
	for _, k := range big {
		in[k] = true
	}
	for _, k := range small {
		if !in[k] {
			return false
		}
	}
	return true
}

func decomposable(aggs []aggExpr) bool {
	for _, a := range aggs {
		if a.rollup == "" {
			return false
		}
	}
	return true
}

// plan assigns every need to a query. rule names the rule each need belongs to.
func (p *planner) plan(needs []*need, rule map[*need]string) {
	// rows of one relation under different where: conditions are different scans
	type relKey struct{ engine, relation, where string }
	groups := map[relKey][]*need{}
	var order []relKey
	var alone []*query
	single := func(n *need) {
		for _, q := range alone {
			// the same SELECT asked by two rules (a parent's keys, a reference) runs once
			if n.mode == rawNeed && q.mode == rawNeed && q.sql == n.sql && q.limit == n.limit && engineKey(q.engine) == engineKey(n.engine) {
				p.attach(q, n, rule[n])
				return
			}
		}
		q := &query{engine: n.engine, mode: n.mode, relation: n.relation, sql: n.sql, limit: n.limit}
		p.attach(q, n, rule[n])
		alone = append(alone, q)
	}
	var rides []*need
	for _, n := range needs {
		switch {
		case n.conditional:
			continue
		case n.rideOnly:
			rides = append(rides, n)
			continue
		case n.mode != aggNeed && n.mode != dupNeed:
			single(n)
			continue
		}
		k := relKey{engineKey(n.engine), n.relation, n.where}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], n)
	}
	for _, k := range order {
		p.planRelation(groups[k], rule)
	}
	var ride func(n *need)
	ride = func(n *need) {
		extra := n.alt
		if host := p.host(n); host != nil {
			p.attach(host, n, rule[n])
			extra = n.with
		}
		for _, x := range extra {
			if x.rideOnly {
				ride(x) // a narrower ride tried in its place
			} else {
				single(x)
			}
		}
	}
	for _, n := range rides {
		ride(n)
	}
	p.queries = append(p.queries, alone...)
}

// lookup is a small relation's distinct keys LEFT JOINed into an aggregate scan (a foreign
// key's parent): sql is the join clause; rows without a match have a NULL alias.marker.
type lookup struct {
	alias string
	sql   string
}

// host finds an aggregate query on the need's relation grouped by (at least) its keys.
func (p *planner) host(n *need) *query {
	for _, q := range p.queries {
		if q.mode == aggNeed && engineKey(q.engine) == engineKey(n.engine) && q.relation == n.relation && q.where == n.where &&
			subset(n.keys, q.keys) && decomposable(n.aggs) {
			return q
		}
	}
	return nil
}

func (p *planner) planRelation(needs []*need, rule map[*need]string) {
	var aggs, dups []*need
	for _, n := range needs {
		if n.mode == aggNeed {
			aggs = append(aggs, n)
		} else {
			dups = append(dups, n)
		}
	}
	// widest groupings first, so narrower ones can ride on them
	sort.SliceStable(aggs, func(i, j int) bool { return len(aggs[i].keys) > len(aggs[j].keys) })
	var mine []*query
	attachAgg := func(n *need) {
		var host *query
		for _, q := range mine {
			if sameSet(n.keys, q.keys) || (subset(n.keys, q.keys) && decomposable(n.aggs)) {
				host = q
				break
			}
		}
		if host == nil {
			host = &query{engine: n.engine, mode: aggNeed, relation: n.relation, where: n.where, keys: n.keys}
			mine = append(mine, host)
		}
		p.attach(host, n, rule[n])
	}
	for _, n := range aggs {
		attachAgg(n)
	}
	var dupQs []*query
	for _, n := range dups {
		var host *query
		for _, q := range mine {
			if sameSet(n.keys, q.keys) {
				host = q
				break
			}
		}
		if host == nil && len(n.alt) > 0 {
			// no aggregate grouped by its keys to ride on: the cheaper alternative instead
			for _, a := range n.alt {
				attachAgg(a)
			}
			continue
		}
		for _, q := range dupQs {
			if host == nil && sameSet(n.keys, q.keys) && sameSet(n.notNull, q.notNull) {
				host = q
				q.limit = max(q.limit, n.limit)
			}
		}
		if host == nil {
			host = &query{engine: n.engine, mode: dupNeed, relation: n.relation, where: n.where, keys: n.keys, notNull: n.notNull, limit: n.limit}
			dupQs = append(dupQs, host)
		}
		p.attach(host, n, rule[n])
	}
	p.queries = append(p.queries, mine...)
	p.queries = append(p.queries, dupQs...)
}

func (p *planner) attach(q *query, n *need, rule string) {
	if q.rules == nil {
		q.rules = map[string]bool{}
	}
	q.rules[rule] = true
	q.needs = append(q.needs, n)
	n.served = q
	if n.join != nil && !slices.ContainsFunc(q.joins, func(j *lookup) bool { return j.alias == n.join.alias }) {
		q.joins = append(q.joins, n.join)
	}
	if n.mode == aggNeed {
		for _, a := range n.aggs {
			if !isCountStar(a.sql) && indexAgg(q.aggs, a.sql) < 0 {
				q.aggs = append(q.aggs, a)
			}
		}
	}
}

// isCountStar reports whether an aggregate is the row count every aggregate query carries.
func isCountStar(sql string) bool {
	s := strings.ToLower(strings.Join(strings.Fields(sql), ""))
	return s == "count(*)" || s == "count()" || s == "count(1)"
}

func indexAgg(aggs []aggExpr, sql string) int {
	for i, a := range aggs {
		if a.sql == sql {
			return i
		}
	}
	return -1
}

// Column aliases of fused queries; unlikely to meet a real column, which ClickHouse would
// otherwise confuse with the alias.
func keyAlias(i int) string { return fmt.Sprintf("_tu_k%d", i+1) }
func aggAlias(i int) string { return fmt.Sprintf("_tu_a%d", i+1) }

const countAlias = "_tu_n"

// render writes the query's SQL and a comment naming the rules it serves.
// limited wraps a rule's SELECT so that it returns at most n rows.
func limited(query string, n int) string {
	return "SELECT * FROM (\n" + query + "\n) AS _tu_q LIMIT " + strconv.Itoa(n)
}

// ruleNames are the names of the rules the query checks, in name order.
func (q *query) ruleNames() []string {
	return slices.Sorted(maps.Keys(q.rules))
}

func (q *query) render() string {
	d := q.engine.Dialect()
	head := "-- rules: " + strings.Join(q.ruleNames(), ", ") + "\n"
	switch q.mode {
	case rawNeed:
		if q.limit > 0 {
			return head + limited(q.sql, q.limit+1)
		}
		return head + q.sql
	case columnsNeed:
		return head + "-- the columns of " + d.QuoteRelation(q.relation) + " as the engine reports them"
	}
	var sel, group []string
	for i, k := range q.keys {
		sel = append(sel, k+" AS "+keyAlias(i))
		group = append(group, keyAlias(i))
	}
	sel = append(sel, "count(*) AS "+countAlias)
	for i, a := range q.aggs {
		sel = append(sel, a.sql+" AS "+aggAlias(i))
	}
	s := head + "SELECT " + strings.Join(sel, ",\n       ") + "\nFROM " + d.QuoteRelation(q.relation)
	for _, j := range q.joins {
		s += "\n" + j.sql
	}
	var conds []string
	for _, c := range q.notNull {
		conds = append(conds, c+" IS NOT NULL")
	}
	if w := andWhere(q.where, strings.Join(conds, " AND ")); w != "" {
		s += "\nWHERE " + w
	}
	if len(group) > 0 {
		s += "\nGROUP BY " + strings.Join(group, ", ")
	}
	if q.mode == dupNeed {
		order := append([]string{countAlias + " DESC"}, group...)
		s += "\nHAVING count(*) > 1\nORDER BY " + strings.Join(order, ", ") + "\nLIMIT " + fmt.Sprint(q.limit+1)
	}
	return s
}
