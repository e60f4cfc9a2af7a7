package sql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
	"trueup/fault"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/shopspring/decimal"
)

type chEngine struct {
	db
	dialect chDialect
}

func openClickHouse(ctx context.Context, url string) (Engine, error) {
	// ?cluster= is trueup's, not the driver's: clickhouse-go would send it to the server as a
	// setting, which refuses it.
	dsn, cluster, err := splitCluster(url)
	if err != nil {
		return nil, fault.New(fault.Invalid, "%s: %s", url, err)
	}
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, fault.New(fault.Invalid, "%s: %s", url, fault.FirstLine(err.Error()))
	}
	if len(opts.Addr) == 0 || opts.Addr[0] == "" {
		return nil, fault.New(fault.Invalid, "%s: missing host:port", url)
	}
	for _, a := range opts.Addr {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fault.New(fault.Invalid, "%s: %s", url, err)
		}
	}
	if opts.Auth.Database == "" {
		opts.Auth.Database = "default"
	}
	opts.DialTimeout = 5 * time.Second
	if opts.Settings == nil {
		opts.Settings = clickhouse.Settings{}
	}
	// Unmatched join sides must be NULL, not the type's default, for diffs to be right.
	opts.Settings["join_use_nulls"] = 1
	if cluster != "" {
		// A write through a Distributed table has reached every shard when it returns: what the
		// next read of it sees, not rows still queued on the node written to.
		opts.Settings["insert_distributed_sync"] = 1
	}
	e, err := openServer(ctx, opts, url, url)
	if err != nil {
		return nil, err
	}
	if cluster == "" {
		return e, nil
	}
	return joinCluster(ctx, e, opts, url, cluster)
}

// openServer connects to the server(s) opts names; url is what errors and Info name, key the
// text Info.Key digests.
func openServer(ctx context.Context, opts *clickhouse.Options, url, key string) (*chEngine, error) {
	pool := clickhouse.OpenDB(opts)
	pool.SetMaxOpenConns(16)
	pool.SetMaxIdleConns(8)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var v string
	if err := pool.QueryRowContext(pctx, "SELECT version()").Scan(&v); err != nil {
		pool.Close()
		if serverException(err) { // it answered: a database, user or password it does not take
			return nil, fault.New(fault.Invalid, "%s: the server refused the connection: %s", url, fault.FirstLine(err.Error()))
		}
		return nil, fmt.Errorf("%w: %s: %s", ErrUnreachable, url, fault.FirstLine(err.Error()))
	}
	ver := parseVersion(v)
	if _, set := opts.Settings[lowCardinality]; !set && !ver.AtLeast(19, 1) {
		// Before 19.1 a LowCardinality column is experimental: a query cannot even make a view
		// over a table with one (a plain table a team adopts) without the setting. Sent with
		// every query, as the others are, unless the URL says otherwise.
		pool.Close()
		opts.Settings[lowCardinality] = 1
		return openServer(ctx, opts, url, key)
	}
	return &chEngine{
		db:      db{pool: pool, info: Info{Kind: "clickhouse", Target: Redact(url), Key: targetKey(key), Version: ver}, poisons: serverException, reads: readOnly},
		dialect: chDialect{version: ver},
	}, nil
}

// lowCardinality is the setting 18.16 needs to read or make anything over a LowCardinality column.
const lowCardinality = "allow_experimental_low_cardinality_type"

// serverException: after the server raised one (a syntax error, say), 18.16 can read the
// client's next packet as garbage ("Unexpected packet Data received from client") and every
// later query on that connection fails, so the connection is not reused.
func serverException(err error) bool {
	var ex *clickhouse.Exception
	return errors.As(err, &ex)
}

func (e *chEngine) Dialect() Dialect { return e.dialect }

func (e *chEngine) Check(ctx context.Context, query string, args ...any) error {
	// on lines of their own: a comment ending the query must not swallow the wrapper
	return e.Exec(e.reading(ctx), "SELECT * FROM (\n"+query+"\n) LIMIT 0", args...)
}

