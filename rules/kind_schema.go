package rules

import (
	"context"
	"fmt"

	tsql "trueup/sql"
)

// SchemaStore keeps the column snapshots schema rules compare with.
type SchemaStore interface {
	// SchemaSnapshot returns the columns a rule recorded for a relation of a target; ok is false
	// when none is recorded.
	SchemaSnapshot(ctx context.Context, rule, target, relation string) (cols []tsql.Column, ok bool, err error)
	// RecordSchema records (or replaces) a rule's snapshot of a relation of a target.
	RecordSchema(ctx context.Context, rule, target, relation string, cols []tsql.Column) error
}

// schema: a relation's columns and types match the snapshot recorded on the rule's first run
// (or the last one accepted). A change is upstream drift: the rule fails and names it.
func (c *check) schema() {
	r := c.rule
	cols := c.add(&need{mode: columnsNeed, relation: r.Table})
	c.judge = func(ctx context.Context, j *judgeEnv) verdict {
		if j.schemas == nil {
			return verdict{err: fmt.Errorf("no snapshot store: schema rules need the ledger")}
		}
		// the target the rule ran on by name ("" for the configured default), which --target
		// may have chosen
		target := c.target
		want, ok, err := j.schemas.SchemaSnapshot(ctx, r.Name, target, r.Table)
		if err != nil {
			return verdict{err: err}
		}
		if !ok || j.acceptSchema {
			if err := j.schemas.RecordSchema(ctx, r.Name, target, r.Table, cols.columns); err != nil {
				return verdict{err: err}
			}
			return verdict{message: fmt.Sprintf("snapshot of %d columns recorded", len(cols.columns))}
		}
		return schemaDrift(want, cols.columns, j.sample)
	}
}

// schemaDrift lists added, removed and retyped columns.
func schemaDrift(want, got []tsql.Column, sample int) verdict {
	var v verdict
	var rows []Row
	had := map[string]tsql.Column{}
	for _, c := range want {
		had[c.Name] = c
	}
	has := map[string]bool{}
	for _, c := range got {
		has[c.Name] = true
		old, ok := had[c.Name]
		switch {
		case !ok:
			rows = append(rows, Row{{"column", c.Name}, {"change", "added"}, {"was", nil}, {"now", c.Type}})
		case old.Type != c.Type:
			rows = append(rows, Row{{"column", c.Name}, {"change", "type"}, {"was", old.Type}, {"now", c.Type}})
		}
	}
	for _, c := range want {
		if !has[c.Name] {
			rows = append(rows, Row{{"column", c.Name}, {"change", "removed"}, {"was", c.Type}, {"now", nil}})
		}
	}
	v.violations = int64(len(rows))
	v.failed = v.violations > 0
	v.sample = limitSample(rows, sample)
	if v.failed {
		v.message = fmt.Sprintf("%s since the snapshot (trueup check --accept-schema records the new one)", plural(v.violations, "column changed", "columns changed"))
	}
	return v
}
