package rules

import (
	"context"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	tsql "trueup/sql"
)

// execute runs the queries, at most parallel at a time, and hands each need its rows.
func execute(ctx context.Context, qs []*query, parallel int) {
	if parallel < 1 {
		parallel = 1
	}
	var g errgroup.Group
	g.SetLimit(parallel)
	for _, q := range qs {
		// A query's failure is its needs' verdict, not the run's: run keeps it in q.err.
		g.Go(func() error {
			q.run(ctx)
			return nil
		})
	}
	g.Wait()
	for _, q := range qs {
		for _, n := range q.needs {
			q.deliver(n)
		}
	}
}

func (q *query) run(ctx context.Context) {
	q.text = q.render()
	start := time.Now()
	defer func() { q.secs = time.Since(start).Seconds() }()
	if q.mode == columnsNeed {
		cols, err := q.engine.Columns(ctx, q.relation)
		q.err = err
		for _, n := range q.needs {
			n.columns = cols
		}
		return
	}
	res, err := q.engine.Query(ctx, q.text)
	if err != nil {
		q.err = err
		return
	}
	q.cols, q.rows = res.Columns, res.Rows
	if q.limit > 0 && len(q.rows) > q.limit {
		q.rows, q.trunc = q.rows[:q.limit], true
	}
}

// deliver gives one need its view of the query's rows.
func (q *query) deliver(n *need) {
	n.err = q.err
	if q.err != nil || q.mode == columnsNeed {
		return
	}
	switch {
	case q.mode == rawNeed || q.mode == dupNeed:
		n.cols, n.rows, n.truncated = q.cols, q.rows, q.trunc
	case n.mode == aggNeed:
		n.rows = q.rollup(n)
	case n.mode == dupNeed:
		n.rows = q.duplicates(n)
	}
}

func (q *query) keyIndex(keys []string) []int {
	idx := make([]int, len(keys))
	for i, k := range keys {
		for j, qk := range q.keys {
			if qk == k {
				idx[i] = j
			}
		}
	}
	return idx
}

// rollup projects the query's groups onto the need's keys and combines the need's aggregates.
func (q *query) rollup(n *need) [][]any {
	kIdx := q.keyIndex(n.keys)
	aIdx := make([]int, len(n.aggs))
	nIdx := len(q.keys)
	for i, a := range n.aggs {
		aIdx[i] = len(q.keys) + 1 + indexAgg(q.aggs, a.sql)
		if isCountStar(a.sql) {
			aIdx[i] = nIdx
		}
	}
	project := func(r []any) []any {
		out := make([]any, 0, len(n.keys)+1+len(n.aggs))
		for _, i := range kIdx {
			out = append(out, r[i])
		}
		out = append(out, r[nIdx])
		for _, i := range aIdx {
			out = append(out, r[i])
		}
		return out
	}
	if len(n.keys) == len(q.keys) {
		out := make([][]any, len(q.rows))
		for i, r := range q.rows {
			out[i] = project(r)
		}
		return out
	}
	groups := map[string][]any{}
	var order []string
	for _, r := range q.rows {
		row := project(r)
		k := groupKey(row[:len(n.keys)])
		acc, ok := groups[k]
		if !ok {
			groups[k] = row
			order = append(order, k)
			continue
		}
		acc[len(n.keys)] = combine("sum", acc[len(n.keys)], row[len(n.keys)])
		for i, a := range n.aggs {
			j := len(n.keys) + 1 + i
			acc[j] = combine(a.rollup, acc[j], row[j])
		}
	}
	out := make([][]any, 0, len(order))
	for _, k := range order {
		out = append(out, groups[k])
	}
	if len(n.keys) == 0 && len(out) == 0 {
		// an empty relation still has one (empty) group, as SQL gives without GROUP BY
		row := []any{int64(0)}
		for range n.aggs {
			row = append(row, nil)
		}
		out = append(out, row)
	}
	return out
}

// duplicates picks the groups of more than one row out of an aggregate query's groups.
func (q *query) duplicates(n *need) [][]any {
	kIdx := q.keyIndex(n.keys)
	var out [][]any
	for _, r := range q.rows {
		if tsql.AsInt64(r[len(q.keys)]) < 2 {
			continue
		}
		row := make([]any, 0, len(n.keys)+1)
		null := false
		for _, i := range kIdx {
			null = null || r[i] == nil
			row = append(row, r[i])
		}
		if !null || len(n.notNull) == 0 {
			out = append(out, append(row, r[len(q.keys)]))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := tsql.AsInt64(out[i][len(n.keys)]), tsql.AsInt64(out[j][len(n.keys)])
		if a != b {
			return a > b
		}
		return compareRows(out[i][:len(n.keys)], out[j][:len(n.keys)]) < 0
	})
	return out
}

func groupKey(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		if v == nil {
			parts[i] = "\x00null"
		} else {
			parts[i] = tsql.AsText(v)
		}
	}
	return strings.Join(parts, "\x1f")
}

func combine(rollup string, a, b any) any {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	switch rollup {
	case "min":
		if compareValues(b, a) < 0 {
			return b
		}
		return a
	case "max":
		if compareValues(b, a) > 0 {
			return b
		}
		return a
	}
	ai, aInt := a.(int64)
	bi, bInt := b.(int64)
	if aInt && bInt {
		return ai + bi
	}
	return tsql.AsFloat(a) + tsql.AsFloat(b)
}

// compareValues orders normalised values: NULL first, then times, numbers and text.
func compareValues(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	if at, ok := a.(time.Time); ok {
		if bt, ok := b.(time.Time); ok {
			return at.Compare(bt)
		}
	}
	if isNumber(a) && isNumber(b) {
		x, y := tsql.AsFloat(a), tsql.AsFloat(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return strings.Compare(tsql.AsText(a), tsql.AsText(b))
}

func compareRows(a, b []any) int {
	for i := range a {
		if c := compareValues(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

func isNumber(v any) bool {
	switch v.(type) {
	case int64, uint64, float64, tsql.Decimal:
		return true
	}
	return false
}
