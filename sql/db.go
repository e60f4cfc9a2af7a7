package sql

import (
	"context"
	dbsql "database/sql"
	"database/sql/driver"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"trueup/fault"
)

// db is the database/sql plumbing both engines share.
type db struct {
	pool *dbsql.DB
	info Info
	// poisons reports an error after which a connection must not be used again (nil: none).
	poisons func(error) bool
	// reads marks a context for a query that only reads (Query, Each, Check), so the engine can
	// hold it to reading the warehouse (nil: the engine needs nothing per query).
	reads func(context.Context) context.Context
}

func (e *db) reading(ctx context.Context) context.Context {
	if e.reads == nil {
		return ctx
	}
	return e.reads(ctx)
}

// querier is a warehouse pool or one connection of it: what an engine's statements run on (on
// picks which). It is not ledger.Querier and stays apart on purpose: it serves the engines, which
// know nothing of the ledger (the ledger imports this package), and an engine reads rows only
// through Query, so it needs no QueryRow.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*dbsql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (dbsql.Result, error)
}

// on runs fn on the pool or, when some errors poison a connection, on one connection that is
// thrown away if fn's error is one of them.
func (e *db) on(ctx context.Context, fn func(q querier) error) error {
	if e.poisons == nil {
		return fn(e.pool)
	}
	c, err := e.pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	err = fn(c)
	if err != nil && e.poisons(err) {
		c.Raw(func(any) error { return driver.ErrBadConn }) // closes it instead of pooling it
	}
	return err
}

func (e *db) Info() Info { return e.info }

// Ping asks the engine for one row, as a reader would: the readiness probe.
func (e *db) Ping(ctx context.Context) error {
	ctx = e.reading(ctx)
	return e.on(ctx, func(q querier) error {
		rows, err := q.QueryContext(ctx, "SELECT 1")
		if err != nil {
			return err
		}
		return rows.Close()
	})
}

func (e *db) Close() error { return e.pool.Close() }

