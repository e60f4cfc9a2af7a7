package rules

import (
	"context"
	"fmt"
	"strings"

	"trueup/reconcile"
)

// equality: the table and compare_to hold the same rows, over columns (default: every column
// of the table). It is answered by reconcile's diff, with the compared columns as the key:
// inside one engine the two relations are checksummed in one scan and joined only if the
// checksums differ; across engines (compare_to_target) by portable hashes, bucket by bucket,
// so only the rows of differing buckets leave the engines. A row holding a NULL matches an
// equal row on the other side (NULL equals NULL, as in dbt's except), by its row hash. Rows
// are compared as sets, as except does: a row held twice on one side and once on the other is
// held by both, and a row one side lacks is one violation however many copies the other holds.
// The violations are the distinct rows the diff streams; the sample is the first of them with
// the side that holds it.
func (c *check) equality(targets Targets) {
	r := c.rule
	other, err := c.referenceEngine(targets)
	if err != nil {
		c.err = err
		return
	}
	otherName := targets.Name(r.Reference.Target)
	if r.Reference.Target == "" {
		otherName = c.target
	}
	c.judge = func(ctx context.Context, j *judgeEnv) verdict {
		cols := r.Columns
		if len(cols) == 0 {
			all, err := c.engine.Columns(ctx, r.Table)
			if err != nil {
				return verdict{err: err}
			}
			for _, col := range all {
				cols = append(cols, col.Name)
			}
		}
		var v verdict
		var only [2]int64
		var surplus int64
		seen := [2]map[string]bool{{}, {}} // the rows counted, as text: each distinct row once
		spec := reconcile.Spec{
			Old:     reconcile.Side{Engine: c.engine, Relation: r.Table, Target: c.target},
			New:     reconcile.Side{Engine: other, Relation: r.Reference.Relation, Target: otherName},
			Key:     cols,
			Columns: cols,
			Where:   r.Where,
			Samples: 1,
			Rows: func(l reconcile.RowLine) error {
				if l.Surplus {
					surplus++ // a set comparison: a row held more often on one side is held by both
					return nil
				}
				side, holder := 0, r.Table
				if l.Sign == "+" {
					side, holder = 1, r.Reference.Relation
				}
				var row strings.Builder
				for _, f := range l.Values {
					fmt.Fprintf(&row, "%T:%v\x00", f.Value, f.Value)
				}
				if seen[side][row.String()] {
					return nil // another copy of a row counted: except counts it once
				}
				seen[side][row.String()] = true
				only[side]++
				if len(v.sample) < j.sample {
					row := Row{{Name: "only_in", Value: holder}}
					for _, f := range l.Values {
						row = append(row, Field{Name: f.Name, Value: sampleValue(f.Value)})
					}
					v.sample = append(v.sample, row)
				}
				return nil
			},
		}
		res, err := reconcile.Diff(ctx, spec)
		if err != nil {
			return verdict{err: err}
		}
		v.violations = only[0] + only[1]
		v.failed = v.violations > 0
		if v.failed {
			var parts []string
			if only[0] > 0 {
				parts = append(parts, fmt.Sprintf("%s of %s not in %s", plural(only[0], "row", "rows"), r.Table, r.Reference.Relation))
			}
			if only[1] > 0 {
				parts = append(parts, fmt.Sprintf("%s of %s not in %s", plural(only[1], "row", "rows"), r.Reference.Relation, r.Table))
			}
			v.message = strings.Join(parts, "; ")
		}
		if res.Differs && !v.failed && (surplus == 0 || len(res.Notes) > 0) {
			// a difference the rows do not show (a column missing on one side): say the diff's
			v.failed, v.violations = true, 1
			v.message = "the diff of " + r.Table + " and " + r.Reference.Relation + " differs: " + strings.Join(res.Notes, "; ")
		}
		return v
	}
}
