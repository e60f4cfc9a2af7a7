package sql

import (
	"context"
	dbsql "database/sql"
	"database/sql/driver"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"trueup/fault"

	"github.com/duckdb/duckdb-go/v2"
)

type duckEngine struct {
	db
	dialect duckDialect
}

var lockPIDRe = regexp.MustCompile(`PID (\d+)`)

func openDuckDB(ctx context.Context, url, path string, create bool) (Engine, error) {
	if path == "" {
		return nil, fault.New(fault.Invalid, "%q: missing path (use duckdb:PATH or duckdb::memory:)", url)
	}
	path, schema, err := duckSchema(url, path)
	if err != nil {
		return nil, err
	}
	dsn := path
	if path == ":memory:" {
		dsn = ""
	} else if dir := filepath.Dir(path); dir != "." {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fault.New(fault.Invalid, "%s: directory %s does not exist", url, dir)
		}
	}
	if dsn != "" && !create {
		if st, err := os.Stat(path); err != nil {
			return nil, fault.New(fault.Invalid, "%s: no DuckDB file at %s", url, path)
		} else if st.IsDir() {
			return nil, fault.New(fault.Invalid, "%s: %s is a directory, not a DuckDB file", url, path)
		}
	}
	// user SQL runs here: it reads the warehouse and nothing else (see sandbox.go)
	var init func(driver.ExecerContext) error
	if schema != "" {
		// every connection reads and writes the schema's tables by their unqualified names,
		// as a ClickHouse target does its database's; a session setting, which the locked
		// configuration leaves settable
		set := "SET schema = '" + schema + "'" // a plain identifier (duckSchemaRe): no quote to escape
		init = func(x driver.ExecerContext) error {
			_, err := x.ExecContext(context.Background(), set, nil)
			return err
		}
	}
	conn, err := duckdb.NewConnector(dsn+"?"+duckSandbox, init)
	if err != nil {
		return nil, duckOpenError(url, err)
	}
	pool := openDuckPool(conn)
	var v string
	err = lockDuck(ctx, pool)
	if err == nil {
		err = pool.QueryRowContext(ctx, "SELECT version()").Scan(&v)
	}
	if err != nil {
		pool.Close()
		if schema != "" && strings.Contains(err.Error(), "No catalog + schema named") {
			return nil, fault.New(fault.Invalid, "%s: there is no schema %s in %s", url, schema, path)
		}
		return nil, duckOpenError(url, err)
	}
	return &duckEngine{db: db{pool: pool, info: Info{Kind: "duckdb", Target: Redact(url), Key: targetKey(url), Version: parseVersion(v)}}}, nil
}

// lockDuck sets a DuckDB target's database to UTC and locks its configuration, once per
// database (a second engine on the same file in this process shares it, already locked). In
// UTC a TIMESTAMPTZ's day or hour is the UTC one whatever the host's zone, as the partition
// windows and ClickHouse's partitions are: on a host in Berlin, a backfill partitioned by a
// TIMESTAMPTZ column fixed Berlin days with UTC windows. The zone cannot be given when the
// database opens (it needs the ICU extension, loaded later), nor set once the configuration is
// locked: so it is set, then the lock.
func lockDuck(ctx context.Context, pool *dbsql.DB) error {
	locked := func() bool {
		var v bool
		return pool.QueryRowContext(ctx, "SELECT current_setting('lock_configuration')").Scan(&v) == nil && v
	}
	if locked() {
		return nil
	}
	pool.ExecContext(ctx, "SET GLOBAL TimeZone = 'UTC'") // without ICU, times are in UTC anyway
	if _, err := pool.ExecContext(ctx, "SET lock_configuration = true"); err != nil && !locked() {
		return err
	}
	return nil
}

