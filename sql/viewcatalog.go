package sql

import (
	"context"
	"fmt"
	"strings"
)

// CatalogEntry is one relation found by ViewCatalog.
type CatalogEntry struct {
	Relation
	// Source is the relation a plain `SELECT * FROM x` view reads; SourceErr says why it could
	// not be read from the view's definition. Both are empty for tables.
	Source    string
	SourceErr error
}

// catalogDialect is implemented by every dialect: the one-query catalog read of ViewCatalog.
type catalogDialect interface {
	viewCatalog(names, prefixes []string) (string, []any)
}

// ViewCatalog reads, in one catalog query, the relations of the current schema named one of
// names or starting with one of prefixes, with the relation each view reads. It is what
// Relations followed by ViewSource per view tells, in one round trip: a swap reads it while
// readers may be loading the engine.
func ViewCatalog(ctx context.Context, e Engine, names, prefixes []string) ([]CatalogEntry, error) {
	d, ok := e.Dialect().(catalogDialect)
	if !ok {
		return nil, fmt.Errorf("view catalog: dialect %s cannot read it", e.Dialect().Name())
	}
	if len(names)+len(prefixes) == 0 {
		return nil, nil
	}
	q, args := d.viewCatalog(names, prefixes)
	res, err := e.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("view catalog: %w", err)
	}
	out := make([]CatalogEntry, 0, len(res.Rows))
	for _, r := range res.Rows {
		c := CatalogEntry{Relation: Relation{Name: AsText(r[0]), View: AsInt64(r[1]) != 0}}
		if c.View {
			c.Source, c.SourceErr = viewSource(AsText(r[2]))
		}
		out = append(out, c)
	}
	return out, nil
}

// catalogFilter renders "col IN (…) OR starts(col, …) …" with its arguments.
func catalogFilter(col, startsWith string, names, prefixes []string) (string, []any) {
	var conds []string
	var args []any
	if len(names) > 0 {
		conds = append(conds, col+" IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(names)), ", ")+")")
		for _, n := range names {
			args = append(args, n)
		}
	}
	for _, p := range prefixes {
		conds = append(conds, startsWith+"("+col+", ?)")
		args = append(args, p)
	}
	return "(" + strings.Join(conds, " OR ") + ")", args
}

func (duckDialect) viewCatalog(names, prefixes []string) (string, []any) {
	tf, targs := catalogFilter("table_name", "starts_with", names, prefixes)
	vf, vargs := catalogFilter("view_name", "starts_with", names, prefixes)
	q := `SELECT table_name, 0, '' FROM duckdb_tables()
		WHERE database_name = current_database() AND schema_name = current_schema() AND ` + tf + `
	UNION ALL
	SELECT view_name, 1, sql FROM duckdb_views()
		WHERE database_name = current_database() AND schema_name = current_schema() AND NOT internal AND ` + vf
	return q, append(targs, vargs...)
}

func (chDialect) viewCatalog(names, prefixes []string) (string, []any) {
	f, args := catalogFilter("name", "startsWith", names, prefixes)
	q := `SELECT name, toUInt8(engine = 'View'), if(engine = 'View', create_table_query, '') FROM system.tables
		WHERE database = currentDatabase() AND NOT startsWith(name, '.inner') AND ` + f
	return q, args
}
