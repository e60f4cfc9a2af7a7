package sql

import (
	"context"
	"fmt"
)

// CurrentQualifiers lists the qualifiers under which a relation of the current schema can also
// be named, for RewriteTables: on DuckDB the schema ("main"), the database and schema
// ("warehouse.main") and, when the schema is main, the database ("warehouse"); on ClickHouse the
// database.
func CurrentQualifiers(ctx context.Context, e Engine) ([]string, error) {
	res, err := e.Query(ctx, e.Dialect().CurrentQualifiers())
	if err != nil {
		return nil, fmt.Errorf("current schema: %w", err)
	}
	out := make([]string, 0, len(res.Rows))
	for _, r := range res.Rows {
		if q := AsText(r[0]); q != "" {
			out = append(out, q)
		}
	}
	return out, nil
}

func (duckDialect) CurrentQualifiers() string {
	return `SELECT current_schema() UNION ALL SELECT current_database() || '.' || current_schema()
		UNION ALL SELECT current_database() WHERE current_schema() = 'main'`
}

func (chDialect) CurrentQualifiers() string { return "SELECT currentDatabase()" }