// duckSchemaRe is a schema a duckdb target may name: a plain identifier.
var duckSchemaRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// duckSchema splits a duckdb target's path from its one option, ?schema=NAME: the schema whose
// tables the target holds ("" for the file's default, main). Any other option is refused: it
// would reach DuckDB's configuration, enable_external_access among them.
func duckSchema(url, path string) (string, string, error) {
	path, opts, ok := strings.Cut(path, "?")
	if !ok {
		return path, "", nil
	}
	schema, ok := strings.CutPrefix(opts, "schema=")
	if !ok || !duckSchemaRe.MatchString(schema) {
		return "", "", fault.New(fault.Invalid, "%s: a duckdb target takes a path and at most ?schema=NAME (a plain identifier)", url)
	}
	return path, schema, nil
}

func duckOpenError(url string, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "Could not set lock") || strings.Contains(msg, "Conflicting lock") {
		who := "another process"
		if m := lockPIDRe.FindStringSubmatch(msg); m != nil {
			who = "process " + m[1]
		}
		return fmt.Errorf("%w: %s is held by %s (stop it, or use --server to talk to it)", ErrLocked, url, who)
	}
	return fault.New(fault.Invalid, "%s: %s", url, fault.FirstLine(msg))
}

func (e *duckEngine) Dialect() Dialect { return e.dialect }

func (e *duckEngine) Check(ctx context.Context, query string, args ...any) error {
	// on lines of their own: a comment ending the query must not swallow the wrapper
	err := e.Exec(ctx, "SELECT * FROM (\n"+query+"\n) AS q LIMIT 0", args...)
	if err != nil && strings.HasPrefix(err.Error(), "Parser Error") {
		// a query that ends too early fails at the wrapper's ")", which the user never wrote:
		// the parser's word on the query alone says what it lacks
		if perr := e.syntaxError(ctx, query); perr != nil {
			return perr
		}
	}
	return err
}

// syntaxError is the parser's error of query on its own, nil when it parses (or the parser
// cannot be asked): parsing runs nothing.
func (e *duckEngine) syntaxError(ctx context.Context, query string) error {
	var msg *string
	err := e.pool.QueryRowContext(ctx, "SELECT json_extract_string(json_serialize_sql(CAST(? AS VARCHAR)), '$.error_message')", query).Scan(&msg)
	if err != nil || msg == nil {
		return nil
	}
	return fmt.Errorf("Parser Error: %s", *msg)
}

// ExpressionSyntax is the engine's syntax error of expr, a SQL expression, written on its own,
// or nil: what a statement trueup wraps around it cannot say without naming the wrapper (on
// DuckDB, "v >" fails at the ")" trueup closed it with). Where the engine cannot parse without
// running, nil.
func ExpressionSyntax(ctx context.Context, e Engine, expr string) error {
	if d, ok := e.(*duckEngine); ok {
		return d.syntaxError(ctx, "SELECT "+expr)
	}
	return nil
}

func (e *duckEngine) Relations(ctx context.Context) ([]Relation, error) {
	return listRelations(ctx, e, `SELECT table_name, table_type FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_catalog = current_database() ORDER BY table_name`, "VIEW")
}

func (e *duckEngine) Columns(ctx context.Context, relation string) ([]Column, error) {
	parts := splitRelation(relation)
	q := `SELECT column_name, data_type, is_nullable FROM information_schema.columns
		WHERE table_catalog = current_database() AND table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position`
	args := []any{parts[0]}
	if len(parts) == 2 {
		q = `SELECT column_name, data_type, is_nullable FROM information_schema.columns
			WHERE table_catalog = current_database() AND table_schema = ? AND table_name = ? ORDER BY ordinal_position`
		args = []any{parts[0], parts[1]}
	}
	res, err := e.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", relation, err)
	}
	if len(res.Rows) == 0 {
		return nil, fault.New(fault.NotFound, "there is no relation %s", relation)
	}
	cols := make([]Column, 0, len(res.Rows))
	for _, r := range res.Rows {
		typ := AsText(r[1])
		kind, _ := classify(typ)
		cols = append(cols, Column{Name: AsText(r[0]), Type: typ, Kind: kind, Nullable: AsText(r[2]) == "YES"})
	}
	return cols, nil
}

