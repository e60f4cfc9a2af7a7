// Package sql owns everything that differs between the engines trueup talks to.
//
// An Engine does I/O against one target (a DuckDB file or a ClickHouse server); a Dialect only
// returns SQL text for it. Nothing outside this package branches on which engine it has: it asks
// the Dialect for the statement and the Engine to run it.
package sql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"trueup/fault"
)

// Sentinel errors callers branch on.
var (
	ErrUnreachable = errors.New("unreachable")
	ErrLocked      = errors.New("locked by another process")
)

// Type is the portable class of a column or a bound value.
type Type int

const (
	TypeOther Type = iota
	TypeString
	TypeInt
	TypeFloat
	TypeDecimal
	TypeDate
	TypeTimestamp
	TypeBool
)

func (t Type) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeInt:
		return "int"
	case TypeFloat:
		return "float"
	case TypeDecimal:
		return "decimal"
	case TypeDate:
		return "date"
	case TypeTimestamp:
		return "timestamp"
	case TypeBool:
		return "bool"
	}
	return "other"
}

// Numeric reports whether values of t are numbers.
func (t Type) Numeric() bool { return t == TypeInt || t == TypeFloat || t == TypeDecimal }

// Temporal reports whether values of t are dates or timestamps.
func (t Type) Temporal() bool { return t == TypeDate || t == TypeTimestamp }

// Column is one column of a relation as the engine reports it.
type Column struct {
	Name     string
	Type     string // the engine's own type text, e.g. DECIMAL(18,2) or Nullable(Float64)
	Kind     Type
	Nullable bool
}

// UntypedNull reports whether the column is a bare NULL literal's, which has no type of its
// own (ClickHouse: Nullable(Nothing)) and goes into a column of any type.
func (c Column) UntypedNull() bool { return strings.Contains(c.Type, "Nothing") }

// Boolean reports whether the column holds truth values: BOOLEAN, or ClickHouse's UInt8, which
// its comparisons and logical functions return (old servers have no Bool type).
func (c Column) Boolean() bool {
	return c.Kind == TypeBool || BaseType(c.Type) == "UInt8"
}

// Relation is a table or a view in a target.
type Relation struct {
	Name string
	View bool
}

// ServerVersion is an engine's version as reported at connect time.
type ServerVersion struct {
	Major, Minor, Patch int
	Text                string
}

// AtLeast reports whether v is major.minor or newer.
func (v ServerVersion) AtLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

func (v ServerVersion) String() string { return v.Text }

// Info describes a connected target.
type Info struct {
	Kind    string // "duckdb" or "clickhouse", for display
	Target  string // the target URL as given less its credentials (Redact), for display
	Version ServerVersion
	// Key is equal for engines opened on the same URL, credentials included, and differs for
	// URLs that differ only in them, where Target cannot tell them apart. It is a digest.
	Key string
	// Cluster is the topology of a cluster target (clickhouse://…?cluster=NAME) and each node's
	// reachability and version when last asked (Cluster.Probe); nil for one server.
	Cluster *ClusterInfo
}

// Param is a typed value to bind into a statement. The dialect decides how it is bound.
type Param struct {
	Type  Type
	Value any
}

// Date is a date parameter.
func Date(t time.Time) Param {
	return Param{Type: TypeDate, Value: time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)}
}

// Timestamp is a timestamp parameter (second precision, UTC).
func Timestamp(t time.Time) Param {
	return Param{Type: TypeTimestamp, Value: t.UTC().Truncate(time.Second)}
}

// String is a string parameter.
func String(s string) Param { return Param{Type: TypeString, Value: s} }

// Int is an integer parameter.
func Int(i int64) Param { return Param{Type: TypeInt, Value: i} }

// Float is a floating-point parameter.
func Float(f float64) Param { return Param{Type: TypeFloat, Value: f} }

// Window is a half-open range [Start, End) of a partition column: one partition of a table.
// A Null window is instead the rows whose column is NULL, which lie in no range: the partition
// that MeasurePartitions keys by the zero time, which a carry moves like any other.
type Window struct {
	Column string
	Type   Type // TypeDate or TypeTimestamp
	Start  time.Time
	End    time.Time
	Null   bool
}

// String names the window in messages: "2026-07-01 00:00", or "d IS NULL".
func (w Window) String() string {
	if w.Null {
		return w.Column + " IS NULL"
	}
	return w.Start.Format("2006-01-02 15:04")
}

