package sql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// CatalogEntry is one relation found by ViewCatalog.
type CatalogEntry struct {
	Relation
	// Source is the relation a plain `SELECT * FROM x` view reads; SourceErr says why it could
	// not be read from the view's definition. Both are empty for tables.
	Source    string
	SourceErr error
	// Note is what the last RepointNoted stored with the view, "" when none (or the view was
	// replaced or renamed outside trueup since).
	Note string
}

// catalogDialect is implemented by every dialect: the catalog read of ViewCatalog, as few
// statements as the engine reads fastest, each returning name, 1 for a view, its definition and
// its comment. A view whose definition comes back empty and whose comment is not a view note
// for it is read again with viewDefinitions.
type catalogDialect interface {
	viewCatalog(names, prefixes []string, viewsOnly bool) []catalogQuery
	viewDefinitions(views []string) catalogQuery
}

type catalogQuery struct {
	sql  string
	args []any
}

// ViewCatalog reads the relations of the current schema named one of names or starting with one
// of prefixes, with the relation each view reads: what Relations followed by ViewSource per view
// tells, in a few statements instead of one per view. A swap reads it while readers may be
// loading the engine.
func ViewCatalog(ctx context.Context, e Engine, names, prefixes []string) ([]CatalogEntry, error) {
	return viewCatalog(ctx, e.Dialect(), func(q catalogQuery) ([][]any, error) {
		res, err := e.Query(ctx, q.sql, q.args...)
		// ClickHouse reads each table's definition as it lists it: a table dropped meanwhile (a
		// partition write's staging table) fails the read. It is gone: read again.
		for try := 0; try < 5 && droppedWhileListed(err); try++ {
			res, err = e.Query(ctx, q.sql, q.args...)
		}
		if err != nil {
			return nil, err
		}
		return res.Rows, nil
	}, names, prefixes, false)
}

// droppedWhileListed reports ClickHouse's UNKNOWN_TABLE (60) from a read of system.tables.
func droppedWhileListed(err error) bool {
	var ex *clickhouse.Exception
	return errors.As(err, &ex) && ex.Code == 60
}

