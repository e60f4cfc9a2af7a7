package reconcile

import (
	"fmt"
	"math"
	"strings"
	"time"

	tsql "trueup/sql"
)

// colPrecision is the precision one compared column is compared at, in the checksums and in the
// row comparison alike: the coarser of what its two sides' declared types hold. stated is false
// for columns compared as they always were (text, integers, booleans, dates).
type colPrecision struct {
	tsql.Precision
	stated bool
	time   bool // a timestamp column: Digits are fractional-second digits, truncated
	// overridden: set by Spec.Precision rather than read from the types
	overridden bool
}

// precisionOf reads the coarser precision of a column's two sides: timestamps at the lower of
// the two fractional precisions; numbers at the lower decimal scale (a DOUBLE or an integer
// states none: an integer is exact, a DOUBLE is compared at the diff's scale), after a float32
// rounding when a side is REAL/Float32.
func precisionOf(c pair, scale int) colPrecision {
	o, oOK := tsql.DeclaredPrecision(c.Old)
	n, nOK := tsql.DeclaredPrecision(c.New)
	switch {
	case c.Old.Kind == tsql.TypeTimestamp && c.New.Kind == tsql.TypeTimestamp:
		return colPrecision{Precision: tsql.Precision{Digits: min(o.Digits, n.Digits)}, stated: true, time: true}
	case !c.Old.Kind.Numeric() || !c.New.Kind.Numeric():
		return colPrecision{}
	case c.Old.Kind == tsql.TypeInt && c.New.Kind == tsql.TypeInt:
		return colPrecision{}
	}
	p := tsql.Precision{Digits: scale, Float32: o.Float32 || n.Float32}
	switch {
	case oOK && nOK:
		p.Digits = min(o.Digits, n.Digits)
		p.Exact = c.Old.Kind == tsql.TypeDecimal && c.New.Kind == tsql.TypeDecimal
	case oOK && c.Old.Kind == tsql.TypeDecimal:
		p.Digits = o.Digits
	case nOK && c.New.Kind == tsql.TypeDecimal:
		p.Digits = n.Digits
	}
	return colPrecision{Precision: p, stated: true}
}

// ParsePrecision reads a --precision value for a column: for a timestamp "s", "ms", "us" or a
// number of fractional digits; for a number its decimal places, optionally "float32" or
// "float32,N".
func ParsePrecision(s string) (tsql.Precision, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch t {
	case "s", "seconds":
		return tsql.Precision{Digits: 0}, nil
	case "ms", "milliseconds":
		return tsql.Precision{Digits: 3}, nil
	case "us", "µs", "microseconds":
		return tsql.Precision{Digits: 6}, nil
	case "ns", "nanoseconds":
		return tsql.Precision{Digits: 9}, nil
	}
	var p tsql.Precision
	if rest, ok := strings.CutPrefix(t, "float32"); ok {
		p.Float32 = true
		p.Digits = -1
		t = strings.TrimPrefix(rest, ",")
		if t == "" {
			return p, nil
		}
	}
	var n int
	if _, err := fmt.Sscanf(t, "%d", &n); err != nil || n < 0 || n > 18 || fmt.Sprint(n) != t {
		return tsql.Precision{}, badInput("precision %q: want s, ms, us, ns, a number of digits 0..18, or float32[,N]", s)
	}
	p.Digits = n
	return p, nil
}

// String says the precision for people: "seconds", "milliseconds", "3 decimals", "float32, 6 decimals".
func (p colPrecision) String() string {
	if p.time {
		switch p.Digits {
		case 0:
			return "seconds"
		case 3:
			return "milliseconds"
		case 6:
			return "microseconds"
		case 9:
			return "nanoseconds"
		}
		return fmt.Sprintf("%d fractional %s", p.Digits, plural(p.Digits, "digit", "digits"))
	}
	s := fmt.Sprintf("%d %s", p.Digits, plural(p.Digits, "decimal", "decimals"))
	if p.Float32 {
		s = "float32, " + s
	}
	return s
}

// equalTimes compares two instants at the column's precision, both truncated.
func (p colPrecision) equalTimes(a, b time.Time) bool {
	if !p.stated || p.Digits >= 9 {
		return a.Equal(b)
	}
	unit := time.Duration(math.Pow10(9 - p.Digits))
	return a.Truncate(unit).Equal(b.Truncate(unit))
}

// numbers brings two numbers to the column's precision: float32 first where a side is one.
func (p colPrecision) numbers(a, b float64) (float64, float64) {
	if p.stated && p.Float32 {
		return float64(float32(a)), float64(float32(b))
	}
	return a, b
}