// readOnly runs a read with readonly=1: user SQL in it (a rule, a report, a time-travel query)
// cannot write, change settings, or call a table function — 18.16 refuses every one in readonly
// mode, url() and file() among them — whatever the server's profile allows. Sent with the
// query's other settings, it applies to that query alone.
func readOnly(ctx context.Context) context.Context {
	settings := clickhouse.Settings{"readonly": 1}
	if yielding(ctx) {
		settings["max_threads"] = 1
	}
	return clickhouse.Context(ctx, clickhouse.WithSettings(settings))
}

// othersRunning reports whether system.processes lists queries besides the one asking (an error
// reads as yes: yielding is the safe side for readers).
func (e *chEngine) othersRunning(ctx context.Context) bool {
	res, err := e.Query(context.WithValue(ctx, yieldKey{}, false), "SELECT count() FROM system.processes")
	return err != nil || len(res.Rows) == 0 || AsInt64(res.Rows[0][0]) > 1
}

func (e *chEngine) Relations(ctx context.Context) ([]Relation, error) {
	return listRelations(ctx, e, `SELECT name, engine FROM system.tables
		WHERE database = currentDatabase() AND NOT startsWith(name, '.inner') ORDER BY name`, "View")
}

func (e *chEngine) exists(ctx context.Context, relation string) (bool, error) {
	parts := splitRelation(relation)
	q, args := "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = ?", []any{parts[0]}
	if len(parts) == 2 {
		q, args = "SELECT count() FROM system.tables WHERE database = ? AND name = ?", []any{parts[0], parts[1]}
	}
	res, err := e.Query(ctx, q, args...)
	for try := 0; try < 5 && droppedWhileListed(err); try++ {
		res, err = e.Query(ctx, q, args...) // another table dropped while listed (see ViewCatalog)
	}
	if err != nil {
		return false, err
	}
	return AsInt64(res.Rows[0][0]) > 0, nil
}

func (e *chEngine) Columns(ctx context.Context, relation string) ([]Column, error) {
	ok, err := e.exists(ctx, relation)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", relation, err)
	}
	if !ok {
		return nil, fault.New(fault.NotFound, "there is no relation %s", relation)
	}
	res, err := e.Query(ctx, "DESCRIBE TABLE "+e.dialect.QuoteRelation(relation))
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", relation, err)
	}
	cols := make([]Column, 0, len(res.Rows))
	for _, r := range res.Rows {
		typ := AsText(r[1])
		kind, nullable := classify(typ)
		cols = append(cols, Column{Name: AsText(r[0]), Type: typ, Kind: kind, Nullable: nullable})
	}
	return cols, nil
}

func (e *chEngine) ViewSource(ctx context.Context, view string) (string, error) {
	const q = `SELECT create_table_query FROM system.tables WHERE database = currentDatabase() AND name = ? AND engine = 'View'`
	res, err := e.Query(ctx, q, view)
	for try := 0; try < 5 && droppedWhileListed(err); try++ {
		res, err = e.Query(ctx, q, view) // a table dropped while listed (see ViewCatalog)
	}
	return viewSourceOf(view, res, err)
}

func (e *chEngine) tableClause(partition string, order []string) string {
	return e.dialect.tableClause("MergeTree()", partition, order)
}

// tableClause is the ENGINE clause of a table of engine partitioned by a column and ordered.
func (d chDialect) tableClause(engine, partition string, order []string) string {
	s := " ENGINE = " + engine
	if partition != "" {
		s += " PARTITION BY " + d.Quote(partition)
	}
	if len(order) == 0 {
		return s + " ORDER BY tuple()"
	}
	q := make([]string, len(order))
	for i, o := range order {
		q[i] = d.Quote(o)
	}
	return s + " ORDER BY (" + strings.Join(q, ", ") + ")"
}

func (e *chEngine) CreateTable(ctx context.Context, table string, cols []Column, partition string, order []string) error {
	return e.Exec(ctx, "CREATE TABLE "+e.dialect.QuoteRelation(table)+" ("+strings.Join(e.dialect.columnDefs(cols), ", ")+")"+e.tableClause(partition, order))
}

func (e *chEngine) CreateTableAs(ctx context.Context, table, partition string, order []string, query string, args ...any) error {
	return e.Exec(ctx, "CREATE TABLE "+e.dialect.QuoteRelation(table)+e.tableClause(partition, order)+" AS "+query, args...)
}

