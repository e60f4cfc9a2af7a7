package rules

import (
	"context"
	"fmt"
	"strings"

	tsql "trueup/sql"
)

// custom: the rule's SELECT returns the violating rows; none passes. A SELECT that only
// filters one relation (columns FROM relation WHERE condition) is counted by the relation's
// aggregate scan, when there is one, and its rows are read only when there are any.
func (c *check) custom() {
	r := c.rule
	rows := c.add(&need{mode: rawNeed, sql: r.Body, limit: dupCap})
	c.judge = func(_ context.Context, j *judgeEnv) verdict { return c.judgeCustom(j, rows, -1, nil) }
	rel, cond, ok := tsql.SimpleFilter(r.Body)
	if !ok {
		return
	}
	rows.conditional = true
	count := c.add(&need{mode: aggNeed, relation: rel, rideOnly: true, alt: []*need{rows},
		aggs: []aggExpr{{c.d.CountIf("(" + cond + ")"), "sum"}}})
	c.judge = func(_ context.Context, j *judgeEnv) verdict {
		if count.served == nil {
			return c.judgeCustom(j, rows, -1, nil)
		}
		var n int64
		for _, row := range count.rows {
			n += tsql.AsInt64(row[len(row)-1])
		}
		if n == 0 {
			return verdict{}
		}
		found := c.follow(r.Body, dupCap)
		var distinct *need
		if r.Partition != "" && n > dupCap {
			distinct = c.follow(c.customPartitions(), refCap)
		}
		c.finish = func(v *verdict) { *v = c.judgeCustom(j, found, n, distinct) }
		return verdict{}
	}
}

// customPartitions is the SELECT of the distinct partitions of a custom rule's rows.
func (c *check) customPartitions() string {
	return "SELECT DISTINCT " + c.d.Quote(c.rule.Partition) + " FROM (\n" + c.rule.Body + "\n) AS _tu_q"
}

// judgeCustom judges a custom rule's rows. count is their exact number when known (-1 when
// not) and partitions the distinct partitions when the rows were too many to fetch; without
// them, a truncated fetch asks for both afterwards.
func (c *check) judgeCustom(j *judgeEnv, rows *need, count int64, partitions *need) verdict {
	r := c.rule
	var v verdict
	pcol := -1
	for i, name := range rows.cols {
		if r.Partition != "" && name == r.Partition {
			pcol = i
		}
	}
	if r.Partition != "" && pcol < 0 && len(rows.rows) > 0 {
		return verdict{err: fmt.Errorf("partition %s is not a column of the rule's result (it has %s)", r.Partition, strings.Join(rows.cols, ", "))}
	}
	distinct := func(ns *need) []string {
		p := newPartitions()
		for _, row := range ns.rows {
			p.add(row[0])
		}
		return p.sorted()
	}
	parts := newPartitions()
	for i, row := range rows.rows {
		if pcol >= 0 {
			parts.add(row[pcol])
		}
		if i < j.sample {
			v.sample = append(v.sample, rowOf(rows.cols, row))
		}
	}
	v.failing = parts.sorted()
	v.violations = int64(len(rows.rows))
	if count >= 0 {
		v.violations = count
		if partitions != nil && pcol >= 0 {
			v.failing = distinct(partitions)
		}
	} else if rows.truncated {
		counted := c.follow("SELECT count(*) AS "+countAlias+" FROM (\n"+r.Body+"\n) AS _tu_q", 1)
		var inParts *need
		if pcol >= 0 {
			inParts = c.follow(c.customPartitions(), refCap)
		}
		c.finish = func(v *verdict) {
			if len(counted.rows) > 0 {
				v.violations = tsql.AsInt64(counted.rows[0][0])
			}
			if inParts != nil {
				v.failing = distinct(inParts)
			}
			v.message = plural(v.violations, "violating row", "violating rows")
		}
	}
	v.failed = v.violations > 0
	if v.failed {
		v.message = plural(v.violations, "violating row", "violating rows")
	}
	return v
}
