// Package rules owns data-quality rules: it parses rule files (a header of `-- key: value` lines
// and, for some kinds, a SELECT), validates a whole rule set against the engines before anything
// runs, compiles each kind to SQL, fuses the checks on one relation into as few scans as it can,
// runs them and keeps the results in the ledger.
package rules

import (
	"math"
	"time"
	"trueup/fault"

	"trueup/cron"
	tsql "trueup/sql"
)

// A rule set that cannot be run is a *LoadError listing every problem, a fault.Invalid; a rule
// name that is not in the set is NotFound.

// NotFound is the error of a rule name there is no rule of: a fault.NotFound.
func NotFound(name string) error { return fault.New(fault.NotFound, "There is no rule %s.", name) }

// Kind is what a rule checks.
type Kind string

// The kinds of rule.
const (
	Completeness  Kind = "completeness"
	Uniqueness    Kind = "uniqueness"
	Totals        Kind = "totals"
	Distribution  Kind = "distribution"
	Relationships Kind = "relationships"
	Freshness     Kind = "freshness"
	Schema        Kind = "schema"
	Custom        Kind = "custom"

	AcceptedValues Kind = "accepted_values"
	AcceptedRange  Kind = "accepted_range"
	Expression     Kind = "expression"
	RowCount       Kind = "row_count"
	NotConstant    Kind = "not_constant"
	Pattern        Kind = "pattern"
	Equality       Kind = "equality"
)

// Kinds lists every kind in the order the docs present them.
func Kinds() []Kind {
	return []Kind{Completeness, Uniqueness, Totals, Distribution, Relationships, Freshness, Schema,
		AcceptedValues, AcceptedRange, Expression, RowCount, NotConstant, Pattern, Equality, Custom}
}

// Severity says whether a failing rule fails `trueup check` (error) or only warns.
type Severity string

// Severities.
const (
	SeverityError Severity = "error"
	SeverityWarn  Severity = "warn"
)

// Rule is one parsed rule file.
type Rule struct {
	Name        string
	Path        string // as shown in messages, e.g. rules/orders/unique_id.sql
	Kind        Kind
	Description string
	Severity    Severity
	Owner       string
	Tags        []string
	Schedule    *cron.Schedule // nil when the rule is not scheduled
	Target      string         // "" is the default target

	Table     string
	Partition string // partition column, "" for whole-table rules
	Grain     string // day, hour or month: the step of a calendar and the truncation of timestamps

	Columns   []string // uniqueness: key columns
	NotNull   []string // completeness
	MinRows   int64    // completeness; distribution: partitions whose measure totals less are not judged; 0 means no minimum
	Expect    *Expect  // completeness: expected partitions
	Column    string   // relationships: child column; freshness: timestamp column
	Parent    string   // relationships
	ParentCol string   // relationships
	Measure   string   // totals, distribution: an aggregate SQL expression over Table
	Reference Reference
	Tolerance Tolerance     // totals
	Dimension string        // distribution
	Baseline  int           // distribution: trailing partitions forming the baseline
	Threshold float64       // distribution: largest allowed change of a share, as a fraction
	MaxAge    time.Duration // freshness
	Body      string        // custom: the SELECT returning violating rows
	BodyLine  int

	Values     []string      // accepted_values: SQL literals
	Min, Max   string        // accepted_range: SQL expressions ("" for no bound)
	Exclusive  bool          // accepted_range and row_count: inclusive: false
	MinCount   *int64        // row_count: nil for no bound
	MaxCount   *int64        // row_count
	MinCompare bool          // row_count: min: compare_to
	MaxCompare bool          // row_count: max: compare_to
	Expr       string        // expression: a boolean SQL expression over Table
	Regex      string        // pattern: RE2
	Negate     bool          // pattern: the values must not match
	Where      string        // a boolean SQL expression over Table: only its rows are checked
	NullsEqual bool          // uniqueness: NULLs in the key group together (nulls: equal)
	GroupBy    []string      // freshness: each group's newest value is judged; totals: compared per group
	Declared   []tsql.Column // schema: the columns it must have (Type "" for any type), or none
	Ordered    bool          // schema: in that order
	NoFuture   bool          // freshness: a value in the future fails (allow_future: false)
	WarnIf     *Threshold
	ErrorIf    *Threshold

	first int // the line the rule's block starts on (1 for a file of one rule)

	lines  map[string]int // header key → line, for problems found after parsing
	broken bool           // the file had problems; validation skips it

	// Filled in by validation against the engine.
	partitionType tsql.Type
	columnType    tsql.Type
	keyType       tsql.Type // uniqueness: the type of a key of one column
	parentType    tsql.Type // relationships: the parent column's type
	parentRows    int64     // relationships: the parent's rows, when parentCounted
	parentCounted bool
	refPartType   tsql.Type
	// uniqueness on a ClickHouse cluster: the table's sharding key, and whether only the rule's
	// key columns decide it (then a key's rows are all on one shard)
	shardedBy  string
	shardLocal bool
}

