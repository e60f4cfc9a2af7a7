package reconcile

import (
	"math"
	"strconv"
	"strings"
	"trueup/fault"

	tsql "trueup/sql"
)

// badInput is a diff that cannot run as asked, a fault.Invalid saying why: an unknown relation
// or column, a key or partition column whose type differs between the sides, an unparsable
// expectation. Callers ask errors.Is(err, fault.ErrInvalid).
func badInput(format string, args ...any) error {
	return fault.New(fault.Invalid, format, args...)
}

// Side is one of the two relations compared.
type Side struct {
	Engine   tsql.Engine
	Relation string
	// Target names the engine for people (a target name from the config); default its URL.
	Target string
	// Fingerprints, when given, are the relation's partitions as trueup recorded them and still
	// trusts (views.Store.Fingerprints): a partition whose fingerprint the other side matches is
	// not read (see fingerprints.go).
	Fingerprints *Fingerprints
}

func (s Side) target() string {
	if s.Target != "" {
		return s.Target
	}
	return s.Engine.Info().Target
}

// Tolerance says how far apart two numbers may be and still count as equal: within Abs, or
// within Rel times the larger magnitude. The zero Tolerance compares at the diff's Scale.
type Tolerance struct {
	Abs float64 `json:"abs,omitempty"`
	Rel float64 `json:"rel,omitempty"` // a fraction: 0.001 is 0.1%
}

// ParseTolerance reads "0.01" (absolute) or "0.5%" (relative).
func ParseTolerance(s string) (Tolerance, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return Tolerance{}, badInput("tolerance %q: want a non-negative number, optionally with %%", s)
	}
	if pct {
		return Tolerance{Rel: f / 100}, nil
	}
	return Tolerance{Abs: f}, nil
}

func (t Tolerance) String() string {
	if t.Rel > 0 {
		return strconv.FormatFloat(t.Rel*100, 'g', -1, 64) + "%"
	}
	return strconv.FormatFloat(t.Abs, 'g', -1, 64)
}

// AnyColumn is the Tolerance key that applies to every float or decimal column without its own.
const AnyColumn = "*"

// Spec says what to compare and how.
type Spec struct {
	Old, New Side
	// Key names the columns that identify a row. Rows whose key has a NULL are counted per
	// partition (NullKeys) and left out of the row-level comparison.
	Key []string
	// Partition names the column the relations are partitioned by; "" compares them whole.
	Partition string
	// Grain, for a date or timestamp partition column, makes each partition a day, month or
	// hour of its values (labelled by its start) rather than each value: a backfill by month
	// is compared a month at a time. "" takes each value of a date as its partition, and a
	// timestamp by day.
	Grain string
	// Measures name numeric columns totalled per partition on each side.
	Measures []string
	// Ignore names columns left out of the comparison (a column present on one side only and
	// ignored is reported but is not a difference).
	Ignore []string
	// Columns, when given, are the only columns compared besides the key and the partition
	// column; every other column is left out as if ignored.
	Columns []string
	// Map pairs a column of the old relation with its name in the new one (old name → new name),
	// for renamed columns. Results name columns by their old names.
	Map map[string]string
	// Where is a SQL condition each side is filtered by, in its own engine, as written: only
	// the rows for which it holds are compared. It must be a condition over both relations'
	// columns, read-only and inside the warehouse (the sandbox of user SQL).
	Where string
	// Tolerance per column name; AnyColumn applies to every float or decimal column.
	Tolerance map[string]Tolerance
	// Expect is the intended change; nil means any difference is unexpected.
	Expect *Expectations
	// Scope is what "inside scope" means in Expect: the partitions a backfill rebuilt.
	Scope []tsql.Window
	// Windows and Partitions restrict the diff: a partition is compared when its value lies in
	// one of the windows or equals one of the values (written as text: 2026-07-10, 42, EMEA).
	// Both empty compares every partition.
	Windows    []tsql.Window
	Partitions []string
	// Rows, when set, receives every differing row as it is found, with no cap: the rows of
	// removed and added keys, both versions of a changed row, the surplus rows of a duplicate
	// key, rows with a NULL key one side lacks. Rows are not held for it: inside one engine they
	// come sorted by key, across two both engines' rows come sorted by the portable key hash and
	// are merged. An error it returns stops the diff with that error.
	Rows func(RowLine) error
	// Samples bounds the example rows kept per kind per partition (default 10).
	Samples int
	// Scale is the number of decimal places floats and decimals are compared at when no side
	// declares a scale (DOUBLE, Float64) and they have no tolerance (default 6).
	Scale int
	// Precision per column name overrides the precision read from the declared types (see
	// ParsePrecision); a Digits of -1 keeps the digits read and changes only Float32.
	Precision map[string]tsql.Precision
	// Rescan ignores the sides' fingerprints: every partition is read.
	Rescan bool
}

func (s Spec) samples() int {
	if s.Samples <= 0 {
		return 10
	}
	return s.Samples
}

func (s Spec) scale() int {
	if s.Scale <= 0 {
		return 6
	}
	return s.Scale
}

// pair is one column as each side has it.
type pair struct {
	Name     string // the old side's name, used in results
	Old, New tsql.Column
}

// sameType reports whether both sides hold the column in the same engine type (meaningful inside
// one engine only).
func (p pair) sameType() bool {
	return baseType(p.Old.Type) == baseType(p.New.Type)
}

// uuid reports whether either side holds the column as a UUID.
func (p pair) uuid() bool {
	return baseType(p.Old.Type) == "UUID" || baseType(p.New.Type) == "UUID"
}

// baseType is a type's text without the wrappers that do not change values (tsql.BaseType),
// upper-cased and trimmed, for comparing two sides' types.
func baseType(t string) string { return strings.ToUpper(strings.TrimSpace(tsql.BaseType(t))) }

// findColumn finds name among cols: exactly, else case-insensitively when that is unambiguous
// (DuckDB folds identifier case, ClickHouse does not).
func findColumn(cols []tsql.Column, name string) (tsql.Column, bool) {
	for _, c := range cols {
		if c.Name == name {
			return c, true
		}
	}
	var found []tsql.Column
	for _, c := range cols {
		if strings.EqualFold(c.Name, name) {
			found = append(found, c)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return tsql.Column{}, false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