func (e *duckEngine) ViewSource(ctx context.Context, view string) (string, error) {
	res, err := e.Query(ctx, `SELECT sql FROM duckdb_views() WHERE view_name = ? AND schema_name = current_schema() AND NOT internal`, view)
	return viewSourceOf(view, res, err)
}

func (e *duckEngine) CreateTable(ctx context.Context, table string, cols []Column, _ string, _ []string) error {
	defs := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = e.dialect.Quote(c.Name) + " " + duckType(c)
	}
	return e.Exec(ctx, "CREATE TABLE "+e.dialect.QuoteRelation(table)+" ("+strings.Join(defs, ", ")+")")
}

func (e *duckEngine) CreateTableAs(ctx context.Context, table, _ string, _ []string, query string, args ...any) error {
	return e.Exec(ctx, "CREATE TABLE "+e.dialect.QuoteRelation(table)+" AS "+query, args...)
}

func (e *duckEngine) CreateTableLike(ctx context.Context, table, src string) error {
	return e.Exec(ctx, "CREATE TABLE "+e.dialect.QuoteRelation(table)+" AS SELECT * FROM "+e.dialect.QuoteRelation(src)+" LIMIT 0")
}

func (e *duckEngine) Insert(ctx context.Context, table string, cols []string, rows [][]any) error {
	meta, err := e.Columns(ctx, table)
	if err != nil {
		return err
	}
	// The appender takes a float for a DECIMAL column as its unscaled integer: convert.
	scales := map[string]int{}
	for _, c := range meta {
		if c.Kind == TypeDecimal {
			p, s := decimalShape(c.Type)
			scales[c.Name] = p<<8 | s
		}
	}
	conn, err := e.pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	parts := splitRelation(table)
	schema, name := "", parts[0]
	if len(parts) == 2 {
		schema, name = parts[0], parts[1]
	}
	return conn.Raw(func(dc any) error {
		app, err := duckdb.NewAppenderWithColumns(dc.(driver.Conn), "", schema, name, cols)
		if err != nil {
			return fmt.Errorf("insert into %s: %w", table, err)
		}
		vals := make([]driver.Value, len(cols))
		for _, r := range rows {
			for i, v := range r {
				if ps, dec := scales[cols[i]]; dec {
					switch x := v.(type) {
					case float64:
						v = toDuckDecimal(x, ps>>8, ps&0xff)
					case Decimal:
						v = duckDecimalOf(x, ps>>8, ps&0xff)
					}
				}
				vals[i] = v
			}
			if err := app.AppendRow(vals...); err != nil {
				app.Close()
				return fmt.Errorf("insert into %s: %w", table, err)
			}
		}
		return app.Close()
	})
}

func toDuckDecimal(f float64, precision, scale int) duckdb.Decimal {
	scaled := new(big.Float).SetFloat64(f * math.Pow10(scale))
	if f < 0 {
		scaled.Sub(scaled, big.NewFloat(0.5))
	} else {
		scaled.Add(scaled, big.NewFloat(0.5))
	}
	v, _ := scaled.Int(nil)
	return duckdb.Decimal{Width: uint8(precision), Scale: uint8(scale), Value: v}
}

func (e *duckEngine) inTx(ctx context.Context, fn func(tx *dbsql.Tx) error) error {
	return InTx(ctx, e.pool, fn)
}

func (e *duckEngine) ReplacePartition(ctx context.Context, table string, w Window, query string, args ...any) (int64, error) {
	return replaceOne(ctx, e, table, w, query, args)
}

