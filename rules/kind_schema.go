package rules

import (
	"context"
	"fmt"
	"strings"

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
		if len(r.Declared) > 0 {
			v := schemaDrift(r.Declared, cols.columns, r.Ordered, j.sample)
			if v.failed {
				v.message = fmt.Sprintf("%s from the declared columns", plural(v.violations, "column differs", "columns differ"))
			}
			return v
		}
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
			return verdict{message: fmt.Sprintf("snapshot of %s recorded", plural(int64(len(cols.columns)), "column", "columns"))}
		}
		return schemaDrift(want, cols.columns, r.Ordered, j.sample)
	}
}

// schemaDrift lists added, removed and retyped columns, and with ordered those at another
// place. A wanted column without a type takes any; a type matches the engine's with or without
// ClickHouse's Nullable/LowCardinality wrapper, in any case and spacing.
func schemaDrift(want, got []tsql.Column, ordered bool, sample int) verdict {
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
			rows = append(rows, Row{{Name: "column", Value: c.Name}, {Name: "change", Value: "added"}, {Name: "was", Value: nil}, {Name: "now", Value: c.Type}})
		case old.Type != "" && !sameType(old.Type, c.Type):
			rows = append(rows, Row{{Name: "column", Value: c.Name}, {Name: "change", Value: "type"}, {Name: "was", Value: old.Type}, {Name: "now", Value: c.Type}})
		}
	}
	for _, c := range want {
		if !has[c.Name] {
			rows = append(rows, Row{{Name: "column", Value: c.Name}, {Name: "change", Value: "removed"}, {Name: "was", Value: c.Type}, {Name: "now", Value: nil}})
		}
	}
	if ordered {
		// the columns both have, in each one's order
		var a, b []string
		for _, c := range want {
			if has[c.Name] {
				a = append(a, c.Name)
			}
		}
		for _, c := range got {
			if _, ok := had[c.Name]; ok {
				b = append(b, c.Name)
			}
		}
		pos := func(cols []tsql.Column, name string) int {
			for i, c := range cols {
				if c.Name == name {
					return i + 1
				}
			}
			return 0
		}
		for i := range a {
			if a[i] != b[i] {
				rows = append(rows, Row{{Name: "column", Value: b[i]}, {Name: "change", Value: "moved"}, {Name: "was", Value: pos(want, b[i])}, {Name: "now", Value: pos(got, b[i])}})
			}
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

func sameType(want, got string) bool {
	norm := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), "")) }
	return norm(want) == norm(got) || norm(want) == norm(tsql.BaseType(got))
}
