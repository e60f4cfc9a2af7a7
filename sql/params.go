package sql

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/shopspring/decimal"
)

// Expand replaces each $name in text (outside string literals, quoted identifiers and comments)
// with the dialect's placeholder for params[name], and returns the arguments in placeholder order.
// A $name with no parameter is an error: user text never reaches the statement.
func Expand(d Dialect, text string, params map[string]Param) (string, []any, error) {
	var b strings.Builder
	var args []any
	copied := 0
	err := eachPlaceholder(text, func(name string, start, end int) error {
		p, ok := params[name]
		if !ok {
			return fmt.Errorf("unknown parameter $%s", name)
		}
		if x, ok := p.Value.(Decimal); ok {
			p.Value = x.Float64() // bound as the number it was before Decimals were kept exact
		}
		ph, arg := d.Bind(p)
		b.WriteString(text[copied:start])
		b.WriteString(ph)
		args = append(args, arg)
		copied = end
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	b.WriteString(text[copied:])
	return b.String(), args, nil
}

// Placeholders lists the $names used in text outside literals and comments, in order of first use.
func Placeholders(text string) []string {
	seen := map[string]bool{}
	var names []string
	eachPlaceholder(text, func(n string, _, _ int) error {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
		return nil
	})
	return names
}

// eachPlaceholder calls fn with each $name in text outside string literals, quoted identifiers
// and comments, in order: the name and where the $name starts and ends in text. It stops at the
// first error fn returns, and returns it: Expand and Placeholders read text the same way.
func eachPlaceholder(text string, fn func(name string, start, end int) error) error {
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			i = skipQuoted(text, i)
		case commentEnd(text, i) > i:
			i = commentEnd(text, i)
		case c == '$' && i+1 < len(text) && isIdentStart(text[i+1]):
			j := i + 1
			for j < len(text) && isIdentPart(text[j]) {
				j++
			}
			if err := fn(text[i+1:j], i, j); err != nil {
				return err
			}
			i = j
		default:
			i++
		}
	}
	return nil
}

// commentEnd is where the comment starting at text[i] ends: after the "*/" of a block comment,
// at the newline of a line comment, at the end of text when it is not closed; i when no comment
// starts there.
func commentEnd(text string, i int) int {
	switch {
	case strings.HasPrefix(text[i:], "--"):
		if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
			return i + j
		}
		return len(text)
	case strings.HasPrefix(text[i:], "/*"):
		if j := strings.Index(text[i+2:], "*/"); j >= 0 {
			return i + 2 + j + 2
		}
		return len(text)
	}
	return i
}

func skipQuoted(text string, i int) int {
	q := text[i]
	j := i + 1
	for j < len(text) {
		if text[j] == '\\' && q != '"' {
			j += 2
			continue
		}
		if text[j] == q {
			if j+1 < len(text) && text[j+1] == q {
				j += 2
				continue
			}
			return j + 1
		}
		j++
	}
	return len(text)
}

func isIdentStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdentPart(c byte) bool  { return isIdentStart(c) || (c >= '0' && c <= '9') }

// normalizeAs is normalize of a value of a column the driver describes as typ: a UUID's 16 bytes
// as its canonical text, a TIME as 15:04:05 with its fraction, if any.
func normalizeAs(v any, typ string) any {
	// A list's elements as their type reads them (a DuckDB UUID[] holds UUIDs, not 16 bytes
	// each); ClickHouse's driver hands an Array(UInt8) over as bytes: the numbers it holds.
	if elem, ok := elementType(typ); ok {
		switch xs := v.(type) {
		case []any:
			out := make([]any, len(xs))
			for i, x := range xs {
				out[i] = normalizeAs(x, elem)
			}
			return out
		case []byte:
			if unwrapType(elem) == "UInt8" {
				out := make([]any, len(xs))
				for i, x := range xs {
					out[i] = int64(x)
				}
				return out
			}
		}
	}
	switch typ {
	case "UUID":
		if b, ok := v.([]byte); ok && len(b) == 16 {
			v = duckdb.UUID(b) // ClickHouse's driver: the same 16 bytes, in the same order
		}
		if u, ok := v.(duckdb.UUID); ok {
			return u.String() // 8-4-4-4-12 lowercase hex digits
		}
	case "TIME":
		if t, ok := v.(time.Time); ok {
			return t.Format("15:04:05.999999999")
		}
	}
	return normalize(v)
}