// ReplacePartitions deletes the partitions (one statement; their windows do not overlap) and
// inserts each one's rows, in one transaction: one commit for all.
func (e *duckEngine) ReplacePartitions(ctx context.Context, table string, writes []PartitionWrite) ([]int64, error) {
	if len(writes) == 0 {
		return nil, nil
	}
	d := e.dialect
	t := d.QuoteRelation(table)
	rows := make([]int64, len(writes))
	windows := make([]Window, len(writes))
	for i, w := range writes {
		windows[i] = w.Window
	}
	err := e.inTx(ctx, func(tx *dbsql.Tx) error {
		held, err := e.heldRows(ctx, tx, table, writes)
		if err != nil {
			return err
		}
		all, allArgs := inWindows(d, windows[0].Column, windows)
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+t+" WHERE "+all, allArgs...); err != nil {
			return fmt.Errorf("replace partition of %s: %w", table, err)
		}
		for i, w := range writes {
			in, inArgs := inWindows(d, w.Window.Column, []Window{w.Window})
			ins := "INSERT INTO " + t + " BY NAME SELECT * FROM (\n" + w.Query + "\n) AS q WHERE " + in
			res, err := tx.ExecContext(ctx, ins, append(append([]any{}, w.Args...), inArgs...)...)
			if err != nil {
				return fmt.Errorf("replace partition of %s: %w", table, err)
			}
			if rows[i], err = res.RowsAffected(); err != nil {
				return err
			}
			if rows[i] == 0 && held[i] > 0 { // the transaction rolls back: nothing is written
				return &EmptiedError{Table: table, Window: w.Window, Rows: held[i]}
			}
		}
		return nil
	})
	return rows, err
}

// heldRows counts, for each NeverEmpty write, the rows table holds in its window (0 for the
// others).
func (e *duckEngine) heldRows(ctx context.Context, tx *dbsql.Tx, table string, writes []PartitionWrite) ([]int64, error) {
	held := make([]int64, len(writes))
	for i, w := range writes {
		if !w.NeverEmpty {
			continue
		}
		in, inArgs := inWindows(e.dialect, w.Window.Column, []Window{w.Window})
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+e.dialect.QuoteRelation(table)+" WHERE "+in, inArgs...).Scan(&held[i]); err != nil {
			return nil, fmt.Errorf("replace partition of %s: %w", table, err)
		}
	}
	return held, nil
}

func (e *duckEngine) CopyPartitions(ctx context.Context, dst, src string, column string, exclude []Window) error {
	d := e.dialect
	q := "INSERT INTO " + d.QuoteRelation(dst) + " BY NAME SELECT * FROM " + d.QuoteRelation(src)
	cond, args := inWindows(d, column, exclude)
	if cond != "" {
		// a row whose column is NULL lies in no window: NOT (NULL) would leave it behind
		q += " WHERE NOT coalesce((" + cond + "), false)"
	}
	return e.Exec(ctx, q, args...)
}

func (e *duckEngine) RepointViews(ctx context.Context, points []ViewPoint) error {
	return e.inTx(ctx, func(tx *dbsql.Tx) error {
		for _, s := range e.dialect.RepointStatements(points, nil, "") {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("repoint views: %w", err)
			}
		}
		return nil
	})
}

