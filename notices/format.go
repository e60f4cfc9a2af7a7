package notices

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	tsql "trueup/sql"
)

// Compact shows a number the way a report headline would: 1.92M, 48.3K, 912.
func Compact(f float64) string {
	a := math.Abs(f)
	switch {
	case a >= 1e9:
		return trimZeros(fmt.Sprintf("%.2f", f/1e9)) + "B"
	case a >= 1e6:
		return trimZeros(fmt.Sprintf("%.2f", f/1e6)) + "M"
	case a >= 1e4:
		return trimZeros(fmt.Sprintf("%.1f", f/1e3)) + "K"
	case a == math.Trunc(a):
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return trimZeros(fmt.Sprintf("%.2f", f))
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// Full shows a number in full with thousands separators: 1,920,412.5 or 1,234; NaN, +Inf or
// -Inf (a float column's total can be one) as such.
func Full(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return tsql.AsText(f)
	}
	s := strconv.FormatFloat(math.Abs(f), 'f', -1, 64)
	if f != math.Trunc(f) {
		s = strconv.FormatFloat(math.Abs(f), 'f', 2, 64)
	}
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if f < 0 {
		b.WriteByte('-')
	}
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}

// Pct shows a change in percent with its sign: +4.7%, -0.3%, 0%.
func Pct(p float64) string {
	if math.Abs(p) < 0.05 {
		if p == 0 {
			return "0%"
		}
		return fmt.Sprintf("%+.2f%%", p)
	}
	return fmt.Sprintf("%+.1f%%", p)
}

func optNumber(f *float64) string {
	if f == nil {
		return "–"
	}
	return Full(*f)
}

// day formats a date the way people write it: 10 July 2026.
func day(t time.Time) string { return t.Format("2 January 2006") }

// dateRange says [from, to) in words: 10–18 July 2026, 28 July – 3 August 2026, or one day.
func dateRange(from, to time.Time) string {
	last := to.AddDate(0, 0, -1)
	if !last.After(from) {
		return day(from)
	}
	switch {
	case from.Year() == last.Year() && from.Month() == last.Month():
		return fmt.Sprintf("%d–%d %s", from.Day(), last.Day(), last.Format("January 2006"))
	case from.Year() == last.Year():
		return fmt.Sprintf("%s – %s", from.Format("2 January"), day(last))
	}
	return day(from) + " – " + day(last)
}

// andList joins names as a reader would: a, b and c.
func andList(xs []string) string { return JoinNames(xs, "and") }

// JoinNames joins names as a reader would, the last two by conj: "a, b and c" (and), "a or b"
// (or), "a" alone, "" for none. Notices, refusals and confirmations all list names so.
func JoinNames(names []string, conj string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conj + " " + names[len(names)-1]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// textTable lays out rows under a header in aligned columns. Columns whose index is in right
// are right-aligned (numbers).
func textTable(header []string, rows [][]string, right ...int) string {
	width := make([]int, len(header))
	for i, h := range header {
		width[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	isRight := map[int]bool{}
	for _, i := range right {
		isRight[i] = true
	}
	var b strings.Builder
	line := func(cells []string) {
		var parts []string
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if isRight[i] {
				parts = append(parts, pad+c)
			} else {
				parts = append(parts, c+pad)
			}
		}
		b.WriteString(strings.TrimRight(strings.Join(parts, "  "), " ") + "\n")
	}
	line(header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep)
	for _, r := range rows {
		line(r)
	}
	return b.String()
}
