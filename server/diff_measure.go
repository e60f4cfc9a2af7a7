package server

import (
	"math"

	"trueup/backfill"
	"trueup/notices"
	"trueup/reconcile"
	"trueup/server/page"
)

// A table whose rows do not change can still change: an aggregate of one row a day changes in
// its totals. The pages chart and headline what changed, as the notices do (notices.Charted,
// notices.ChangeSummary), from the partitions written the notices' way.

// changedMeasure is the measure of a diff to chart beside its rows: the first whose total moves
// in some partition, "" when none does.
func changedMeasure(r *reconcile.Result) string {
	for _, m := range r.Measures {
		for _, p := range r.Partitions {
			if t, ok := p.Measures[m]; ok && t.Delta != 0 { // not Old != New: a NaN total is no change from NaN
				return m
			}
		}
	}
	return ""
}

// resultPartitions are a diff's partitions the notices' way, carrying the totals of the measure
// that changed; a partition with no old rows has a +100% row change.
func resultPartitions(r *reconcile.Result, table string) []notices.PartitionDiff {
	m := changedMeasure(r)
	out := make([]notices.PartitionDiff, 0, len(r.Partitions))
	for _, p := range r.Partitions {
		d := notices.PartitionDiff{Table: table, Partition: p.Partition, OldCount: p.OldCount, NewCount: p.NewCount, Verdict: p.Verdict}
		if p.Verdict == reconcile.VerdictUnchanged {
			d.Verdict = notices.VerdictIdentical
		}
		switch {
		case p.PctChangeExact != nil:
			d.PctChange = *p.PctChangeExact
		case p.NewCount > 0:
			d.PctChange = 100
		}
		if t, ok := p.Measures[m]; ok {
			d.Measure, d.OldTotal, d.NewTotal = sumOf(m), t.Old, t.New
		}
		out = append(out, d)
	}
	return out
}

// sumOf names a diff's measure column as the notices name a measure: sum(amount).
func sumOf(column string) string {
	if column == "" {
		return ""
	}
	return "sum(" + column + ")"
}

// summaryPartitions are a validation's changed partitions of one table the notices' way.
func summaryPartitions(t backfill.TableCheck) []notices.PartitionDiff {
	out := make([]notices.PartitionDiff, 0, len(t.Changed))
	for _, c := range t.Changed {
		d := notices.PartitionDiff{Table: t.Table, Partition: c.Partition, OldCount: c.OldCount, NewCount: c.NewCount,
			Verdict: c.Verdict, Measure: c.Measure, OldTotal: c.OldTotal, NewTotal: c.NewTotal}
		if c.PctChange != nil {
			d.PctChange = *c.PctChange
		}
		out = append(out, d)
	}
	return out
}

// measureChange is a partition's change in a measure's total, as every page writes a change.
func measureChange(old, new float64) string {
	switch {
	case old == new:
		return notices.Pct(0)
	case old == 0:
		return "new"
	}
	return notices.Pct((new - old) / math.Abs(old) * 100)
}

// chartAndHeadline fills a table's chart, its caption and its headline from its changed
// partitions.
func chartAndHeadline(d *page.DiffTable, ds []notices.PartitionDiff) {
	var changed []notices.PartitionDiff
	for _, p := range ds {
		if p.Verdict != notices.VerdictIdentical {
			changed = append(changed, p)
		}
	}
	if len(changed) == 0 {
		return
	}
	d.Charted = notices.Charted(ds, d.Table)
	d.Chart = notices.Chart(ds, d.Table)
	d.Headline = notices.ChangeSummary(changed)
}