// Threshold is a warn_if or error_if condition on a rule's violations: a count (> 10) or a
// share of the rows checked (>= 1%).
type Threshold struct {
	Op    string // >, >=, <, <=, =, !=
	Value float64
	Share bool // Value is a fraction of the rows checked
	Text  string
}

// Holds reports whether n violations out of rows meet the threshold.
func (t *Threshold) Holds(n, rows int64) bool {
	x := float64(n)
	if t.Share {
		if rows == 0 {
			x = 0
		} else {
			x = float64(n) / float64(rows)
		}
	}
	switch t.Op {
	case ">":
		return x > t.Value
	case ">=":
		return x >= t.Value
	case "<":
		return x < t.Value
	case "<=":
		return x <= t.Value
	case "=":
		return x == t.Value
	}
	return x != t.Value
}

// Expect is the set of partitions a completeness rule expects.
type Expect struct {
	// From and To bound an inclusive range of partitions; To may be relative to the run.
	From, To time.Time
	// ToRelative is "today" or "yesterday" when To is relative to the time of the run.
	ToRelative string
	// Continuous asks for every partition between the first and the last one present.
	Continuous bool
}

// Reference is what a completeness or totals rule compares with: a relation or a SELECT.
type Reference struct {
	Relation  string // a table or view, or ""
	Select    string // a SELECT returning partition (and value, for totals), or ""
	Target    string // "" is the rule's target
	Partition string // partition column of Relation (default: the rule's)
	Measure   string // totals: aggregate over Relation (default: the rule's measure)
	Line      int
}

// IsSet reports whether a reference was given.
func (r Reference) IsSet() bool { return r.Relation != "" || r.Select != "" }

// Tolerance is how far a total may be from its reference.
type Tolerance struct {
	Value    float64
	Relative bool // Value is a fraction of the reference
}

// Allows reports whether got is within the tolerance of want. A float column's total is NaN or
// infinite when one of its values is: it is then within any tolerance of itself only (NaN of
// NaN, as the engines compare values), and no tolerance of a finite number.
func (t Tolerance) Allows(got, want float64) bool {
	if got == want || math.IsNaN(got) && math.IsNaN(want) {
		return true
	}
	if math.IsNaN(got) || math.IsNaN(want) || math.IsInf(got, 0) || math.IsInf(want, 0) {
		return false
	}
	diff := got - want
	if diff < 0 {
		diff = -diff
	}
	limit := t.Value
	if t.Relative {
		w := want
		if w < 0 {
			w = -w
		}
		limit = t.Value * w
	}
	// Floating sums differ in the last digits between engines and plans (ENGINE-NOTES).
	scale := want
	if scale < 0 {
		scale = -scale
	}
	return diff <= limit+1e-9*max(scale, 1)
}
