package notices

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// PartitionRow is one changed partition, formatted for reading. The measure columns are empty
// when the diff totalled no column for the table.
type PartitionRow struct {
	Table, Partition, Old, New, Change                string
	Measure, OldTotal, NewTotal, TotalChange, Verdict string
	Unexpected                                        bool
}

// PartitionRows lists the partitions that changed, formatted, by table then partition.
func PartitionRows(ev Evidence) []PartitionRow {
	var out []PartitionRow
	for _, d := range changedPartitions(ev.Diff) {
		r := PartitionRow{Table: d.Table, Partition: d.Partition, Old: Full(float64(d.OldCount)), New: Full(float64(d.NewCount)),
			Change: rowChange(d), Verdict: d.Verdict, Unexpected: d.Verdict == VerdictUnexpected}
		if d.Measure != "" {
			r.Measure, r.OldTotal, r.NewTotal, r.TotalChange = d.Measure, Full(float64(d.OldTotal)), Full(float64(d.NewTotal)), totalChange(d)
		}
		out = append(out, r)
	}
	return out
}

// measured reports whether any row carries a measure's totals.
func measured(rows []PartitionRow) bool {
	return slices.ContainsFunc(rows, func(r PartitionRow) bool { return r.Measure != "" })
}

// rowPct is the change of a partition's row count in percent; false for a partition the old
// version did not have (there is no percentage of nothing).
func rowPct(d PartitionDiff) (float64, bool) {
	if d.OldCount == 0 {
		return 0, d.NewCount == 0
	}
	return d.PctChange, true
}

// rowChange says how a partition's row count moved: +4.7%, or "new".
func rowChange(d PartitionDiff) string {
	if p, ok := rowPct(d); ok {
		return Pct(p)
	}
	return "new"
}

// totalPct is the change of a partition's measure total in percent; false when there was no
// old total to compare with.
func totalPct(d PartitionDiff) (float64, bool) {
	if d.Measure == "" || d.OldTotal == 0 {
		return 0, false
	}
	return float64(d.NewTotal-d.OldTotal) / math.Abs(float64(d.OldTotal)) * 100, true
}

func totalChange(d PartitionDiff) string {
	if p, ok := totalPct(d); ok {
		return Pct(p)
	}
	if d.NewTotal != 0 {
		return "new"
	}
	return "0%"
}

// identicalLeftOut counts the identical partitions the numbers table leaves out; false when
// the evidence does not say (it lists changed partitions only and no per-table counts).
func identicalLeftOut(ev Evidence) (int, bool) {
	if len(ev.Compared) > 0 {
		n := 0
		for _, c := range ev.Compared {
			n += c.Identical
		}
		return n, true
	}
	n := 0
	for _, d := range ev.Diff {
		if d.Verdict == VerdictIdentical {
			n++
		}
	}
	return n, n > 0
}

// LeftOut says how many identical partitions the per-partition table leaves out, for pages
// and emails ("" when the evidence does not say).
func LeftOut(ev Evidence) string {
	n, ok := identicalLeftOut(ev)
	if !ok {
		return ""
	}
	if n == 1 {
		return "1 partition is identical in the old and the new data and is not listed."
	}
	return fmt.Sprintf("%d partitions are identical in the old and the new data and are not listed.", n)
}

