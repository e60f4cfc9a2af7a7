package sql

import (
	"math"
	"strconv"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/shopspring/decimal"
)

// Decimal is a value read from a DECIMAL column, exactly: its digits as text, without an exponent
// and without trailing fractional zeros ("-12.5", "1234567890123456.78", "0"), so that equal
// values of any scale are equal Decimals and print as people write them. A float64 cannot hold
// every DECIMAL(18,2): 1234567890123456.78 and …79 are the same double, so a changed cent would
// compare equal and print rounded. In JSON it is a number with the same digits.
type Decimal string

// DecimalOf is the Decimal of a decimal's text as a driver or JSON writes it ("12.50", "-0.00", "1e3").
func DecimalOf(s string) Decimal {
	if strings.ContainsAny(s, "eE") { // not a driver's plain digits: through the exact parser
		if d, err := decimal.NewFromString(s); err == nil {
			s = d.String()
		}
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" || s == "" {
		s = "0"
	}
	return Decimal(s)
}

// duckDecimal is a DuckDB decimal as a Decimal: the integer with the point set scale digits from
// the right (the driver's String goes through big.Float, which costs more than reading the row).
func duckDecimal(d duckdb.Decimal) Decimal {
	if d.Value == nil {
		return "0"
	}
	var digits string
	if d.Value.IsInt64() {
		digits = strconv.FormatInt(d.Value.Int64(), 10)
	} else {
		digits = d.Value.String()
	}
	return DecimalOf(pointAt(digits, int(d.Scale)))
}

// pointAt writes the integer digits (with an optional sign) as a decimal with scale fractional digits.
func pointAt(digits string, scale int) string {
	if scale <= 0 {
		return digits
	}
	sign := ""
	if strings.HasPrefix(digits, "-") {
		sign, digits = "-", digits[1:]
	}
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	return sign + digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
}

// String is the decimal's digits.
func (d Decimal) String() string { return string(d) }

// Float64 is the nearest double, as an engine casts the decimal to DOUBLE.
func (d Decimal) Float64() float64 {
	f, _ := strconv.ParseFloat(string(d), 64)
	return f
}

// ExactFloat is the double the decimal equals, when a double holds it exactly (its shortest
// text is the decimal's digits): 12.5 does, 0.1 does as people write it, 1234567890123456.78
// does not.
func (d Decimal) ExactFloat() (float64, bool) {
	f := d.Float64()
	return f, strconv.FormatFloat(f, 'f', -1, 64) == string(d)
}

// Int64 is the decimal rounded half away from zero to a whole number, exact within int64.
func (d Decimal) Int64() int64 {
	if n, err := strconv.ParseInt(string(d), 10, 64); err == nil {
		return n
	}
	return int64(math.Round(d.Float64()))
}

// MarshalJSON writes the decimal as a JSON number with all its digits.
func (d Decimal) MarshalJSON() ([]byte, error) { return []byte(d.String()), nil }

// EqualAt reports whether two decimals are equal rounded half away from zero to digits
// fractional digits (digits < 0: as they are).
func (d Decimal) EqualAt(o Decimal, digits int) bool {
	if d == o {
		return true
	}
	x, err1 := decimal.NewFromString(string(d))
	y, err2 := decimal.NewFromString(string(o))
	if err1 != nil || err2 != nil {
		return false
	}
	if digits >= 0 {
		x, y = x.Round(int32(digits)), y.Round(int32(digits))
	}
	return x.Equal(y)
}

// duckDecimalOf is d as a DuckDB DECIMAL(precision, scale), rounded half away from zero to scale.
func duckDecimalOf(d Decimal, precision, scale int) duckdb.Decimal {
	x, err := decimal.NewFromString(d.String())
	if err != nil {
		return toDuckDecimal(d.Float64(), precision, scale)
	}
	return duckdb.Decimal{Width: uint8(precision), Scale: uint8(scale), Value: x.Round(int32(scale)).Shift(int32(scale)).BigInt()}
}
