package notices

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"trueup/fault"
	tsql "trueup/sql"
)

// ExposureChange is how one exposure's numbers move from the live version to the new one.
type ExposureChange struct {
	Exposure string   `json:"exposure"`
	Title    string   `json:"title"`
	Owner    string   `json:"owner,omitempty"`
	Audience []string `json:"audience,omitempty"`
	Labels   []string `json:"labels,omitempty"` // label columns
	Values   []string `json:"values,omitempty"` // value columns
	// Rows are the numbers that change, in the query's order.
	Rows []ExposureRow `json:"rows,omitempty"`
	// Unchanged counts the numbers that stay as they are.
	Unchanged int `json:"unchanged"`
	// Error says why the exposure could not be evaluated (e.g. the new version is not built yet).
	Error string `json:"error,omitempty"`
}

// ExposureRow is one number of a report, before and after. A nil side means the row is absent.
type ExposureRow struct {
	Label  string   `json:"label"`
	Column string   `json:"column"`
	Before *float64 `json:"before"`
	After  *float64 `json:"after"`
}

// PctChange is the relative change in percent; ok is false when it has no meaning (a missing
// side, or a change from zero).
func (r ExposureRow) PctChange() (float64, bool) {
	if r.Before == nil || r.After == nil || *r.Before == 0 {
		return 0, false
	}
	return (*r.After - *r.Before) / math.Abs(*r.Before) * 100, true
}

// Evaluate runs the exposure on the live tables and on the versions named in to (logical name →
// physical table, e.g. daily_revenue → daily_revenue__v2) and returns the numbers that move.
func (x *Exposure) Evaluate(ctx context.Context, e tsql.Engine, to map[string]string) (ExposureChange, error) {
	c := ExposureChange{Exposure: x.Name, Title: x.Title, Owner: x.Owner, Audience: x.Audience}
	before, err := e.Query(ctx, x.SQL)
	if err != nil {
		return c, fmt.Errorf("notices: exposure %s on the live tables: %w", x.Name, err)
	}
	current, err := tsql.CurrentQualifiers(ctx, e)
	if err != nil {
		return c, fmt.Errorf("notices: exposure %s: %w", x.Name, err)
	}
	after, err := e.Query(ctx, tsql.RewriteTables(e.Dialect(), x.SQL, to, current))
	if err != nil {
		return c, fmt.Errorf("notices: exposure %s on the new versions: %w", x.Name, err)
	}
	cmp, err := Compare(before, after, x.Labels)
	if err != nil {
		return c, fmt.Errorf("notices: exposure %s: %w", x.Name, err)
	}
	cmp.Exposure, cmp.Title, cmp.Owner, cmp.Audience = c.Exposure, c.Title, c.Owner, c.Audience
	return cmp.ExposureChange, nil
}

// EvaluateExposures evaluates every exposure that reads one of the changed tables (versions maps
// table → new version number). An exposure that cannot be evaluated, e.g. because the new
// version is not built yet, is returned with its Error set rather than failing the others.
func EvaluateExposures(ctx context.Context, xs []*Exposure, targets Targets, versions map[string]int) []ExposureChange {
	tables := make([]string, 0, len(versions))
	to := map[string]string{}
	for t, n := range versions {
		tables = append(tables, t)
		to[t] = t + "__v" + strconv.Itoa(n) // views.Physical
	}
	var out []ExposureChange
	for _, x := range Reading(xs, tables) {
		c := ExposureChange{Exposure: x.Name, Title: x.Title, Owner: x.Owner, Audience: x.Audience}
		e, err := targets.Engine(x.Target)
		if err == nil {
			c, err = x.Evaluate(ctx, e, to)
		}
		if err != nil {
			c.Error = fault.FirstLine(err.Error())
		}
		out = append(out, c)
	}
	return out
}

// splitColumns picks the label and the value columns: the named labels when given, else the
// leading non-numeric columns (the first column when every column is numeric and there are
// several rows), and every other numeric column as a value.
func splitColumns(a, b *tsql.Result, named []string) (labels, values []int) {
	numeric := func(i int) bool {
		for _, res := range []*tsql.Result{a, b} {
			for _, row := range res.Rows {
				if row[i] == nil {
					continue
				}
				return number(row[i]) != nil
			}
		}
		return false
	}
	isLabel := map[int]bool{}
	if len(named) > 0 {
		for i, c := range a.Columns {
			if containsFold(named, c) {
				isLabel[i] = true
			}
		}
	} else {
		for i := range a.Columns {
			if numeric(i) {
				break
			}
			isLabel[i] = true
		}
		if len(isLabel) == 0 && len(a.Columns) > 1 && (len(a.Rows) > 1 || len(b.Rows) > 1) {
			isLabel[0] = true
		}
	}
	for i := range a.Columns {
		switch {
		case isLabel[i]:
			labels = append(labels, i)
		case numeric(i):
			values = append(values, i)
		}
	}
	return labels, values
}

func number(v any) *float64 {
	switch v.(type) {
	case int64, uint64, float64, int, int32, float32, tsql.Decimal:
		f := tsql.AsFloat(v)
		return &f
	}
	return nil
}

func same(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return math.Abs(*a-*b) <= 1e-9*math.Max(1, math.Abs(*a))
}

func allMonthStarts(res *tsql.Result, i int) bool {
	if len(res.Rows) == 0 {
		return true
	}
	for _, row := range res.Rows {
		t, ok := row[i].(time.Time)
		if !ok || t.Day() != 1 || t.Hour() != 0 || t.Minute() != 0 || t.Second() != 0 {
			return false
		}
	}
	return true
}

// labelText shows a label as a reader would say it: months as "July 2026", days as 2026-07-10.
func labelText(v any, monthly bool) string {
	switch t := v.(type) {
	case nil:
		return "(none)"
	case time.Time:
		switch {
		case monthly:
			return t.Format("January 2006")
		case t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0:
			return t.Format("2006-01-02")
		}
		return t.Format("2006-01-02 15:04")
	case string:
		if m, err := time.Parse("2006-01", t); err == nil {
			return m.Format("January 2006")
		}
		return t
	}
	return tsql.AsText(v)
}