// Params returns the window's bounds as typed parameters named start and end.
func (w Window) Params() map[string]Param {
	if w.Type == TypeTimestamp {
		return map[string]Param{"start": Timestamp(w.Start), "end": Timestamp(w.End)}
	}
	return map[string]Param{"start": Date(w.Start), "end": Date(w.End)}
}

// PartitionWrite is the rows of one partition: query, with args, read inside Window. With
// NeverEmpty, a query that gives no rows where the table holds some refuses the whole replace
// (an *EmptiedError) and nothing is written.
type PartitionWrite struct {
	Window     Window
	Query      string
	Args       []any
	NeverEmpty bool
}

// EmptiedError is a replace refused because it would have emptied Table's Window of its Rows.
type EmptiedError struct {
	Table  string
	Window Window
	Rows   int64
}

func (e *EmptiedError) Error() string {
	return fmt.Sprintf("the query gives no rows for %s of %s, which holds %d: nothing was written", e.Window.String(), e.Table, e.Rows)
}

// ViewPoint says which relation a view should read from.
type ViewPoint struct {
	View  string
	Table string
}

// HashOptions chooses a row-hash expression.
type HashOptions struct {
	// Portable asks for the hash that gives the same value for the same row in every engine
	// (MD5 of normalised text). Without it the engine's fastest hash of normalised values is used.
	Portable bool
	// Scale is the number of decimal places floats and decimals are compared at (default 6).
	Scale int
	// Stored names columns hashed as the engine stores them instead of normalised: cheaper, and
	// equal between two relations whenever the column has the same type in both. Ignored when
	// Portable is set.
	Stored []string
	// Precision, by column name, compares a column at a stated precision: timestamps truncated to
	// its fractional digits, numbers rounded at its decimal places (after a float32 rounding with
	// Float32). A column without one hashes as it always has (timestamps as whole seconds,
	// numbers at Scale), so recorded checksums keep their values.
	Precision map[string]Precision
	// Joined says the columns are read out of an outer join, which may have made them nullable
	// where their relation's are not (ClickHouse's join_use_nulls): each still hashes as it does
	// in its relation, a NULL standing only for a side the join did not find.
	Joined bool
}

func (o HashOptions) stored(name string) bool {
	if o.Portable {
		return false
	}
	for _, s := range o.Stored {
		if s == name {
			return true
		}
	}
	return false
}

// Result is a small, fully read query result. Values are normalised: integers as int64 (uint64 when
// they do not fit), floats and decimals as float64, dates and timestamps as time.Time in UTC,
// text as string, NULL as nil.
type Result struct {
	Columns []string
	Rows    [][]any
	// Kinds are the columns' kinds where the reader described them first (nil otherwise): a
	// TIMESTAMP at midnight is not a DATE.
	Kinds []Type
}