// changedPartitions are the diff rows that are not identical, by table then partition.
func changedPartitions(ds []PartitionDiff) []PartitionDiff {
	var out []PartitionDiff
	for _, d := range ds {
		if d.Verdict != VerdictIdentical {
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Table != out[j].Table {
			return out[i].Table < out[j].Table
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Numbers lays out the evidence's numbers as plain-text tables: the reports' numbers before and
// after, and the per-partition comparison with the measure totals (partitions that did not
// change are left out, and counted).
func Numbers(ev Evidence) string {
	var b strings.Builder
	var rows [][]string
	for _, r := range ReportRows(ev) {
		rows = append(rows, []string{r.Report, r.Row, r.Number, r.Before, r.After, r.Change})
	}
	if len(rows) > 0 {
		b.WriteString("Reports, before and after\n\n")
		b.WriteString(textTable([]string{"report", "row", "number", "before", "after", "change"}, rows, 3, 4, 5))
	}
	changed := PartitionRows(ev)
	if len(changed) == 0 {
		return b.String()
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	unit := partitionUnit(ev)
	withTotals := measured(changed)
	header, right := []string{"table", unit, "old rows", "new rows", "change"}, []int{2, 3, 4}
	title := "Rows per " + unit + ", old and new"
	if withTotals {
		header[4] = "row change"
		header = append(header, "measure", "old total", "new total", "total change")
		right = append(right, 6, 7, 8)
		title = "Rows and totals per " + unit + ", old and new"
	}
	header = append(header, "verdict")
	rows = nil
	for _, p := range changed {
		row := []string{p.Table, p.Partition, p.Old, p.New, p.Change}
		if withTotals {
			row = append(row, p.Measure, p.OldTotal, p.NewTotal, p.TotalChange)
		}
		rows = append(rows, append(row, p.Verdict))
	}
	if n, ok := identicalLeftOut(ev); ok {
		title += fmt.Sprintf(" (%s left out)", plural(n, "identical partition", "identical partitions"))
	}
	b.WriteString(title + "\n\n")
	b.WriteString(textTable(header, rows, right...))
	return b.String()
}

func partitionUnit(ev Evidence) string {
	if ev.PartitionColumn != "" {
		return ev.PartitionColumn
	}
	return "partition"
}

// diffLines says, one line per table, how its old and new data compare.
func diffLines(ev Evidence) []string {
	byTable := map[string][]PartitionDiff{}
	var tables []string
	add := func(t string) {
		if !slices.Contains(tables, t) {
			tables = append(tables, t)
		}
	}
	for _, d := range ev.Diff {
		byTable[d.Table] = append(byTable[d.Table], d)
	}
	compared := map[string]TableComparison{}
	for _, c := range ev.Compared {
		compared[c.Table] = c
	}
	for _, t := range ev.Tables { // the order the notice names them in
		if _, ok := byTable[t]; ok {
			add(t)
		} else if _, ok := compared[t]; ok {
			add(t)
		}
	}
	for _, d := range ev.Diff {
		add(d.Table)
	}
	for _, c := range ev.Compared {
		add(c.Table)
	}
	var out []string
	for _, t := range tables {
		c, known := compared[t]
		out = append(out, tableDiffText(ev, t, byTable[t], c, known))
	}
	return out
}

// tableDiffText is one table's comparison: "orders: of 92 days compared, 9 changed as expected
// (rows +4.3% to +5.6%, sum(amount) +4.4% to +6.0%), 83 are identical and none changed
// unexpectedly."
func tableDiffText(ev Evidence, table string, ds []PartitionDiff, c TableComparison, known bool) string {
	var expected, unexpected []PartitionDiff
	identical := 0
	for _, d := range ds {
		switch d.Verdict {
		case VerdictIdentical:
			identical++
		case VerdictUnexpected:
			unexpected = append(unexpected, d)
		default:
			expected = append(expected, d)
		}
	}
	var s string
	switch {
	case known:
		identical = c.Identical // the diff lists changed partitions only
		s = fmt.Sprintf("%s: of %s compared, ", table, partitionCount(ev, ds, c.Partitions))
	case table != "":
		s = fmt.Sprintf("%s, compared for every %s: ", table, partitionUnit(ev))
	default:
		s = fmt.Sprintf("The old and the new data were compared for every %s: ", partitionUnit(ev))
	}
	var parts []string
	if len(expected) > 0 {
		parts = append(parts, fmt.Sprintf("%d changed as expected (%s)", len(expected), ChangeSummary(expected)))
	}
	if identical == 1 {
		parts = append(parts, "1 is identical")
	} else if identical > 0 {
		parts = append(parts, fmt.Sprintf("%d are identical", identical))
	}
	if len(unexpected) == 0 {
		parts = append(parts, "none changed unexpectedly")
	} else {
		var names []string
		for _, d := range unexpected[:min(len(unexpected), 5)] {
			names = append(names, strings.TrimSpace(d.Partition+" "+rowChange(d)))
		}
		more := ""
		if len(unexpected) > 5 {
			more = fmt.Sprintf(" and %d more", len(unexpected)-5)
		}
		parts = append(parts, fmt.Sprintf("%d changed in a way that was NOT expected (%s%s)", len(unexpected), strings.Join(names, ", "), more))
	}
	return s + andList(parts) + "."
}

// partitionCount names n partitions of one table the way a reader counts them: "92 days" when
// they are dates, "2 months" when months (a downstream table of months beside days), else "12
// order_month partitions".
func partitionCount(ev Evidence, ds []PartitionDiff, n int) string {
	labels := make([]string, len(ds))
	for i, d := range ds {
		labels[i] = d.Partition
	}
	if len(labels) == 0 {
		labels = ev.Partitions
	}
	if allDates(labels) && !ev.From.IsZero() {
		return plural(n, "day", "days")
	}
	if allMonths(labels) {
		return plural(n, "month", "months")
	}
	if ev.PartitionColumn != "" {
		return plural(n, ev.PartitionColumn+" partition", ev.PartitionColumn+" partitions")
	}
	return plural(n, "partition", "partitions")
}

// ChangeSummary says how much a group of partitions moved: the row counts' range, how many are
// new, and each measure's range, e.g. "rows unchanged, sum(revenue) +1.2% to +5.8%".
func ChangeSummary(ds []PartitionDiff) string {
	var rows []float64
	fresh := 0
	var measures []string
	totals := map[string][]float64{}
	for _, d := range ds {
		if p, ok := rowPct(d); ok {
			rows = append(rows, p)
		} else {
			fresh++
		}
		if p, ok := totalPct(d); ok {
			if _, seen := totals[d.Measure]; !seen {
				measures = append(measures, d.Measure)
			}
			totals[d.Measure] = append(totals[d.Measure], p)
		}
	}
	var items []string
	if len(rows) > 0 {
		items = append(items, "rows "+pctRange(rows))
	}
	if fresh > 0 {
		items = append(items, plural(fresh, "new partition", "new partitions"))
	}
	for _, m := range measures {
		items = append(items, m+" "+pctRange(totals[m]))
	}
	return strings.Join(items, ", ")
}

// pctRange says a set of changes as one figure or a range: "+4.7%", "+4.3% to +5.6%",
// "unchanged".
func pctRange(ps []float64) string {
	lo, hi := slices.Min(ps), slices.Max(ps)
	if Pct(lo) == Pct(hi) {
		if Pct(lo) == "0%" {
			return "unchanged"
		}
		return Pct(lo)
	}
	return Pct(lo) + " to " + Pct(hi)
}
