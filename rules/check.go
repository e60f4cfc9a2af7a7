package rules

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	tsql "trueup/sql"
)

// dupCap bounds the violating rows fetched to count them; beyond it a count query runs instead.
const dupCap = 10_000

// refCap bounds the rows a reference SELECT may return (one per partition).
const refCap = 100_000

// check is a rule compiled against its engine: the data it needs, then how it judges that data.
type check struct {
	rule   *Rule
	target string // the target as results and snapshots name it (Targets.Name)
	engine tsql.Engine
	d      tsql.Dialect
	needs  []*need
	err    error // the rule could not be compiled (e.g. an unknown target)
	total  *need // the rows checked, for a warn_if or error_if that is a share of them

	// judge decides from the phase-one data and may ask for follow-up needs (samples, exact
	// counts) through later; finish then completes the verdict with their rows, and may itself
	// ask for more (and set the next finish) when those rows show it is needed.
	judge  func(ctx context.Context, j *judgeEnv) verdict
	later  []*need
	issued int // how many of later have run
	finish func(v *verdict)
}

// judgeEnv is what a judgement may use besides its data.
type judgeEnv struct {
	now          time.Time
	sample       int
	schemas      SchemaStore
	acceptSchema bool
}

// verdict is a rule's outcome before it becomes a Result.
type verdict struct {
	failed     bool
	violations int64
	failing    []string
	sample     []Row
	message    string
	err        error
	severity   Severity // the severity a warn_if or error_if gave it ("": the rule's)
}

// thresholds judges the violations by warn_if and error_if, as dbt does: a rule of severity
// error fails when error_if holds, else warns when warn_if holds, else passes; a warn rule
// warns when warn_if holds. One not given is "!= 0": any violation.
func (c *check) thresholds(v *verdict) {
	r := c.rule
	if r.WarnIf == nil && r.ErrorIf == nil {
		return
	}
	var rows int64
	if c.total != nil {
		for _, row := range c.total.rows {
			rows += tsql.AsInt64(row[0])
		}
	}
	anyViolation := &Threshold{Op: "!=", Text: "!= 0"}
	errIf, warnIf := r.ErrorIf, r.WarnIf
	if errIf == nil {
		errIf = anyViolation
	}
	if warnIf == nil {
		warnIf = anyViolation
	}
	switch {
	case r.Severity == SeverityError && errIf.Holds(v.violations, rows):
		v.failed, v.severity = true, SeverityError
	case warnIf.Holds(v.violations, rows):
		v.failed, v.severity = true, SeverityWarn
	default:
		if v.violations > 0 {
			var within []string
			if r.Severity == SeverityError {
				within = append(within, "error_if "+errIf.Text)
			}
			within = append(within, "warn_if "+warnIf.Text)
			v.message += " (within " + strings.Join(within, ", ") + ")"
		}
		v.failed = false
	}
}

func (c *check) add(n *need) *need {
	if n.engine == nil {
		n.engine = c.engine
	}
	c.needs = append(c.needs, n)
	return n
}

func (c *check) agg(e tsql.Engine, relation string, keys []string, aggs ...aggExpr) *need {
	return c.add(&need{engine: e, mode: aggNeed, relation: relation, keys: keys, aggs: aggs})
}

// scan asks for aggregates of the rule's table, of the rows its where: keeps.
func (c *check) scan(keys []string, aggs ...aggExpr) *need {
	return c.add(&need{engine: c.engine, mode: aggNeed, relation: c.rule.Table, where: c.rule.Where, keys: keys, aggs: aggs})
}

// filtered is the FROM clause of the rule's table's rows (those its where: keeps) for which
// cond holds: `table WHERE …`.
func (c *check) filtered(cond string) string {
	return c.table() + " WHERE " + andWhere(c.rule.Where, cond)
}

// andWhere joins a rule's where: (may be "") and a condition.
func andWhere(where, cond string) string {
	switch {
	case where == "":
		return cond
	case cond == "":
		return "(" + where + ")"
	}
	return "(" + where + ") AND (" + cond + ")"
}

func (c *check) raw(e tsql.Engine, sql string, limit int) *need {
	return c.add(&need{engine: e, mode: rawNeed, sql: sql, limit: limit})
}

// follow asks for a need after the first judgement.
func (c *check) follow(sql string, limit int) *need {
	n := &need{engine: c.engine, mode: rawNeed, sql: sql, limit: limit}
	c.later = append(c.later, n)
	return n
}

// partitionKey is the rule's partition grouping as SQL, or none.
func (c *check) partitionKey() []string {
	if c.rule.Partition == "" {
		return nil
	}
	return []string{partitionExpr(c.d, c.rule.Partition, c.rule.partitionType, c.rule.Grain)}
}

func (c *check) table() string { return c.d.QuoteRelation(c.rule.Table) }

// compile builds the check of one rule.
func compile(r *Rule, targets Targets) *check {
	c := &check{rule: r, target: targets.Name(r.Target)}
	e, err := targets.Engine(r.Target)
	if err != nil {
		c.err = err
		return c
	}
	c.engine, c.d = e, e.Dialect()
	switch r.Kind {
	case Completeness:
		c.completeness(targets)
	case Uniqueness:
		c.uniqueness()
	case Totals:
		c.totals(targets)
	case Distribution:
		c.distribution()
	case Relationships:
		c.relationships()
	case Freshness:
		c.freshness()
	case Schema:
		c.schema()
	case Custom:
		c.custom()
	case AcceptedValues, AcceptedRange, Expression, Pattern:
		c.rowKind()
	case NotConstant:
		c.notConstant()
	case RowCount:
		c.rowCount(targets)
	case Equality:
		c.equality(targets)
	default:
		c.err = fmt.Errorf("kind %q cannot run", r.Kind)
	}
	if (r.WarnIf != nil && r.WarnIf.Share) || (r.ErrorIf != nil && r.ErrorIf.Share) {
		c.total = c.scan(nil) // rides on the table's scan: the count every scan carries
	}
	return c
}

// referenceEngine resolves the engine a reference lives in.
func (c *check) referenceEngine(targets Targets) (tsql.Engine, error) {
	if c.rule.Reference.Target == "" {
		return c.engine, nil
	}
	return targets.Engine(c.rule.Reference.Target)
}

// needErr returns the first failed need's error.
func needErr(ns []*need) error {
	for _, n := range ns {
		if n.err != nil {
			return n.err
		}
	}
	return nil
}

// partitions is an ordered set of partition values, keyed by their text.
type partitions struct {
	vals map[string]any
}

func newPartitions() *partitions { return &partitions{vals: map[string]any{}} }

func (p *partitions) add(v any) string {
	k := partitionText(v)
	if _, ok := p.vals[k]; !ok {
		p.vals[k] = v
	}
	return k
}

// sorted returns the texts in the order of their values.
func (p *partitions) sorted() []string {
	keys := make([]string, 0, len(p.vals))
	for k := range p.vals {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c := compareValues(p.vals[keys[i]], p.vals[keys[j]]); c != 0 {
			return c < 0
		}
		return keys[i] < keys[j]
	})
	return keys
}

func partitionText(v any) string {
	if v == nil {
		return "NULL"
	}
	return tsql.AsText(v)
}

// limitSample keeps the first n rows.
func limitSample(rows []Row, n int) []Row {
	if len(rows) > n {
		return rows[:n]
	}
	return rows
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