func (e *db) Query(ctx context.Context, query string, args ...any) (*Result, error) {
	res := &Result{}
	err := e.each(ctx, query, args, func(cols []string) { res.Columns = cols }, func(row []any) error {
		res.Rows = append(res.Rows, append([]any(nil), row...))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (e *db) Each(ctx context.Context, query string, args []any, fn func(row []any) error) error {
	return e.each(ctx, query, args, nil, fn)
}

func (e *db) each(ctx context.Context, query string, args []any, head func([]string), fn func(row []any) error) error {
	ctx = e.reading(ctx)
	return e.on(ctx, func(q querier) error { return e.eachOn(ctx, q, query, args, head, fn) })
}

func (e *db) eachOn(ctx context.Context, q querier, query string, args []any, head func([]string), fn func(row []any) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	if head != nil {
		head(cols)
	}
	// Drivers hand decimals back in their own forms (ClickHouse's as text): read them as Decimals.
	// DuckDB hands a UUID back as its 16 bytes and a TIME as a time on 0001-01-01: read them as
	// the text the engine prints.
	decimals := make([]bool, len(cols))
	typeNames := make([]string, len(cols))
	if types, err := rows.ColumnTypes(); err == nil {
		for i, ct := range types {
			typeNames[i] = ct.DatabaseTypeName()
			k, _ := classify(typeNames[i])
			decimals[i] = k == TypeDecimal
		}
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	row := make([]any, len(cols))
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			row[i] = normalizeAs(v, typeNames[i])
			if s, ok := row[i].(string); ok && decimals[i] {
				row[i] = DecimalOf(s)
			}
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (e *db) Exec(ctx context.Context, query string, args ...any) error {
	return e.on(ctx, func(q querier) error {
		_, err := q.ExecContext(ctx, query, args...)
		return err
	})
}

// classify maps an engine's type text to a portable Type.
func classify(typ string) (Type, bool) {
	t, nullable := baseType(strings.TrimSpace(typ))
	low := strings.ToLower(t)
	switch {
	case strings.HasSuffix(low, "]") || composite(low):
		// a list, array, struct, map, tuple or union is none of its element types: not a
		// number to total, a date to partition by or text to match
		return TypeOther, nullable
	case strings.HasPrefix(low, "decimal") || strings.HasPrefix(low, "numeric"):
		return TypeDecimal, nullable
	case low == "double" || low == "float" || low == "real" || strings.HasPrefix(low, "float"):
		return TypeFloat, nullable
	case low == "date" || low == "date32":
		return TypeDate, nullable
	case strings.HasPrefix(low, "timestamp") || strings.HasPrefix(low, "datetime"):
		return TypeTimestamp, nullable
	case low == "boolean" || low == "bool":
		return TypeBool, nullable
	case intTypeRe.MatchString(low):
		return TypeInt, nullable
	case low == "varchar" || low == "string" || low == "text" || strings.HasPrefix(low, "fixedstring") ||
		strings.HasPrefix(low, "varchar(") || low == "uuid" || strings.HasPrefix(low, "enum"):
		return TypeString, nullable
	}
	return TypeOther, nullable
}

// intTypeRe matches the integer types' names as DuckDB and ClickHouse describe them (bigint,
// hugeint, uinteger; Int32, UInt64, Int128), not INTERVAL or POINT.
var intTypeRe = regexp.MustCompile(`^u?(tiny|small|big|huge)?int(eger)?(8|16|32|64|128|256)?$`)

// nested reports whether a column of type typ holds lists, arrays, structs, maps, tuples or
// unions (behind Nullable or LowCardinality too).
func nested(typ string) bool {
	low := strings.ToLower(unwrapType(typ))
	return strings.HasSuffix(low, "]") || composite(low)
}

// composite reports whether a type's name (lower case) is a container of other types.
func composite(low string) bool {
	for _, p := range []string{"struct(", "map(", "union(", "array(", "tuple(", "nested(", "list("} {
		if strings.HasPrefix(low, p) {
			return true
		}
	}
	return false
}

var versionRe = regexp.MustCompile(`(\d+)\.(\d+)(?:\.(\d+))?`)

func parseVersion(text string) ServerVersion {
	v := ServerVersion{Text: text}
	m := versionRe.FindStringSubmatch(text)
	if m == nil {
		return v
	}
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.Patch, _ = strconv.Atoi(m[3])
	}
	return v
}

// quoteWith doubles q inside ident and wraps it in q.
// QuoteBoth quotes an identifier the way both engines read one (the SQL standard's double
// quotes), for a condition written once and run on either side of a diff (reconcile Spec.Where).
func QuoteBoth(ident string) string { return quoteWith(ident, `"`) }

func quoteWith(ident string, q string) string {
	return q + strings.ReplaceAll(ident, q, q+q) + q
}

// splitRelation splits schema.name on the first unquoted dot.
func splitRelation(name string) []string {
	if i := strings.IndexByte(name, '.'); i > 0 && i < len(name)-1 {
		return []string{name[:i], name[i+1:]}
	}
	return []string{name}
}

// quoteRelation quotes each part of schema.name (splitRelation) with d.
func quoteRelation(d Dialect, name string) string {
	parts := splitRelation(name)
	for i, p := range parts {
		parts[i] = d.Quote(p)
	}
	return strings.Join(parts, ".")
}

// columnList is the quoted names of cols, comma-separated: an INSERT's column list and its
// SELECT's, in the table's order.
func columnList(d Dialect, cols []Column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = d.Quote(c.Name)
	}
	return strings.Join(names, ", ")
}

// replaceOne is ReplacePartition in terms of the engine's ReplacePartitions: one window, its rows.
func replaceOne(ctx context.Context, e Engine, table string, w Window, query string, args []any) (int64, error) {
	rows, err := e.ReplacePartitions(ctx, table, []PartitionWrite{{Window: w, Query: query, Args: args}})
	if err != nil {
		return 0, err
	}
	return rows[0], nil
}

// listRelations runs query, whose rows are a relation's name and kind (view: a view's kind).
func listRelations(ctx context.Context, e Engine, query, view string) ([]Relation, error) {
	res, err := e.Query(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("list relations: %w", err)
	}
	out := make([]Relation, 0, len(res.Rows))
	for _, r := range res.Rows {
		out = append(out, Relation{Name: AsText(r[0]), View: AsText(r[1]) == view})
	}
	return out, nil
}

// viewSourceOf reads the relation a view reads from the answer to a query of its definition (no
// row: there is no such view).
func viewSourceOf(view string, res *Result, err error) (string, error) {
	if err != nil {
		return "", fmt.Errorf("view %s: %w", view, err)
	}
	if len(res.Rows) == 0 {
		return "", fault.New(fault.NotFound, "there is no view %s", view)
	}
	return viewSource(AsText(res.Rows[0][0]))
}

// viewSource reads the relation a view definition of the form `CREATE VIEW … AS SELECT * FROM x`
// reads, unquoted and without its schema or database: the definition is lexed, so quoted names
// ("order-lines", `zz-exp-views`.orders__v1, names with escaped quotes) read like plain ones.
func viewSource(def string) (string, error) {
	toks := Lex(def)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	from := -1
	for i, t := range toks {
		if !t.Quoted() && strings.EqualFold(t.Text, "FROM") {
			from = i
		}
	}
	// SELECT * FROM name, or SELECT * FROM qualifier.name
	if from >= 2 && toks[from-1].Text == "*" && strings.EqualFold(toks[from-2].Text, "SELECT") {
		switch rest := toks[from+1:]; {
		case len(rest) == 1 && rest[0].Ident() != "":
			return rest[0].Ident(), nil
		case len(rest) == 3 && rest[0].Ident() != "" && rest[1].Text == "." && rest[2].Ident() != "":
			return rest[2].Ident(), nil
		}
	}
	return "", fmt.Errorf("view is not a plain SELECT * FROM relation: %s", def)
}

func concatNormalized(d Dialect, cols []Column, opt HashOptions, sep string) string {
	parts := make([]string, 0, 2*len(cols))
	for i, c := range cols {
		if i > 0 {
			parts = append(parts, sep)
		}
		parts = append(parts, "coalesce("+normalizeFor(d, c, opt)+", "+nullMark+")")
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "concat(" + strings.Join(parts, ", ") + ")"
}

// normalizeFor is a column's normalised text under opt: at its stated precision when it has one.
func normalizeFor(d Dialect, c Column, opt HashOptions) string {
	if p, ok := statedPrecision(c, opt); ok {
		if pn, ok := d.(precisionNormalizer); ok {
			return pn.normalizeAt(c, p)
		}
	}
	return d.Normalize(c, scaleOf(opt))
}

// statedPrecision is the precision opt states for c, when it has one that applies to its kind.
func statedPrecision(c Column, opt HashOptions) (Precision, bool) {
	p, ok := opt.Precision[c.Name]
	return p, ok && (c.Kind.Numeric() || c.Kind == TypeTimestamp)
}

// nullMark stands for NULL in hashed text; engines disagree on backslash escapes, so it is a
// control character rather than \N.
const nullMark = "'\x1e'"

// unitSep separates column values in the hashed text; it does not occur in ordinary data.
const unitSep = "'\x1f'"

// bigNumber is the magnitude from which a number no longer fits a BIGINT once scaled by 10^scale.
// Normalize writes smaller numbers as that integer, NaN and infinities by name, and larger ones
// as 15 significant digits and a power of ten, the same text in every engine.
func bigNumber(scale int) string { return fmt.Sprintf("9e%d", 18-scale) }

func scaleOf(opt HashOptions) int {
	if opt.Scale <= 0 {
		return 6
	}
	return opt.Scale
}

// inWindows is the condition that a column's value lies in any of the windows, with its
// arguments, bound the dialect's way.
func inWindows(d Dialect, column string, ws []Window) (string, []any) {
	ws = coalesce(ws)
	col := d.Quote(column)
	conds := make([]string, 0, len(ws))
	var args []any
	for _, w := range ws {
		if w.Null {
			conds = append(conds, col+" IS NULL")
			continue
		}
		lo, a := d.Bind(w.Params()["start"])
		hi, b := d.Bind(w.Params()["end"])
		conds = append(conds, fmt.Sprintf("(%s >= %s AND %s < %s)", col, lo, col, hi))
		args = append(args, a, b)
	}
	return strings.Join(conds, " OR "), args
}

// InTx runs fn in one transaction of pool: all of its writes land or none do; fn's error rolls it
// back and is returned as is. The ledger's transactions and DuckDB's partition writes both use it.
func InTx(ctx context.Context, pool *dbsql.DB, fn func(tx *dbsql.Tx) error) error {
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// coalesce joins windows that touch or overlap into one: the same rows, fewer conditions. A
// year's scope excluded from a copy is one range, not 365 of them each row is tested against.
func coalesce(ws []Window) []Window {
	if len(ws) < 2 {
		return ws
	}
	sorted := slices.Clone(ws)
	slices.SortFunc(sorted, func(a, b Window) int { return a.Start.Compare(b.Start) })
	out := sorted[:1]
	for _, w := range sorted[1:] {
		last := &out[len(out)-1]
		if w.Column == last.Column && w.Type == last.Type && w.Null == last.Null && (w.Null || !w.Start.After(last.End)) {
			if w.End.After(last.End) {
				last.End = w.End
			}
			continue
		}
		out = append(out, w)
	}
	return out
}