// Engine does I/O against one target. Every method is cancellable through its context.
type Engine interface {
	Dialect() Dialect
	Info() Info
	// Query runs a read and returns all rows; use Each for results that may be large.
	Query(ctx context.Context, query string, args ...any) (*Result, error)
	// Each streams rows to fn; the row slice is reused between calls.
	Each(ctx context.Context, query string, args []any, fn func(row []any) error) error
	Exec(ctx context.Context, query string, args ...any) error
	// Check validates a read-only query without running it over the data.
	Check(ctx context.Context, query string, args ...any) error
	Relations(ctx context.Context) ([]Relation, error)
	// Columns lists a relation's columns; fault.ErrNotFound when it does not exist.
	Columns(ctx context.Context, relation string) ([]Column, error)
	// Describe lists the columns a read-only query's rows would have, without running it.
	Describe(ctx context.Context, query string, args ...any) ([]Column, error)
	// ViewSource returns the relation a simple `SELECT * FROM x` view reads from.
	ViewSource(ctx context.Context, view string) (string, error)
	// CreateTable creates a table partitioned by partition (may be empty) and ordered by order.
	CreateTable(ctx context.Context, table string, cols []Column, partition string, order []string) error
	// CreateTableAs creates table with the columns and rows of query.
	CreateTableAs(ctx context.Context, table, partition string, order []string, query string, args ...any) error
	// CreateTableLike creates an empty table with the columns (and, where the engine has them,
	// the partitioning and ordering) of src.
	CreateTableLike(ctx context.Context, table, src string) error
	// Insert appends rows in bulk; cols name the columns in row order.
	Insert(ctx context.Context, table string, cols []string, rows [][]any) error
	// ReplacePartition atomically replaces the rows of table inside w with the rows of query:
	// readers see all of the old partition or all of the new one, and rerunning gives the same
	// result. Rows outside w stay as they are, in a partition w shares with them too (see
	// Partitioning). It returns how many rows the window now holds.
	ReplacePartition(ctx context.Context, table string, w Window, query string, args ...any) (int64, error)
	// ReplacePartitions replaces several partitions as ReplacePartition does each, at the cost of
	// one commit where the engine has transactions (then all of them or none), else one by one.
	// It returns how many rows each partition now holds.
	ReplacePartitions(ctx context.Context, table string, writes []PartitionWrite) ([]int64, error)
	// Partitioning says how table's rows are split into the units the engine replaces
	// atomically, along the date or timestamp column; an error (naming the key) when they cannot
	// be told apart along it.
	Partitioning(ctx context.Context, table, column string) (Partitioning, error)
	// CopyPartitions copies every partition of src outside the excluded windows into dst,
	// by the engine's cheapest means.
	CopyPartitions(ctx context.Context, dst, src string, column string, exclude []Window) error
	// CarryPartitions carries each partition from one table into another (see Carry), all at
	// once where the engine has transactions.
	CarryPartitions(ctx context.Context, carries []Carry) error
	// MergeGains counts, for each carry that merges, the rows its merge would add to Into now:
	// those of From's window that Into lacks, told apart as the merge tells them (0 for a
	// replace). What readers gain from a merged partition is that, not what From gained (a row
	// written on both sides is added once, to neither). A cluster counts them shard by shard.
	MergeGains(ctx context.Context, carries []Carry) ([]int64, error)
	// WriteMark is a short text that changes whenever table's rows may have changed, read
	// without touching a row; "" when the engine has no such mark.
	WriteMark(ctx context.Context, table string) (string, error)
	// RepointViews makes each view read from its table, all at once where the engine allows.
	RepointViews(ctx context.Context, points []ViewPoint) error
	// AdoptRefusal says why a plain table cannot become its own first version under a view
	// ("" when it can): what the rename would break, in the engine's terms.
	AdoptRefusal(ctx context.Context, table string) (string, error)
	// AdoptTable renames table to version and creates a view of table's name over it (see
	// adopt.go for how each engine keeps the name readable meanwhile).
	AdoptTable(ctx context.Context, table, version string) error
	// FinishAdopt completes an adopt whose view reads version already but which left work
	// behind (see adopt.go); nothing when there is none.
	FinishAdopt(ctx context.Context, table, version string) error
	// UnadoptTable drops the view and puts version back under table's name.
	UnadoptTable(ctx context.Context, table, version string) error
	// Ping asks the engine for one row: whether it answers readers now.
	Ping(ctx context.Context) error
	DropTable(ctx context.Context, table string) error
	Close() error
}

