package sql

import (
	"regexp"
	"strconv"
	"strings"
)

// Precision is how finely a column is compared and hashed, read from its declared types: the
// coarser of its two sides, so that a checksum and a row comparison agree on what "equal" means.
type Precision struct {
	// Digits is, for timestamps, the fractional-second digits kept, truncated (0 whole seconds,
	// 3 milliseconds, 6 microseconds); for numbers, the decimal places they are rounded at.
	Digits int
	// Float32 rounds numbers to a 32-bit float first (a REAL or Float32 side).
	Float32 bool
	// Exact compares numbers as decimal digits rather than as doubles: both sides are DECIMAL,
	// whose values a double cannot all hold (1234567890123456.78 and …79 are one double). A
	// DECIMAL is then normalised as the whole number its value rounded at Digits places makes
	// when scaled by 10^Digits, the same digits in every engine.
	Exact bool
}

// exactTrim matches the zeros after a DECIMAL's last fractional digit (and the point when all
// its digits are zeros), for a regular expression replacement by its first group: Normalize
// writes an exact decimal as its digits without them, "1234567890123456.79", "-0.01", "2".
const exactTrim = `(\.[0-9]*[1-9])0+$|\.0+$`

var (
	typeArgsRe   = regexp.MustCompile(`\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?`)
	dateTime64Re = regexp.MustCompile(`^DATETIME64\s*\(\s*(\d+)`)
)

// DeclaredPrecision is the precision a column's declared type holds its values at, in either
// engine's spelling: a timestamp's fractional digits (DuckDB TIMESTAMP 6, TIMESTAMP_MS 3,
// TIMESTAMP_S 0, TIMESTAMP_NS 9; ClickHouse DateTime 0, DateTime64(p) p), a decimal's scale, a
// REAL/Float32's float precision. ok is false where the type states none: a DOUBLE/Float64 (compared
// at the caller's scale), an integer (exact), text.
func DeclaredPrecision(c Column) (p Precision, ok bool) {
	t := strings.ToUpper(strings.TrimSpace(BaseType(c.Type)))
	switch c.Kind {
	case TypeTimestamp:
		switch {
		case t == "TIMESTAMP_S":
			return Precision{Digits: 0}, true
		case t == "TIMESTAMP_MS":
			return Precision{Digits: 3}, true
		case t == "TIMESTAMP_NS":
			return Precision{Digits: 9}, true
		case strings.HasPrefix(t, "TIMESTAMP"):
			return Precision{Digits: 6}, true
		case strings.HasPrefix(t, "DATETIME64"):
			if m := dateTime64Re.FindStringSubmatch(t); m != nil {
				n, _ := strconv.Atoi(m[1])
				return Precision{Digits: n}, true
			}
			return Precision{Digits: 3}, true // DateTime64's default
		case strings.HasPrefix(t, "DATETIME"):
			return Precision{Digits: 0}, true
		}
	case TypeDecimal:
		if m := typeArgsRe.FindStringSubmatch(t); m != nil {
			if m[2] != "" {
				n, _ := strconv.Atoi(m[2])
				return Precision{Digits: n}, true
			}
			if strings.HasPrefix(t, "DECIMAL32") || strings.HasPrefix(t, "DECIMAL64") || strings.HasPrefix(t, "DECIMAL128") {
				n, _ := strconv.Atoi(m[1]) // ClickHouse Decimal32(S): the argument is the scale
				return Precision{Digits: n}, true
			}
			return Precision{Digits: 0}, true // DECIMAL(p): scale 0
		}
		return Precision{Digits: 3}, true // DuckDB's DECIMAL is DECIMAL(18,3)
	case TypeFloat:
		switch t {
		case "REAL", "FLOAT", "FLOAT4", "FLOAT32":
			return Precision{Float32: true}, false
		}
	}
	return Precision{}, false
}

// BaseType is a column type's text without ClickHouse's Nullable(…) and LowCardinality(…)
// wrappers, which change how a value is stored, not what it is.
func BaseType(t string) string {
	base, _ := baseType(t)
	return base
}

// baseType is BaseType, and whether one of the wrappers it took off was Nullable(…): classify
// reads both from one pass.
func baseType(t string) (string, bool) {
	nullable := false
	for {
		low := strings.ToLower(t)
		switch {
		case strings.HasPrefix(low, "nullable(") && strings.HasSuffix(t, ")"):
			nullable = true
			t = t[len("nullable(") : len(t)-1]
		case strings.HasPrefix(low, "lowcardinality(") && strings.HasSuffix(t, ")"):
			t = t[len("lowcardinality(") : len(t)-1]
		default:
			return t, nullable
		}
	}
}

// precisionNormalizer is a dialect that normalises a column at a stated precision.
type precisionNormalizer interface {
	normalizeAt(c Column, p Precision) string
}

// pow10 is 10^n as an integer literal.
func pow10(n int) string { return "1" + strings.Repeat("0", n) }
