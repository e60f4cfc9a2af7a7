package notices

import (
	"fmt"
	"strings"

	tsql "trueup/sql"
)

// Comparison is two answers of one query compared number by number: how a notice compares a
// report before and after, and how `trueup query --compare-to-live` compares an answer as of
// some versions with the live one.
type Comparison struct {
	ExposureChange
	// BeforeLabels[i] and AfterLabels[i] are the labels of row i of each answer: the Label its
	// numbers carry in Rows.
	BeforeLabels []string `json:"before_labels"`
	AfterLabels  []string `json:"after_labels"`
}

// Compare compares before and after, which must have the same columns. labels names the columns
// that label a row (empty: the leading non-numeric columns); every other numeric column is a
// value, and each value of each row is one number, matched between the answers by its row's
// label.
func Compare(before, after *tsql.Result, labels []string) (Comparison, error) {
	var c Comparison
	if strings.Join(before.Columns, ",") != strings.Join(after.Columns, ",") {
		return c, fmt.Errorf("columns differ between versions (%s vs %s)",
			strings.Join(before.Columns, ", "), strings.Join(after.Columns, ", "))
	}
	labelCols, values := splitColumns(before, after, labels)
	for _, i := range labelCols {
		c.Labels = append(c.Labels, before.Columns[i])
	}
	for _, i := range values {
		c.Values = append(c.Values, before.Columns[i])
	}
	monthly := map[int]bool{}
	for _, i := range labelCols {
		monthly[i] = allMonthStarts(before, i) && allMonthStarts(after, i)
	}
	label := func(row []any) string {
		parts := make([]string, 0, len(labelCols))
		for _, i := range labelCols {
			parts = append(parts, labelText(row[i], monthly[i]))
		}
		return strings.Join(parts, ", ")
	}
	type key struct{ label, col string }
	old, now := map[key]*float64{}, map[key]*float64{}
	var order []key // every number's key, in the order the answers first give it
	read := func(res *tsql.Result, into map[key]*float64) (rowLabels []string) {
		for _, row := range res.Rows {
			l := label(row)
			rowLabels = append(rowLabels, l)
			for _, i := range values {
				k := key{l, res.Columns[i]}
				_, inOld := old[k]
				if _, inNow := now[k]; !inOld && !inNow {
					order = append(order, k)
				}
				into[k] = number(row[i])
			}
		}
		return rowLabels
	}
	c.BeforeLabels = read(before, old)
	c.AfterLabels = read(after, now)
	for _, k := range order {
		r := ExposureRow{Label: k.label, Column: k.col, Before: old[k], After: now[k]}
		if same(r.Before, r.After) {
			c.Unchanged++
			continue
		}
		c.Rows = append(c.Rows, r)
	}
	return c, nil
}

// NumberRows lays out the numbers of c that change as the notices' before/after tables show
// them (report is the first cell of each row).
func NumberRows(report string, c ExposureChange) []NumberRow {
	return ReportRows(Evidence{Exposures: []ExposureChange{{Title: report, Rows: c.Rows}}})
}

// NumberTable is NumberRows as the plain-text table a notice carries, under header.
func NumberTable(header []string, rows []NumberRow) string {
	var cells [][]string
	for _, r := range rows {
		cells = append(cells, []string{r.Row, r.Number, r.Before, r.After, r.Change})
	}
	return textTable(header, cells, 2, 3, 4)
}