// Dialect returns SQL text for one engine. It does no I/O.
type Dialect interface {
	Name() string
	// CurrentQualifiers is a query whose rows (one text column) are the qualifiers that name
	// the schema unqualified names are read from (see the function CurrentQualifiers).
	CurrentQualifiers() string
	// Quote quotes one identifier.
	Quote(ident string) string
	// QuoteRelation quotes a possibly qualified name (schema.name).
	QuoteRelation(name string) string
	// Bind returns the placeholder text for p and the argument to pass with it.
	Bind(p Param) (string, any)
	// Literal renders a typed value as SQL text, for the few statements that cannot take
	// parameters (DDL). Only typed Go values reach it, never user text as SQL.
	Literal(p Param) (string, error)
	// Normalize returns an expression giving the column's value as canonical text (NULL stays NULL).
	Normalize(col Column, scale int) string
	// RowHash returns an unsigned 64-bit hash expression over the columns of one row.
	RowHash(cols []Column, opt HashOptions) string
	// HashSum aggregates row hashes into an order-independent unsigned 64-bit sum modulo 2^64.
	HashSum(hashExpr string) string
	// ToFloat casts an expression to a double.
	ToFloat(expr string) string
	// ToText casts an expression to text.
	ToText(expr string) string
	// Joinable is how an expression holding column c's values leaves one side of an outer
	// join: as it is, or as text where the engine cannot make its type NULL for the missing
	// side (ClickHouse's join_use_nulls refuses Nullable arrays, tuples and LowCardinality).
	Joinable(expr string, c Column) string
	// Unjoined reads back a value of column c that left a join through Joinable as the
	// column's own reading gives it (ClickHouse: an Array's text as its values again).
	Unjoined(v any, c Column) any
	// TruncTime truncates a date/timestamp expression to a grain: "day", "month" or "hour".
	TruncTime(expr, grain string) string
	// DistinctCount counts distinct values of an expression (exact).
	DistinctCount(expr string) string
	// FusesLookupJoin reports whether a LEFT JOIN of a small relation (a few million keys)
	// folded into an aggregate scan costs about the scan alone, so that a lookup (a foreign
	// key's misses) rides on it: true on DuckDB (a 100k-key join into a 20M-row scan: 0.99 s
	// against 1.05 s without, where a separate anti-join costs 0.41 s more); false on
	// ClickHouse 18.16, where the joined scan took 2.5 times the plain one, more than the
	// scan and the anti-join together.
	FusesLookupJoin() bool
	// CountIf counts rows where cond holds.
	CountIf(cond string) string
	// IsNaN is true where a floating-point expression is NaN. No comparison finds NaN on both
	// engines: DuckDB orders it above every number and equal to itself (NaN > 10 holds),
	// ClickHouse compares it false with everything (NaN > 10 and NaN <= 10 both fail).
	IsNaN(expr string) string
	// Matches is true where the text expression contains a match of the RE2 pattern, an SQL
	// string literal (Literal renders it); NULL stays NULL.
	Matches(expr, pattern string) string
	// NullSafeEqual compares two expressions with NULL equal to NULL.
	NullSafeEqual(a, b string) string
	// Materialize names a subquery a statement reads more than once, so the engine computes it
	// once where it can. It returns the text to put before the statement (possibly empty) and the
	// text to read the subquery by in a FROM clause.
	Materialize(name, query string) (with, ref string)
	// Drop returns the statement that drops a table or a view if it exists.
	Drop(name string, view bool) string
	// RepointStatements returns the statements that make views read from tables, in order.
	// exists names the views that already exist; suffix makes helper names unique.
	RepointStatements(points []ViewPoint, exists map[string]bool, suffix string) []string
}

// Open connects to a target URL: duckdb:PATH, duckdb::memory:, or clickhouse://host:port/db.
// A DuckDB file must exist: a mistyped path is an error naming it, not a new empty warehouse.
func Open(ctx context.Context, url string) (Engine, error) { return open(ctx, url, false) }

// Create is Open that makes the DuckDB file when it does not exist yet, where a new warehouse is
// the point (trueup demo, tests); a ClickHouse URL opens as with Open.
func Create(ctx context.Context, url string) (Engine, error) { return open(ctx, url, true) }

// open names the target in its errors by Redact(url): the engines repeat the URL they were
// given, and an error reaches terminals, logs and pages.
func open(ctx context.Context, url string, create bool) (Engine, error) {
	e, err := openEngine(ctx, url, create)
	if err != nil {
		return nil, redactError(url, err)
	}
	return e, nil
}

// DuckDBFile is the file a duckdb target URL names, and what follows the path (its
// ?schema=NAME, or ""); ok is false for another kind of target and for duckdb::memory:.
func DuckDBFile(url string) (path, rest string, ok bool) {
	p, ok := strings.CutPrefix(url, "duckdb:")
	if !ok {
		return "", "", false
	}
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p, rest = p[:i], p[i:]
	}
	if p == "" || p == ":memory:" {
		return "", "", false
	}
	return p, rest, true
}

// IsURL reports whether s names a target by URL (duckdb:PATH, clickhouse://…) rather than by a
// configured name.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "duckdb:") || strings.HasPrefix(s, "clickhouse://")
}

func openEngine(ctx context.Context, url string, create bool) (Engine, error) {
	switch {
	case strings.HasPrefix(url, "duckdb:"):
		return openDuckDB(ctx, url, strings.TrimPrefix(url, "duckdb:"), create)
	case strings.HasPrefix(url, "clickhouse://"):
		return openClickHouse(ctx, url)
	case url == "":
		return nil, fault.New(fault.Invalid, "empty target URL (want duckdb:PATH, duckdb::memory: or clickhouse://host:port/db)")
	}
	return nil, fault.New(fault.Invalid, "%q: unknown scheme (want duckdb:PATH, duckdb::memory: or clickhouse://host:port/db)", url)
}