// RepointNoted checks, repoints and notes the views in one transaction: the check reads the
// views' notes inside it (their definitions only where a note is missing), and the repoint is one
// multi-statement call (a view and its comment each). The points' carries are written between the
// check and the repoint, in the same transaction: no reader sees a view moved without them.
func (e *duckEngine) RepointNoted(ctx context.Context, points []NotedPoint) error {
	names := make([]string, len(points))
	var carries []Carry
	for i, p := range points {
		names[i] = p.View
		carries = append(carries, p.Carry...)
	}
	cols, err := carryColumns(ctx, e, carries)
	if err != nil {
		return fmt.Errorf("repoint views: %w", err)
	}
	return e.inTx(ctx, func(tx *dbsql.Tx) error {
		entries, err := viewCatalog(ctx, e.dialect, func(q catalogQuery) ([][]any, error) {
			var rows [][]any
			err := e.eachOn(ctx, tx, q.sql, q.args, nil, func(r []any) error {
				rows = append(rows, append([]any(nil), r...))
				return nil
			})
			return rows, err
		}, names, nil, true)
		if err != nil {
			return fmt.Errorf("repoint views: %w", err)
		}
		// Only views are read: a table of a view's name makes its CREATE OR REPLACE VIEW fail.
		reads := map[string]string{}
		for _, c := range entries {
			reads[c.Name] = c.Source
			if c.SourceErr != nil {
				reads[c.Name] = "(" + c.SourceErr.Error() + ")"
			}
		}
		stmts := make([]string, 0, 2*len(points))
		for _, p := range points {
			if got, ok := reads[p.View]; got != p.From || ok != (p.From != "") {
				if !ok {
					got = "(nothing: it does not exist)"
				}
				return fmt.Errorf("repoint views: %s reads %s, not %s: %w", p.View, got, p.From, ErrViewMoved)
			}
			note, err := e.dialect.Literal(Param{Type: TypeString, Value: encodeViewNote(p.View, p.Table, p.Note)})
			if err != nil {
				return err
			}
			stmts = append(stmts, e.dialect.RepointStatements([]ViewPoint{p.ViewPoint}, nil, "")[0],
				"COMMENT ON VIEW "+e.dialect.QuoteRelation(p.View)+" IS "+note)
		}
		for i, c := range carries {
			if err := e.carryIn(ctx, tx, cols[i], c); err != nil {
				return fmt.Errorf("repoint views: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, strings.Join(stmts, ";\n")); err != nil {
			return fmt.Errorf("repoint views: %w", err)
		}
		return nil
	})
}

func (e *duckEngine) DropTable(ctx context.Context, table string) error {
	return e.Exec(ctx, e.dialect.Drop(table, false))
}

func duckType(c Column) string {
	if c.Type != "" && c.Type == strings.ToUpper(c.Type) {
		return c.Type // already a DuckDB type name
	}
	switch c.Kind {
	case TypeString:
		return "VARCHAR"
	case TypeInt:
		return "BIGINT"
	case TypeFloat:
		return "DOUBLE"
	case TypeDecimal:
		p, s := decimalShape(c.Type)
		return fmt.Sprintf("DECIMAL(%d,%d)", p, s)
	case TypeDate:
		return "DATE"
	case TypeTimestamp:
		return "TIMESTAMP"
	case TypeBool:
		return "BOOLEAN"
	}
	return "VARCHAR"
}

var decimalRe = regexp.MustCompile(`\((\d+)\s*,\s*(\d+)\)`)

// decimalShape reads precision and scale from a decimal type text, defaulting to (18,4).
func decimalShape(typ string) (int, int) {
	if m := decimalRe.FindStringSubmatch(typ); m != nil {
		p, _ := strconv.Atoi(m[1])
		s, _ := strconv.Atoi(m[2])
		return p, s
	}
	return 18, 4
}

type duckDialect struct{}

func (duckDialect) Name() string { return "duckdb" }

func (duckDialect) Quote(ident string) string { return quoteWith(ident, `"`) }

func (d duckDialect) QuoteRelation(name string) string { return quoteRelation(d, name) }

func (duckDialect) Bind(p Param) (string, any) {
	switch p.Type {
	case TypeDate:
		return "CAST(? AS DATE)", p.Value
	case TypeTimestamp:
		return "CAST(? AS TIMESTAMP)", p.Value
	}
	return "?", p.Value
}

// DuckDB's string literals have no escapes but the doubled quote: a backslash is itself.
func (duckDialect) Literal(p Param) (string, error) {
	return literal(p, "DATE '%s'", "TIMESTAMP '%s'", false)
}

// literal renders p as a literal; escapes says backslashes escape in the engine's strings.
func literal(p Param, dateFmt, tsFmt string, escapes bool) (string, error) {
	switch v := p.Value.(type) {
	case time.Time:
		if p.Type == TypeTimestamp {
			return fmt.Sprintf(tsFmt, v.UTC().Format("2006-01-02 15:04:05")), nil
		}
		return fmt.Sprintf(dateFmt, v.Format("2006-01-02")), nil
	case string:
		if escapes {
			v = strings.ReplaceAll(v, `\`, `\\`)
		}
		return "'" + strings.ReplaceAll(v, "'", "''") + "'", nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case Decimal:
		return v.String(), nil
	}
	return "", fmt.Errorf("literal: unsupported value %T", p.Value)
}

func (d duckDialect) Normalize(c Column, scale int) string { return normalizeColumn(d, c, scale) }

// normalizeValue is Normalize of x, an expression holding c's values (a scalar type's).
func (d duckDialect) normalizeValue(x string, c Column, scale int) string {
	switch c.Kind {
	case TypeFloat, TypeDecimal:
		return d.normalizeNumber(x, c, Precision{Digits: scale})
	case TypeTimestamp:
		// Rounded to the second, as recorded checksums were made; at a stated precision
		// (normalizeAt) timestamps are truncated.
		return "CAST(CAST(epoch(" + x + ") AS BIGINT) AS VARCHAR)"
	case TypeBool:
		return "CAST(CAST(" + x + " AS INTEGER) AS VARCHAR)"
	}
	return "CAST(" + x + " AS VARCHAR)"
}

// joinItems: the list's items one after the other, NULL for a NULL list.
func (duckDialect) joinItems(list, v, item string) string {
	return "array_to_string(list_transform(" + list + ", lambda " + v + ": " + item + "), '')"
}

// field is a STRUCT's field by position (0 the first), whatever its name.
func (duckDialect) field(x string, i int) string {
	return "struct_extract_at(" + x + ", " + strconv.Itoa(i+1) + ")"
}

// whole is text, or NULL where x is (a STRUCT may be NULL; its fields alone do not say so).
func (duckDialect) whole(x, text string) string {
	return "CASE WHEN " + x + " IS NULL THEN NULL ELSE " + text + " END"
}

// concat propagates a NULL, as DuckDB's concat() (which skips one) does not.
func (duckDialect) concat(parts ...string) string { return "(" + strings.Join(parts, " || ") + ")" }

func (duckDialect) byteLength(x string) string { return "CAST(strlen(" + x + ") AS VARCHAR)" }

func (d duckDialect) normalizeAt(c Column, p Precision) string {
	if c.Kind == TypeTimestamp {
		return "CAST(" + d.truncatedEpoch(d.Quote(c.Name), p.Digits) + " AS VARCHAR)"
	}
	return d.normalizeNumber(d.Quote(c.Name), c, p)
}

// truncatedEpoch is a timestamp as the whole number of 10^-digits seconds since the epoch,
// truncated (floored: an earlier instant is never rounded up into a later one).
func (duckDialect) truncatedEpoch(x string, digits int) string {
	switch {
	case digits >= 9:
		return "epoch_ns(" + x + ")"
	case digits > 6:
		return "CAST(floor(epoch_ns(" + x + ") / " + pow10(9-digits) + ".0) AS BIGINT)"
	case digits == 6:
		return "epoch_us(" + x + ")"
	}
	return "CAST(floor(epoch_us(" + x + ") / " + pow10(6-digits) + ".0) AS BIGINT)"
}

func (duckDialect) number(x string, p Precision) string {
	if p.Float32 {
		return "CAST(CAST(" + x + " AS REAL) AS DOUBLE)"
	}
	return "CAST(" + x + " AS DOUBLE)"
}

// normalizeNumber is the normalised text of in, an expression holding c's values.
func (d duckDialect) normalizeNumber(in string, c Column, p Precision) string {
	if p.Exact && c.Kind == TypeDecimal {
		return "regexp_replace(CAST(round(" + in + ", " + strconv.Itoa(p.Digits) + ") AS VARCHAR), '" + exactTrim + "', '\\1')"
	}
	x := d.number(in, p)
	exp := "floor(log10(abs(" + x + ")))"
	return fmt.Sprintf("CASE WHEN abs(%[1]s) < %[2]s THEN CAST(CAST(round(%[1]s * 1e%[3]d) AS BIGINT) AS VARCHAR) "+
		"WHEN isnan(%[1]s) THEN 'nan' WHEN isinf(%[1]s) THEN CASE WHEN %[1]s > 0 THEN 'inf' ELSE '-inf' END "+
		"ELSE CAST(CAST(round(%[1]s / power(10, %[4]s - 14)) AS BIGINT) AS VARCHAR) || 'e' || CAST(CAST(%[4]s AS BIGINT) AS VARCHAR) END",
		x, bigNumber(p.Digits), p.Digits, exp)
}

// exactDecimal is a DECIMAL column's value rounded at p.Digits places, scaled to a whole number
// (Precision.Exact), for the engine's own hash: the value widened first, so that the scaling
// cannot overflow.
func (d duckDialect) exactDecimal(c Column, p Precision) string {
	return fmt.Sprintf("CAST(CAST(round(%s, %d) AS DECIMAL(38, %[2]d)) * %s AS HUGEINT)", d.Quote(c.Name), p.Digits, pow10(p.Digits))
}

func (d duckDialect) RowHash(cols []Column, opt HashOptions) string {
	scale := scaleOf(opt)
	if opt.Portable {
		return "CAST(('0x' || substr(md5(" + concatNormalized(d, cols, opt, unitSep) + "), 1, 16)) AS UBIGINT)"
	}
	parts := make([]string, len(cols))
	for i, c := range cols {
		x := d.Quote(c.Name)
		prec, stated := opt.Precision[c.Name]
		switch {
		case nested(c.Type):
			// hash() tells no NULL apart inside a list or struct: [], NULL and [NULL] hash
			// alike, as do [[]] and [NULL], or {'a': NULL} and a NULL struct, so a row whose
			// list went from [] to NULL hashed as unchanged (the checksums agreed, and the
			// exact row comparison, which looks for keys by hash, never read it). The text
			// keeps them apart, strings quoted where they would read as something else.
			parts[i] = "CAST(" + x + " AS VARCHAR)"
		case opt.stored(c.Name):
			parts[i] = x
		case c.Kind == TypeDecimal && stated && prec.Exact:
			parts[i] = d.exactDecimal(c, prec)
		case c.Kind == TypeFloat || c.Kind == TypeDecimal:
			// Two doubles, one of them NULL: the scaled, rounded value where it fits a BIGINT,
			// else the value itself (huge ones, NaN, infinities), without an overflow error.
			if !stated {
				prec = Precision{Digits: scale}
			}
			parts[i] = fmt.Sprintf("CASE WHEN abs(%[1]s) < %[2]s THEN round(%[1]s * 1e%[3]d) END, "+
				"CASE WHEN abs(%[1]s) < %[2]s THEN NULL ELSE %[1]s END", d.number(x, prec), bigNumber(prec.Digits), prec.Digits)
		case c.Kind == TypeTimestamp && stated:
			parts[i] = d.truncatedEpoch(x, prec.Digits)
		case c.Kind == TypeInt || c.Kind == TypeBool:
			parts[i] = "CAST(" + x + " AS BIGINT)"
		case c.Kind == TypeString:
			parts[i] = "CAST(" + x + " AS VARCHAR)"
		case c.Kind == TypeTimestamp:
			parts[i] = "CAST(epoch(" + x + ") AS BIGINT)"
		default:
			parts[i] = x
		}
	}
	return "hash(" + strings.Join(parts, ", ") + ")"
}

// HashSum adds the high and the low 32 bits of the hashes as two BIGINT sums and joins them
// modulo 2^64: the value of the plain sum, but DuckDB adds BIGINTs in 64-bit registers where a
// UBIGINT sum goes through 128-bit ones: a tenth less time for a partition summary.
func (duckDialect) HashSum(h string) string {
	hi := "coalesce(sum(CAST((" + h + ") >> 32 AS BIGINT)), 0)"
	lo := "coalesce(sum(CAST((" + h + ") & 4294967295 AS BIGINT)), 0)"
	return "CAST((CAST(" + hi + " AS HUGEINT) * 4294967296 + " + lo + ") % 18446744073709551616 AS UBIGINT)"
}

func (duckDialect) ToFloat(x string) string { return "CAST(" + x + " AS DOUBLE)" }
func (duckDialect) ToText(x string) string  { return "CAST(" + x + " AS VARCHAR)" }

// Joinable: every DuckDB type can be NULL out of an outer join.
func (duckDialect) Joinable(x string, _ Column) string { return x }

func (duckDialect) Unjoined(v any, _ Column) any { return v }

func (duckDialect) TruncTime(x, grain string) string {
	if grain == "hour" {
		return "date_trunc('hour', " + x + ")"
	}
	if grain == "month" {
		return "CAST(date_trunc('month', " + x + ") AS DATE)"
	}
	return "CAST(" + x + " AS DATE)"
}

func (duckDialect) DistinctCount(x string) string { return "count(DISTINCT " + x + ")" }

func (duckDialect) FusesLookupJoin() bool { return true }

func (duckDialect) CountIf(c string) string { return "count_if(" + c + ")" }

func (duckDialect) IsNaN(x string) string { return "isnan(" + x + ")" }

// Matches: regexp_matches searches with RE2 (a match anywhere, as ClickHouse's match()).
func (duckDialect) Matches(x, pattern string) string {
	return "regexp_matches(" + x + ", " + pattern + ")"
}
func (duckDialect) NullSafeEqual(a, b string) string {
	return "(" + a + " IS NOT DISTINCT FROM " + b + ")"
}

// Materialize uses a MATERIALIZED common table expression: DuckDB computes it once.
func (d duckDialect) Materialize(name, query string) (string, string) {
	return "WITH " + d.Quote(name) + " AS MATERIALIZED (" + query + ") ", d.Quote(name)
}

func (d duckDialect) Drop(name string, view bool) string {
	if view {
		return "DROP VIEW IF EXISTS " + d.QuoteRelation(name)
	}
	return "DROP TABLE IF EXISTS " + d.QuoteRelation(name)
}

func (d duckDialect) RepointStatements(points []ViewPoint, _ map[string]bool, _ string) []string {
	out := make([]string, len(points))
	for i, p := range points {
		out[i] = "CREATE OR REPLACE VIEW " + d.QuoteRelation(p.View) + " AS SELECT * FROM " + d.QuoteRelation(p.Table)
	}
	return out
}

// openDuckPool is the database/sql pool over conn, which closes DuckDB's database only once the
// pool has no connection open. database/sql closes a pool's connector as the pool closes, while a
// connection in use (a query whose caller gave up on it) closes only when it is put back; DuckDB
// keeps its database alive for that connection, and its instance cache, which gives the next
// opener of the file in this process the database already open, busy-spins while that database
// shuts down: the next open of the file spun at full CPU until the connection closed (a test hung
// 19 minutes). Kept open until then, the database is the one the next opener is given.
func openDuckPool(conn *duckdb.Connector) *dbsql.DB {
	c := &drainingConnector{Connector: conn}
	c.pool = dbsql.OpenDB(c)
	return c.pool
}

type drainingConnector struct {
	*duckdb.Connector
	pool *dbsql.DB
}

// Close is called by the pool's Close, once its idle connections are closed.
func (c *drainingConnector) Close() error {
	if c.pool.Stats().OpenConnections == 0 {
		return c.Connector.Close()
	}
	go func() {
		for c.pool.Stats().OpenConnections > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		c.Connector.Close()
	}()
	return nil
}

// OpenDuckDBFile opens a DuckDB file for trueup's own state (the ledger) as a database/sql pool,
// with the same clear error as a target when another process holds the file.
func OpenDuckDBFile(ctx context.Context, path string) (*dbsql.DB, error) {
	url := "duckdb:" + path
	if dir := filepath.Dir(path); dir != "." {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fault.New(fault.Invalid, "%s: directory %s does not exist", path, dir)
		}
	}
	conn, err := duckdb.NewConnector(path, nil)
	if err != nil {
		return nil, duckOpenError(url, err)
	}
	pool := openDuckPool(conn)
	if err := pool.PingContext(ctx); err != nil {
		pool.Close()
		return nil, duckOpenError(url, err)
	}
	return pool, nil
}

// Partitioning: DuckDB has no partitions; any window of rows is replaced on its own.
func (e *duckEngine) Partitioning(ctx context.Context, table, column string) (Partitioning, error) {
	if _, err := e.Columns(ctx, table); err != nil {
		return Partitioning{}, err
	}
	return Partitioning{}, nil
}
