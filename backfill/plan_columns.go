package backfill

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"trueup/fault"
	tsql "trueup/sql"
)

// checkColumns compares the columns of a transform's rows with those of its table's live
// version, which the run's new version is created like: a column the table does not have
// (SELECT * over an input with more columns), one the transform does not give, or a value that
// does not go into the column's type without loss is a blocking finding naming the columns.
// Without it the run builds v2, then fails every partition on the engine's error (DuckDB), or
// drops extra columns and fills missing ones with defaults (ClickHouse).
//
// It runs after checkOutput passed, so the transform prepares and the table's live version
// exists; an error describing either is reported as a finding all the same.
func (pl Planner) checkColumns(ctx context.Context, t transform, p *Plan) {
	b, label := t.b, t.label()
	q, args, err := tsql.Expand(pl.Engine.Dialect(), b.SQL, t.windows[0].Params())
	if err != nil {
		p.block("%stransform: %v", label, err)
		return
	}
	got, err := pl.Engine.Describe(ctx, q, args...)
	if err != nil {
		p.block("%stransform: columns: %s", label, fault.FirstLine(err.Error()))
		return
	}
	live, err := pl.Engine.ViewSource(ctx, b.Table)
	if err != nil {
		p.block("%stable %s: %v", label, b.Table, err)
		return
	}
	want, err := pl.Engine.Columns(ctx, live)
	if err != nil {
		p.block("%stable %s: %v", label, b.Table, err)
		return
	}
	byName := func(cols []tsql.Column, name string) (tsql.Column, bool) {
		i := slices.IndexFunc(cols, func(c tsql.Column) bool { return c.Name == name })
		if i < 0 {
			return tsql.Column{}, false
		}
		return cols[i], true
	}
	var extra, missing []string
	for _, c := range got {
		if _, ok := byName(want, c.Name); !ok {
			extra = append(extra, c.Name)
		}
	}
	for _, c := range want {
		if _, ok := byName(got, c.Name); !ok {
			missing = append(missing, c.Name)
		}
	}
	if len(extra) > 0 {
		p.block("%stransform: its rows have columns %s does not: %s (a backfill rebuilds the table as it is: select only its columns, or change the table first)",
			label, b.Table, strings.Join(extra, ", "))
	}
	if len(missing) > 0 {
		p.block("%stransform: its rows lack columns of %s: %s (each column of the table must come from the transform, or the new version would hold NULLs or defaults there)",
			label, b.Table, strings.Join(missing, ", "))
	}
	for _, c := range got {
		if w, ok := byName(want, c.Name); ok && !insertable(c, w) {
			p.block("%stransform: column %s is %s where %s has %s: it would not go in without loss (CAST it in the SELECT if the change is meant)",
				label, c.Name, typePhrase(c), b.Table, typePhrase(w))
		}
	}
}

// insertable reports whether every value of column from goes into column to as it is: the same
// portable type (whatever the width: sum() widens a DECIMAL(18,2) to 38 digits, count() gives
// UInt64 for an Int64 column), or a widening that keeps the value (an integer into a decimal or
// a float, a decimal into a float, a date into a timestamp, anything scalar into a string). A
// float into a decimal is not: it is rounded to the column's scale. A string into a number or a
// date may fail on some row mid-run, a float into an integer or a timestamp into a date drops a
// part. A NULL literal (ClickHouse: Nullable(Nothing)) goes anywhere.
func insertable(from, to tsql.Column) bool {
	if from.UntypedNull() {
		return true
	}
	if from.Kind == to.Kind {
		return from.Kind != tsql.TypeOther || strings.EqualFold(tsql.BaseType(from.Type), tsql.BaseType(to.Type))
	}
	switch to.Kind {
	case tsql.TypeString:
		return from.Kind != tsql.TypeOther
	case tsql.TypeFloat:
		return from.Kind == tsql.TypeInt || from.Kind == tsql.TypeDecimal
	case tsql.TypeDecimal:
		return from.Kind == tsql.TypeInt
	case tsql.TypeTimestamp:
		return from.Kind == tsql.TypeDate
	}
	return false
}

// typePhrase says a column's type in words and as the engine writes it: "an int (BIGINT)".
func typePhrase(c tsql.Column) string {
	if c.Kind == tsql.TypeOther {
		return c.Type
	}
	article := "a"
	if c.Kind == tsql.TypeInt {
		article = "an"
	}
	return fmt.Sprintf("%s %s (%s)", article, c.Kind, c.Type)
}