func (e *chEngine) CreateTableLike(ctx context.Context, table, src string) error {
	return e.Exec(ctx, "CREATE TABLE "+e.dialect.QuoteRelation(table)+" AS "+e.dialect.QuoteRelation(src))
}

func (e *chEngine) Insert(ctx context.Context, table string, cols []string, rows [][]any) error {
	meta, err := e.Columns(ctx, table)
	if err != nil {
		return err
	}
	kinds := map[string]Type{}
	for _, c := range meta {
		kinds[c.Name] = c.Kind
	}
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = e.dialect.Quote(c)
	}
	tx, err := e.pool.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	// The driver batches a prepared INSERT with an explicit column list; INSERT … VALUES through
	// Exec hangs on old servers (ENGINE-NOTES).
	stmt, err := tx.PrepareContext(ctx, "INSERT INTO "+e.dialect.QuoteRelation(table)+" ("+strings.Join(quoted, ", ")+")")
	if err != nil {
		tx.Rollback()
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	vals := make([]any, len(cols))
	for _, r := range rows {
		for i, v := range r {
			if kinds[cols[i]] == TypeDecimal {
				switch x := v.(type) {
				case float64:
					v = decimal.NewFromFloat(x)
				case Decimal:
					v = decimal.RequireFromString(x.String())
				}
			}
			vals[i] = v
		}
		if _, err := stmt.ExecContext(ctx, vals...); err != nil {
			tx.Rollback()
			return fmt.Errorf("insert into %s: %w", table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	return nil
}

func randomSuffix() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (e *chEngine) RepointViews(ctx context.Context, points []ViewPoint) error {
	exists := map[string]bool{}
	for _, p := range points {
		ok, err := e.exists(ctx, p.View)
		if err != nil {
			return fmt.Errorf("repoint views: %w", err)
		}
		exists[p.View] = ok
	}
	suffix := randomSuffix()
	for _, s := range e.dialect.RepointStatements(points, exists, suffix) {
		if err := e.Exec(ctx, s); err != nil {
			// No helper view is left behind, and a view a RENAME that stopped part-way moved
			// away is put back (sql/clickhouse_views.go).
			return e.tidyAfterFailure(ctx, points, suffix, err)
		}
	}
	return nil
}

func (e *chEngine) DropTable(ctx context.Context, table string) error {
	return e.Exec(ctx, e.dialect.Drop(table, false))
}

func chType(c Column) string {
	var t string
	switch c.Kind {
	case TypeString:
		t = "String"
	case TypeInt:
		t = "Int64"
		if strings.HasPrefix(c.Type, "UInt") || strings.HasPrefix(c.Type, "Int") {
			t = strings.TrimSuffix(strings.TrimPrefix(c.Type, "Nullable("), ")")
		}
	case TypeFloat:
		t = "Float64"
	case TypeDecimal:
		p, s := decimalShape(c.Type)
		t = fmt.Sprintf("Decimal(%d, %d)", p, s)
	case TypeDate:
		t = "Date"
	case TypeTimestamp:
		t = "DateTime"
	case TypeBool:
		t = "UInt8"
	default:
		t = "String"
	}
	if c.Nullable {
		return "Nullable(" + t + ")"
	}
	return t
}

type chDialect struct{ version ServerVersion }

func (chDialect) Name() string { return "clickhouse" }

func (chDialect) Quote(ident string) string {
	return "`" + strings.ReplaceAll(strings.ReplaceAll(ident, `\`, `\\`), "`", "\\`") + "`"
}

func (d chDialect) QuoteRelation(name string) string { return quoteRelation(d, name) }

// Bind renders dates and timestamps as text inside an explicit cast: a time.Time bound bare is
// sent as a DateTime and silently matches nothing against a Date column (ENGINE-NOTES).
func (chDialect) Bind(p Param) (string, any) {
	switch p.Type {
	case TypeDate:
		if t, ok := p.Value.(time.Time); ok {
			return "toDate(?)", t.Format("2006-01-02")
		}
		return "toDate(?)", p.Value
	case TypeTimestamp:
		if t, ok := p.Value.(time.Time); ok {
			return "toDateTime(?, 'UTC')", t.UTC().Format("2006-01-02 15:04:05")
		}
		return "toDateTime(?, 'UTC')", p.Value
	}
	return "?", p.Value
}

func (chDialect) Literal(p Param) (string, error) {
	return literal(p, "toDate('%s')", "toDateTime('%s', 'UTC')", true)
}

func (d chDialect) Normalize(c Column, scale int) string { return normalizeColumn(d, c, scale) }

// joinItems: the array's items one after the other.
func (chDialect) joinItems(list, v, item string) string {
	return "arrayStringConcat(arrayMap(" + v + " -> " + item + ", " + list + "))"
}

func (chDialect) field(x string, i int) string {
	return "tupleElement(" + x + ", " + strconv.Itoa(i+1) + ")"
}

// whole: a Tuple cannot be NULL (18.16 has no Nullable(Tuple)).
func (chDialect) whole(_, text string) string { return text }

func (chDialect) concat(parts ...string) string { return "concat(" + strings.Join(parts, ", ") + ")" }

func (chDialect) byteLength(x string) string { return "toString(length(" + x + "))" }

// normalizeValue is Normalize of x, an expression holding c's values.
func (d chDialect) normalizeValue(x string, c Column, scale int) string {
	switch c.Kind {
	case TypeFloat, TypeDecimal:
		return d.normalizeNumber(x, c, Precision{Digits: scale})
	case TypeTimestamp:
		return "toString(toInt64(toUInt32(" + x + ")))"
	case TypeBool:
		return "toString(toUInt8(" + x + "))"
	}
	return "toString(" + x + ")"
}

func (d chDialect) normalizeAt(c Column, p Precision) string {
	return d.normalizeValueAt(d.Quote(c.Name), c, p)
}

// normalizeValueAt is normalizeAt of x, an expression holding c's values.
func (d chDialect) normalizeValueAt(x string, c Column, p Precision) string {
	if c.Kind != TypeTimestamp {
		return d.normalizeNumber(x, c, p)
	}
	if strings.HasPrefix(strings.ToUpper(BaseType(c.Type)), "DATETIME64") {
		// ClickHouse 19+ only (18.16 has no DateTime64): nanoseconds, floored to the digits kept.
		n, k := "toUnixTimestamp64Nano(toDateTime64("+x+", 9))", pow10(9-min(p.Digits, 9))
		return "toString(intDiv(" + n + ", " + k + ") - if(" + n + " % " + k + " < 0, 1, 0))"
	}
	// A DateTime holds whole seconds: finer digits are zeros.
	return "toString(toInt64(toUInt32(" + x + ")) * " + pow10(p.Digits) + ")"
}

func (d chDialect) normalizeNumber(in string, c Column, p Precision) string {
	if p.Exact && c.Kind == TypeDecimal {
		// Precision.Exact: round keeps the column's scale, and 18.16 prints the zeros after
		// the last digit where later servers drop them: dropped here on every server.
		return "replaceRegexpOne(toString(round(" + in + ", " + strconv.Itoa(p.Digits) + ")), '" +
			strings.ReplaceAll(exactTrim, `\`, `\\`) + "', '\\\\1')"
	}
	// multiIf computes every branch; toInt64 of a value out of range wraps without an error
	// and only the chosen branch is kept.
	x := "toFloat64(" + in + ")"
	if p.Float32 {
		x = "toFloat64(toFloat32(" + in + "))"
	}
	exp := "floor(log10(abs(" + x + ")))"
	return fmt.Sprintf("multiIf(abs(%[1]s) < %[2]s, toString(toInt64(round(%[1]s * 1e%[3]d))), "+
		"isNaN(%[1]s), 'nan', isInfinite(%[1]s), if(%[1]s > 0, 'inf', '-inf'), "+
		"concat(toString(toInt64(round(%[1]s / pow(10, %[4]s - 14)))), 'e', toString(toInt64(%[4]s))))",
		x, bigNumber(p.Digits), p.Digits, exp)
}

// RowHash: the portable hash is MD5 of the normalised text. The fast one is cityHash64 over the
// columns themselves, one argument each, which hashes every value with its length (no separator
// to be confused with data): a column hashed as stored goes in as it is where cityHash64 takes its
// type (integers, strings, dates, DateTime), as text otherwise (18.16 refuses Decimal; a float's
// text keeps NaN and ±0 as the row comparison sees them); a normalised one as its normalised text.
// cityHash64 of a NULL is NULL, so a column that may hold one goes in as isNull and the value
// (assumeNotNull): NULL and an empty or zero value hash apart. Out of an outer join (Joined) a
// column that cannot hold one is Nullable all the same, which cityHash64 and, on old servers,
// the functions normalising it refuse or get wrong (toFloat64 of a Nullable Decimal): it is read
// through assumeNotNull, as its relation holds it.
func (d chDialect) RowHash(cols []Column, opt HashOptions) string {
	if opt.Portable {
		return "reinterpretAsUInt64(reverse(unhex(substring(hex(MD5(" + concatNormalized(d, cols, opt, unitSep) + ")), 1, 16))))"
	}
	parts := make([]string, 0, len(cols))
	for _, c := range cols {
		in := d.Quote(c.Name)
		if opt.Joined && !chMayBeNull(c) {
			in = "assumeNotNull(" + in + ")"
		}
		x := in
		switch p, stated := statedPrecision(c, opt); {
		case opt.stored(c.Name) && chHashesNatively(c):
		case opt.stored(c.Name):
			x = "toString(" + in + ")"
		case stated:
			x = d.normalizeValueAt(in, c, p)
		default:
			x = d.normalizeValue(in, c, scaleOf(opt))
		}
		if chMayBeNull(c) {
			parts = append(parts, "isNull("+d.Quote(c.Name)+")", "assumeNotNull("+x+")")
		} else {
			parts = append(parts, x)
		}
	}
	return "cityHash64(" + strings.Join(parts, ", ") + ")"
}

// chHashesNatively reports whether cityHash64 takes c's values as they are, on every server
// trueup supports: integers, strings, dates and DateTime (not DateTime64, Decimal, floats,
// LowCardinality, arrays and the rest, which go in as text).
func chHashesNatively(c Column) bool {
	t := c.Type
	if low := strings.ToLower(t); strings.HasPrefix(low, "nullable(") && strings.HasSuffix(t, ")") {
		t = t[len("nullable(") : len(t)-1]
	}
	switch t {
	case "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "String", "Date", "DateTime":
		return true
	}
	return strings.HasPrefix(t, "DateTime(") || strings.HasPrefix(t, "FixedString(")
}

// chMayBeNull reports whether c may hold a NULL: a Nullable type, or a column whose type is not
// known (then it is treated as one).
func chMayBeNull(c Column) bool {
	return c.Nullable || c.Type == "" || strings.Contains(strings.ToLower(c.Type), "nullable") || c.UntypedNull()
}

// HashSum relies on sum(UInt64) wrapping modulo 2^64.
func (chDialect) HashSum(h string) string { return "sum(" + h + ")" }

func (chDialect) ToFloat(x string) string { return "toFloat64(" + x + ")" }
func (chDialect) ToText(x string) string  { return "toString(" + x + ")" }

// Joinable: join_use_nulls makes every column of an outer join's sides Nullable, and a type
// that cannot be inside Nullable ("Nested type Array(String) cannot be inside Nullable type")
// leaves otherwise: a LowCardinality(T) as T (a function of it, toString too, stays
// LowCardinality on 18.16), an Array, Tuple, Map, Nested or Enum as its text, which compares as
// the values do and hashes as the row hash already hashes it (normalizeValue).
func (d chDialect) Joinable(x string, c Column) string {
	t := c.Type // Nullable(Array(…)) is not a type: a Nullable column holds none of these
	if inner, ok := strings.CutPrefix(t, "LowCardinality("); ok && strings.HasSuffix(inner, ")") {
		return "CAST(" + x + " AS " + inner[:len(inner)-1] + ")" // the type as the server described it
	}
	for _, p := range []string{"Array(", "Tuple(", "Map(", "Nested("} {
		if strings.HasPrefix(t, p) {
			return d.ToText(x)
		}
	}
	// An Enum as its name: 18.16 fills the side an outer join does not match with the value 0,
	// which no Enum names ("Unexpected value 0 for type Enum8"), where a String is NULL.
	if e := strings.TrimPrefix(t, "Nullable("); strings.HasPrefix(e, "Enum8(") || strings.HasPrefix(e, "Enum16(") {
		return d.ToText(x)
	}
	return x
}

// TruncTime truncates in UTC, as Bind renders window bounds: a DateTime('Europe/Berlin') column,
// or a DateTime on a server in another timezone, is otherwise truncated to its own days, and a
// day's partition would not be the rows its window reads. toDateTime(x, 'UTC') takes a Date
// too (its midnight in UTC), where toStartOfMonth(date, 'UTC') is an error.
func (chDialect) TruncTime(x, grain string) string {
	x = "toDateTime(" + x + ", 'UTC')"
	switch grain {
	case "hour":
		return "toStartOfHour(" + x + ")"
	case "month":
		return "toStartOfMonth(" + x + ")"
	}
	return "toDate(" + x + ")"
}

func (chDialect) DistinctCount(x string) string { return "uniqExact(" + x + ")" }

func (chDialect) FusesLookupJoin() bool { return false }

func (chDialect) CountIf(c string) string { return "countIf(" + c + ")" }

func (chDialect) IsNaN(x string) string { return "isNaN(" + x + ")" }

// Matches: match() searches with RE2, as DuckDB's regexp_matches does.
func (chDialect) Matches(x, pattern string) string { return "match(" + x + ", " + pattern + ")" }
func (chDialect) NullSafeEqual(a, b string) string {
	return "(ifNull(" + a + " = " + b + ", 0) OR (isNull(" + a + ") AND isNull(" + b + ")))"
}

// Materialize inlines the subquery: the old servers trueup supports have no table expressions in
// WITH, so it is computed where it is read.
func (chDialect) Materialize(_, query string) (string, string) { return "", "(" + query + ")" }

// RepointStatements: from 19.5, CREATE OR REPLACE VIEW per view (each atomic, downstream views
// repointed one after another). Before it, new views are created under temporary names and all
// of them take the live names in one multi-table RENAME, which old servers apply as one step.
// Drop uses DROP TABLE for views too: old servers have no DROP VIEW.
func (d chDialect) Drop(name string, _ bool) string {
	return "DROP TABLE IF EXISTS " + d.QuoteRelation(name)
}

func (d chDialect) RepointStatements(points []ViewPoint, exists map[string]bool, suffix string) []string {
	prepare, swap, cleanup := d.repointPhases(points, exists, suffix)
	return append(append(prepare, swap...), cleanup...)
}

// repointPhases are RepointStatements in three parts: what prepares the repoint without changing
// what any view reads, the statements that switch the views, and what tidies after them. A
// cluster prepares every node before it switches any (clickhouse_cluster.go).
func (d chDialect) repointPhases(points []ViewPoint, exists map[string]bool, suffix string) (prepare, swap, cleanup []string) {
	if d.version.AtLeast(19, 5) {
		for _, p := range points {
			swap = append(swap, "CREATE OR REPLACE VIEW "+d.QuoteRelation(p.View)+" AS SELECT * FROM "+d.QuoteRelation(p.Table))
		}
		return nil, swap, nil
	}
	var renames []string
	for _, p := range points {
		if !exists[p.View] {
			swap = append(swap, "CREATE VIEW "+d.QuoteRelation(p.View)+" AS SELECT * FROM "+d.QuoteRelation(p.Table))
			continue
		}
		next := p.View + "__next_" + suffix
		old := p.View + "__old_" + suffix
		prepare = append(prepare, "CREATE VIEW "+d.QuoteRelation(next)+" AS SELECT * FROM "+d.QuoteRelation(p.Table))
		renames = append(renames, d.QuoteRelation(p.View)+" TO "+d.QuoteRelation(old), d.QuoteRelation(next)+" TO "+d.QuoteRelation(p.View))
		cleanup = append(cleanup, d.Drop(old, true))
	}
	if len(renames) > 0 {
		swap = append(swap, "RENAME TABLE "+strings.Join(renames, ", "))
	}
	return prepare, swap, cleanup
}
