package sql

import (
	"context"
	"fmt"
)

// The columns a query's rows would have, without running it over the data: DuckDB describes a
// SELECT, ClickHouse (18.16 too) a table function over the subquery. Both give the engine's own
// type text, as Columns does for a relation, so the two compare.

// Describe lists the columns of a read-only query's rows.
func (e *duckEngine) Describe(ctx context.Context, query string, args ...any) ([]Column, error) {
	// on lines of their own: a comment ending the query must not swallow the wrapper
	res, err := e.Query(ctx, "DESCRIBE SELECT * FROM (\n"+query+"\n) AS q", args...)
	if err != nil {
		return nil, fmt.Errorf("describe query: %w", err)
	}
	cols, err := describedColumns(res)
	if err != nil {
		return nil, err
	}
	for i, r := range res.Rows { // DuckDB's types do not say NULL; its third column does
		cols[i].Nullable = len(r) > 2 && AsText(r[2]) == "YES"
	}
	return cols, nil
}

// Describe lists the columns of a read-only query's rows.
func (e *chEngine) Describe(ctx context.Context, query string, args ...any) ([]Column, error) {
	res, err := e.Query(ctx, "DESCRIBE TABLE (SELECT * FROM (\n"+query+"\n) AS q)", args...)
	if err != nil {
		return nil, fmt.Errorf("describe query: %w", err)
	}
	return describedColumns(res)
}

// describedColumns reads a DESCRIBE result: the name, then the type text, in both engines.
func describedColumns(res *Result) ([]Column, error) {
	cols := make([]Column, 0, len(res.Rows))
	for _, r := range res.Rows {
		if len(r) < 2 {
			return nil, fmt.Errorf("describe query: a row of %d values", len(r))
		}
		t := AsText(r[1])
		kind, nullable := classify(t)
		cols = append(cols, Column{Name: AsText(r[0]), Type: t, Kind: kind, Nullable: nullable})
	}
	return cols, nil
}