// normalize converts a driver value into the forms Result promises.
func normalize(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
		return x
	case float32:
		return float64(x)
	case float64:
		return x
	case bool:
		return x
	case []byte:
		return string(x)
	case string:
		return x
	case time.Time:
		return x.UTC()
	case *big.Int:
		if x.IsInt64() {
			return x.Int64()
		}
		if x.IsUint64() {
			return x.Uint64()
		}
		return DecimalOf(x.String()) // a HUGEINT or Int128: every digit, as a decimal of scale 0
	case duckdb.Decimal:
		return duckDecimal(x)
	case duckdb.Interval:
		return intervalText(x)
	case decimal.Decimal:
		return DecimalOf(x.String())
	case interface{ Float64() float64 }:
		return x.Float64()
	case fmt.Stringer:
		// decimals from both drivers print their exact value
		s := x.String()
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
		return s
	}
	return v
}

// AsInt64 reads a normalised value as an integer (0 for NULL).
func AsInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case uint64:
		return int64(x)
	case float64:
		return int64(math.Round(x))
	case Decimal:
		return x.Int64()
	case bool:
		if x {
			return 1
		}
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// AsUint64 reads a normalised value as an unsigned integer (0 for NULL).
func AsUint64(v any) uint64 {
	return asNumber(v, func(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) })
}

// AsFloat reads a normalised value as a float (0 for NULL).
func AsFloat(v any) float64 {
	return asNumber(v, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
}

// asNumber reads a normalised value as a T: a number converted as Go converts it, a string by
// parse, anything else (NULL) as 0.
func asNumber[T uint64 | float64](v any, parse func(string) (T, error)) T {
	switch x := v.(type) {
	case int64:
		return T(x)
	case uint64:
		return T(x)
	case float64:
		return T(x)
	case Decimal:
		if n, err := parse(string(x)); err == nil {
			return n
		}
		return T(x.Float64())
	case string:
		n, _ := parse(x)
		return n
	}
	return 0
}

// AsText renders a normalised value for people: dates as 2006-01-02, NULL as empty.
func AsText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0 {
			return x.Format("2006-01-02")
		}
		return x.Format("2006-01-02 15:04:05")
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case Decimal:
		return string(x)
	}
	return fmt.Sprint(v)
}

// ShownText is AsText for output people read: a timestamp keeps its fraction of a second, to
// the digit it has (AsText, which comparisons across types use, drops it).
func ShownText(v any) string {
	if t, ok := v.(time.Time); ok && t.Nanosecond() != 0 {
		return t.Format("2006-01-02 15:04:05.999999999")
	}
	return AsText(v)
}

// AsTime reads a normalised value as a time (zero for NULL or unparseable text).
func AsTime(v any) time.Time {
	switch x := v.(type) {
	case time.Time:
		return x
	case string:
		for _, layout := range []string{"2006-01-02", "2006-01-02 15:04:05", time.RFC3339} {
			if t, err := time.Parse(layout, x); err == nil {
				return t
			}
		}
	}
	return time.Time{}
}

// intervalText is a DuckDB INTERVAL as people read one: 1 year 2 months 3 days 04:05:06.5, its
// parts that are not zero (00:00:00 for none).
func intervalText(iv duckdb.Interval) string {
	var parts []string
	unit := func(n int64, one, many string) {
		switch {
		case n == 1 || n == -1:
			parts = append(parts, strconv.FormatInt(n, 10)+" "+one)
		case n != 0:
			parts = append(parts, strconv.FormatInt(n, 10)+" "+many)
		}
	}
	unit(int64(iv.Months/12), "year", "years")
	unit(int64(iv.Months%12), "month", "months")
	unit(int64(iv.Days), "day", "days")
	if iv.Micros != 0 || len(parts) == 0 {
		us, sign := iv.Micros, ""
		if us < 0 {
			us, sign = -us, "-"
		}
		clock := fmt.Sprintf("%s%02d:%02d:%02d", sign, us/3_600_000_000, us/60_000_000%60, us/1_000_000%60)
		if frac := us % 1_000_000; frac != 0 {
			clock += strings.TrimRight(fmt.Sprintf(".%06d", frac), "0")
		}
		parts = append(parts, clock)
	}
	return strings.Join(parts, " ")
}
