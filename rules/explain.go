package rules

import (
	"fmt"
	"strings"
	tsql "trueup/sql"
)

// Explain says in words how the rule judges the rows its queries return.
func (r *Rule) Explain() string {
	s := r.explainKind()
	if r.Where != "" {
		s += "; only the rows where " + r.Where + " are checked"
	}
	if r.ErrorIf != nil || r.WarnIf != nil {
		var t []string
		if r.ErrorIf != nil {
			t = append(t, "error_if "+r.ErrorIf.Text)
		}
		if r.WarnIf != nil {
			t = append(t, "warn_if "+r.WarnIf.Text)
		}
		s += "; the violations decide by " + strings.Join(t, ", ")
	}
	return s
}

func (r *Rule) explainKind() string {
	per := ""
	if r.Partition != "" {
		per = " per " + r.Partition
	}
	switch r.Kind {
	case Completeness:
		var parts []string
		if e := r.Expect; e != nil {
			switch {
			case e.Continuous:
				parts = append(parts, fmt.Sprintf("every %s between the first and the last partition is present", r.Grain))
			case e.ToRelative != "":
				parts = append(parts, fmt.Sprintf("every %s from %s to %s is present", r.Grain, e.From.Format("2006-01-02"), e.ToRelative))
			default:
				parts = append(parts, fmt.Sprintf("every %s from %s to %s is present", r.Grain, e.From.Format("2006-01-02"), e.To.Format("2006-01-02")))
			}
		}
		if r.Reference.IsSet() {
			parts = append(parts, "every partition of the reference is present")
		}
		if r.MinRows > 0 {
			parts = append(parts, fmt.Sprintf("at least %s%s", plural(r.MinRows, "row", "rows"), per))
		}
		if len(r.NotNull) > 0 {
			parts = append(parts, "no NULL in "+strings.Join(r.NotNull, ", "))
		}
		return "passes when " + strings.Join(parts, "; ")
	case Uniqueness:
		scope := "in the table"
		if r.Partition != "" {
			scope = "within each " + r.Partition
		}
		s := fmt.Sprintf("passes when no (%s) occurs twice %s; rows with a NULL key are ignored", strings.Join(r.Columns, ", "), scope)
		switch {
		case r.shardedBy != "" && r.shardLocal:
			s += fmt.Sprintf("; on the cluster the rows are sharded by %s, which only the key's columns decide, so all rows of one key are on one shard and each shard's duplicates are its own", r.shardedBy)
		case r.shardedBy != "":
			s += fmt.Sprintf("; on the cluster the rows are sharded by %s, so the rows of one key can be on different shards: the check must see every shard's rows, and groups over the Distributed table, whose entry node merges the shards' groups before counting", r.shardedBy)
		}
		return s
	case Totals:
		if len(r.GroupBy) > 0 {
			per += " and " + strings.Join(r.GroupBy, ", ")
			if r.Partition == "" {
				per = " per " + strings.Join(r.GroupBy, ", ")
			}
		}
		if per == "" {
			return fmt.Sprintf("passes when %s over the whole table is within %s of the reference", r.Measure, r.Tolerance)
		}
		return fmt.Sprintf("passes when %s%s is within %s of the reference, for every partition on either side (a missing one counts as 0)", r.Measure, per, r.Tolerance)
	case Distribution:
		return fmt.Sprintf("passes when each %s's share of %s%s stays within %g points of its mean share over the %s before",
			r.Dimension, r.Measure, per, r.Threshold*100, plural(int64(r.Baseline), "partition", "partitions"))
	case Relationships:
		s := fmt.Sprintf("passes when every non-NULL %s is in %s.%s", r.Column, r.Parent, r.ParentCol)
		if r.parentCounted && r.parentRows <= smallParent && (r.columnType != tsql.TypeInt || r.parentType != tsql.TypeInt) {
			// counted only on an engine where the join pays (lookupJoin)
			return s + fmt.Sprintf("; %s is small (%s, at most %d): unless the aggregate scan groups by %s, its keys are LEFT JOINed into the scan, which counts the rows without a match, and an anti-join reads them only when there are some",
				r.Parent, plural(r.parentRows, "row", "rows"), smallParent, r.Column)
		}
		if r.columnType == tsql.TypeInt && r.parentType == tsql.TypeInt {
			s += "; when the aggregate scan carries min and max of " + r.Column + " and the parent's keys fill their range without a gap, that proves it; otherwise an anti-join finds the orphans after the first queries"
		}
		return s
	case Freshness:
		return fmt.Sprintf("passes when the newest %s is at most %s old (a date counts as midnight UTC)", r.Column, formatAge(r.MaxAge))
	case Schema:
		if len(r.Declared) > 0 {
			order := ""
			if r.Ordered {
				order = ", in that order"
			}
			names := make([]string, len(r.Declared))
			for i, c := range r.Declared {
				names[i] = strings.TrimSpace(c.Name + " " + c.Type)
			}
			return fmt.Sprintf("passes when %s has exactly the columns %s%s", r.Table, strings.Join(names, ", "), order)
		}
		return fmt.Sprintf("passes when the columns and types of %s match the recorded snapshot", r.Table)
	case AcceptedValues:
		return fmt.Sprintf("passes when every non-NULL %s is one of %s; the rows that are not are counted%s by the aggregate scan", r.Column, strings.Join(r.Values, ", "), per)
	case AcceptedRange:
		return fmt.Sprintf("passes when every non-NULL %s is within %s%s; the rows outside are counted%s by the aggregate scan", r.Column, r.rangeText(), r.nanText(" (a NaN is outside)"), per)
	case Expression:
		return fmt.Sprintf("passes when %s holds on every row (a row where it is NULL passes); the rows where it is false are counted%s by the aggregate scan", r.Expr, per)
	case Pattern:
		verb := "matches"
		if r.Negate {
			verb = "does not match"
		}
		return fmt.Sprintf("passes when every non-NULL %s %s the regular expression %s (RE2); the rows that do not are counted%s by the aggregate scan", r.Column, verb, r.Regex, per)
	case NotConstant:
		return fmt.Sprintf("passes when %s holds more than one distinct non-NULL value%s%s: the aggregate scan carries its min and max", r.Column, r.nanText(" (NaN counts as one)"), per)
	case RowCount:
		return fmt.Sprintf("passes when the row count%s is %s", per, r.countText(-1))
	case Equality:
		over := "every column"
		if len(r.Columns) > 0 {
			over = strings.Join(r.Columns, ", ")
		}
		other := r.Reference.Relation
		if r.Reference.Target != "" {
			other += " in " + r.Reference.Target
		}
		return fmt.Sprintf("passes when %s and %s hold the same rows over %s (NULL equals NULL, each row as many times): reconcile's diff checksums both and reads rows only where the checksums differ; its differing rows are the violations and the sample", r.Table, other, over)
	case Custom:
		if _, _, ok := tsql.SimpleFilter(r.Body); ok {
			return "passes when the SELECT returns no rows; a filter of one relation, it is counted by that relation's aggregate scan when there is one, and its rows are read only when there are some"
		}
		return "passes when the SELECT returns no rows"
	}
	return ""
}

// nanText is what a float column's rule says of NaN, or nothing for another column.
func (r *Rule) nanText(s string) string {
	if r.columnType != tsql.TypeFloat {
		return ""
	}
	return s
}