// viewCatalog is ViewCatalog through run, which may read inside a transaction; with viewsOnly it
// leaves tables out.
func viewCatalog(ctx context.Context, dl Dialect, run func(catalogQuery) ([][]any, error), names, prefixes []string, viewsOnly bool) ([]CatalogEntry, error) {
	d, ok := dl.(catalogDialect)
	if !ok {
		return nil, fmt.Errorf("view catalog: dialect %s cannot read it", dl.Name())
	}
	if len(names)+len(prefixes) == 0 {
		return nil, nil
	}
	var rows [][]any
	for _, q := range d.viewCatalog(names, prefixes, viewsOnly) {
		rs, err := run(q)
		if err != nil {
			return nil, fmt.Errorf("view catalog: %w", err)
		}
		rows = append(rows, rs...)
	}
	out := make([]CatalogEntry, 0, len(rows))
	var unread []string // views to read the definition of
	for _, r := range rows {
		c := CatalogEntry{Relation: Relation{Name: AsText(r[0]), View: AsInt64(r[1]) != 0}}
		if c.View {
			if reads, note, ok := decodeViewNote(c.Name, AsText(r[3])); ok {
				c.Source, c.Note = reads, note
			} else if def := AsText(r[2]); def != "" {
				c.Source, c.SourceErr = viewSource(def)
			} else {
				unread = append(unread, c.Name)
			}
		}
		out = append(out, c)
	}
	if len(unread) > 0 {
		rs, err := run(d.viewDefinitions(unread))
		if err != nil {
			return nil, fmt.Errorf("view catalog: %w", err)
		}
		defs := map[string]string{}
		for _, r := range rs {
			defs[AsText(r[0])] = AsText(r[1])
		}
		for i, c := range out {
			if c.View && c.Source == "" && c.SourceErr == nil {
				out[i].Source, out[i].SourceErr = viewSource(defs[c.Name])
			}
		}
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

// DuckDB reads tables and views in two statements, not one UNION ALL: a statement of one
// pipeline runs on the calling thread, while the pipelines of a UNION are handed to the engine's
// worker threads, which readers keep busy (measured under 8 readers, medians: 27 ms for the
// UNION, 0.7 and 1.4 ms for the two statements). They run one after the other: at once, they
// would take two CPUs from the readers. Views are read by their comment, not their definition:
// duckdb_views() renders the definition of every view, the engine's own included, whether or
// not the filter keeps it (0.3 ms against 1.2 ms for two views).
func (duckDialect) viewCatalog(names, prefixes []string, viewsOnly bool) []catalogQuery {
	vf, vargs := catalogFilter("view_name", "starts_with", names, prefixes)
	out := []catalogQuery{{`SELECT view_name, 1, '', coalesce(comment, '') FROM duckdb_views()
		WHERE database_name = current_database() AND schema_name = current_schema() AND NOT internal AND ` + vf, vargs}}
	if !viewsOnly {
		tf, targs := catalogFilter("table_name", "starts_with", names, prefixes)
		out = append(out, catalogQuery{`SELECT table_name, 0, '', '' FROM duckdb_tables()
			WHERE database_name = current_database() AND schema_name = current_schema() AND ` + tf, targs})
	}
	return out
}

func (duckDialect) viewDefinitions(views []string) catalogQuery {
	f, args := catalogFilter("view_name", "starts_with", views, nil)
	return catalogQuery{`SELECT view_name, sql FROM duckdb_views()
		WHERE database_name = current_database() AND schema_name = current_schema() AND NOT internal AND ` + f, args}
}

func (chDialect) viewCatalog(names, prefixes []string, viewsOnly bool) []catalogQuery {
	f, args := catalogFilter("name", "startsWith", names, prefixes)
	if viewsOnly {
		f += " AND engine = 'View'"
	}
	return []catalogQuery{{`SELECT name, toUInt8(engine = 'View'), if(engine = 'View', create_table_query, ''), '' FROM system.tables
		WHERE database = currentDatabase() AND NOT startsWith(name, '.inner') AND ` + f, args}}
}

func (chDialect) viewDefinitions(views []string) catalogQuery {
	f, args := catalogFilter("name", "startsWith", views, nil)
	return catalogQuery{`SELECT name, create_table_query FROM system.tables
		WHERE database = currentDatabase() AND engine = 'View' AND ` + f, args}
}

// NotedPoint is one view of a RepointNoted: the table it must read now and the note to keep
// with it.
type NotedPoint struct {
	ViewPoint
	From string // the table the view reads now; "" when the view must not exist yet
	Note string // kept with the view; ViewCatalog reads it back as CatalogEntry.Note
	// Carry is what the repoint's transaction writes into Table first: the partitions the
	// version being left gained since the one being made live was built (see Carry).
	Carry []Carry
}

// NotedRepointer is implemented by engines that can, in one transaction, check what views read,
// repoint them and keep a note with each (DuckDB: the view's comment). The note commits with the
// repoint: a record of the change that a crash cannot separate from it.
type NotedRepointer interface {
	// RepointNoted repoints every view to its Table and stores its Note, after checking inside
	// the same transaction that each view reads its From. When one does not, it returns an
	// error wrapping ErrViewMoved and changes nothing; on any error nothing is changed.
	RepointNoted(ctx context.Context, points []NotedPoint) error
}

// ErrViewMoved says a view did not read what a RepointNoted expected.
var ErrViewMoved = errors.New("the view does not read what trueup expected")

// viewNote is what a view's comment holds after RepointNoted: the view's own name and what it
// reads, so that a comment kept by a rename, or a view replaced outside trueup (which drops the
// comment), is not taken for the truth, and the caller's note.
type viewNote struct {
	Trueup string `json:"trueup_view"`
	Reads  string `json:"reads"`
	Note   string `json:"note,omitempty"`
}

func encodeViewNote(view, reads, note string) string {
	b, _ := json.Marshal(viewNote{Trueup: view, Reads: reads, Note: note})
	return string(b)
}

// decodeViewNote reads comment as the note RepointNoted left on view; ok is false when it is not
// one, or is one for another view.
func decodeViewNote(view, comment string) (reads, note string, ok bool) {
	if !strings.HasPrefix(comment, `{"trueup_view":`) {
		return "", "", false
	}
	var n viewNote
	if json.Unmarshal([]byte(comment), &n) != nil || n.Trueup != view || n.Reads == "" {
		return "", "", false
	}
	return n.Reads, n.Note, true
}
