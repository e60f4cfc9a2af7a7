package page

import (
	"strconv"
	"strings"
)

// Thousands formats n with comma thousands separators: 1234567 → "1,234,567".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// SignedThousands is Thousands with a + before a positive number or zero: a change.
func SignedThousands(n int64) string {
	if n >= 0 {
		return "+" + Thousands(n)
	}
	return Thousands(n)
}

// Value is a value from a table as a cell shows it: a number right-aligned, with thousands
// separators.
type Value struct {
	Text   string
	Number bool
}

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

func joinVersions(vs []string) string { return strings.Join(vs, ", ") }
