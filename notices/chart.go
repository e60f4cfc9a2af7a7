package notices

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	chartW, chartH                       = 720, 240
	padLeft, padRight, padTop, padBottom = 60, 16, 28, 44
)

// ChartTables lists the tables a diff has partitions of, in order of first appearance.
func ChartTables(ds []PartitionDiff) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range ds {
		if !seen[d.Table] {
			seen[d.Table] = true
			out = append(out, d.Table)
		}
	}
	return out
}

// lessPartition orders partition labels: numbers by value (2 before 10), anything else (ISO
// dates, text) as text.
func lessPartition(a, b string) bool {
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}

// tableRows are the partitions of one table, in partition order.
func tableRows(ds []PartitionDiff, table string) []PartitionDiff {
	var rows []PartitionDiff
	for _, d := range ds {
		if d.Table == table {
			rows = append(rows, d)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return lessPartition(rows[i].Partition, rows[j].Partition) })
	return rows
}

// Charted is what the chart of one table shows: "rows", or — for a table whose row counts do
// not change while a measure's total does, an aggregate of one row a day — that measure, e.g.
// "sum(revenue)": a flat line of row counts would hide the change.
func Charted(ds []PartitionDiff, table string) string {
	measure := ""
	for _, d := range tableRows(ds, table) {
		if d.OldCount != d.NewCount {
			return "rows"
		}
		if measure == "" && d.Measure != "" && d.OldTotal != d.NewTotal {
			measure = d.Measure
		}
	}
	if measure == "" {
		return "rows"
	}
	return measure
}

// Chart draws the per-partition change of one table as an SVG bar chart — in its row count, or
// in its measure's total where only that changes (Charted) —: one bar per partition, above zero
// for more and below for less, coloured by verdict (expected, unexpected, identical). Every bar
// has a tooltip with its numbers. It is self-contained SVG with no script, safe to inline in a
// page.
func Chart(ds []PartitionDiff, table string) string {
	rows := tableRows(ds, table)
	what := Charted(ds, table)
	// value is a partition's change in what is charted; false for a partition with nothing to
	// compare with.
	value, old, now := rowPct, func(d PartitionDiff) string { return Full(float64(d.OldCount)) }, func(d PartitionDiff) string { return Full(float64(d.NewCount)) + " rows" }
	if what != "rows" {
		value = func(d PartitionDiff) (float64, bool) {
			if d.Measure != what || (d.OldTotal == 0 && d.NewTotal == 0) {
				return 0, true
			}
			return totalPct(d)
		}
		old, now = func(d PartitionDiff) string { return Full(float64(d.OldTotal)) }, func(d PartitionDiff) string { return Full(float64(d.NewTotal)) + " " + what }
	}
	var b strings.Builder
	label := "Change in " + what + " per partition"
	if table != "" {
		label += " of " + table
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="100%%" role="img" aria-label="%s" class="notice-chart">`+"\n",
		chartW, chartH, html.EscapeString(label))
	fmt.Fprintf(&b, "<title>%s</title>\n", html.EscapeString(label))
	if len(rows) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="13">No partitions compared yet</text>`+"\n</svg>\n", chartW/2, chartH/2)
		return b.String()
	}
	lo, hi := 0.0, 0.0
	for _, d := range rows {
		if p, ok := value(d); ok {
			lo, hi = math.Min(lo, p), math.Max(hi, p)
		}
	}
	if hi-lo < 1 { // a flat chart still shows a 1-point scale
		hi = lo + 1
	}
	plotW, plotH := float64(chartW-padLeft-padRight), float64(chartH-padTop-padBottom)
	y := func(p float64) float64 { return float64(padTop) + (hi-p)/(hi-lo)*plotH }
	band := plotW / float64(len(rows))
	barW := math.Max(1, band*0.8)

	// axis: the top, zero and bottom of the scale
	for _, tick := range uniq(hi, 0, lo) {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="currentColor" stroke-opacity="%s"/>`+"\n",
			padLeft, chartW-padRight, y(tick), y(tick), map[bool]string{true: "0.6", false: "0.15"}[tick == 0])
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" font-size="11" dominant-baseline="middle" fill="currentColor">%s</text>`+"\n",
			padLeft-6, y(tick), html.EscapeString(Pct(tick)))
	}
	for i, d := range rows {
		x := float64(padLeft) + float64(i)*band + (band-barW)/2
		pct, change := hi, "new" // a new partition has no percentage: its bar reaches the top
		if p, ok := value(d); ok {
			pct, change = p, Pct(p)
		}
		top, bottom := y(math.Max(pct, 0)), y(math.Min(pct, 0))
		h := math.Max(bottom-top, 1) // an identical partition is a hairline on zero
		tip := fmt.Sprintf("%s: %s → %s (%s), %s", d.Partition, old(d), now(d), change, d.Verdict)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" data-partition="%s" data-verdict="%s"><title>%s</title></rect>`+"\n",
			x, top, barW, h, verdictColor(d.Verdict), html.EscapeString(d.Partition), html.EscapeString(d.Verdict), html.EscapeString(tip))
	}
	// partition labels: the first, the last, and a few between
	step := max(1, (len(rows)+5)/6)
	last := len(rows) - 1
	lastLeft := float64(chartW-padRight) - labelWidth(rows[last].Partition)
	for i := 0; i < len(rows); i++ {
		if i%step != 0 && i != last {
			continue
		}
		if i != last && len(rows) > 1 && float64(padLeft)+(float64(i)+0.5)*band+labelWidth(rows[i].Partition)/2+8 > lastLeft {
			continue // it would run into the last label
		}
		// The last label ends at the plot's right edge, so that it is not cut off by the chart's.
		x, anchor := float64(padLeft)+(float64(i)+0.5)*band, "middle"
		if i == len(rows)-1 && len(rows) > 1 {
			x, anchor = float64(chartW-padRight), "end"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="%s" font-size="11" fill="currentColor">%s</text>`+"\n",
			x, chartH-padBottom+16, anchor, html.EscapeString(rows[i].Partition))
	}
	// legend
	lx := padLeft
	for _, v := range []string{VerdictExpected, VerdictUnexpected, VerdictIdentical} {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" font-size="11" fill="currentColor">%s</text>`+"\n",
			lx, chartH-14, verdictColor(v), lx+14, chartH-5, v)
		lx += 110
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// labelWidth is about how wide a label is at font size 11, in user units.
func labelWidth(s string) float64 { return 6.5 * float64(len([]rune(s))) }

func verdictColor(v string) string {
	switch v {
	case VerdictUnexpected:
		return "#c0392b"
	case VerdictIdentical:
		return "#8a94a0"
	}
	return "#2e7d4f"
}

func uniq(xs ...float64) []float64 {
	var out []float64
	for _, x := range xs {
		dup := false
		for _, o := range out {
			dup = dup || o == x
		}
		if !dup {
			out = append(out, x)
		}
	}
	return out
}
