package sql

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Carrying partitions between versions of one table: what a swap, a rollback and a catch-up do
// with the partitions the live version gained while another version was being built or was live.

// Carry moves one partition's rows from one table into another of the same columns. Without
// Merge the rows of From inside Window replace Into's (exact whatever was written: appends,
// updates, deletes). With Merge the rows of From inside Window that Into lacks are added to Into,
// rows being told apart by their row hash: what a partition written on both sides needs, right
// for writers that append (a row equal in every column to one Into has is taken for that row).
type Carry struct {
	Into, From string
	Window     Window
	Merge      bool
	// IntoWas, on a replace (not Merge), is the fingerprint of Into's partition when the carry was
	// planned: where the engine carries inside a transaction it checks it there and refuses with
	// ErrCarryMoved if a writer changed the partition since, whose rows the replace would delete.
	IntoWas *PartMark
}

// ErrCarryMoved refuses a carry whose destination partition was written after it was planned
// (a writer still writing the version being made live): plan the carry again.
var ErrCarryMoved = errors.New("the partition to carry into was written since the carry was planned")

// FormatGrain renders a partition's start as people and JSON read it: 2026-09-01, 2026-09 for a
// month, 2026-09-01T13:00 for an hour.
func FormatGrain(t time.Time, grain string) string {
	switch grain {
	case "month":
		return t.Format("2006-01")
	case "hour":
		return t.Format("2006-01-02T15:00")
	}
	return t.Format("2006-01-02")
}

// mergeSelect is the query of Carry c's rows that c.Into lacks, over cols (c.From's columns), and
// its arguments.
func mergeSelect(d Dialect, cols []Column, c Carry) (string, []any) {
	in, args := inWindows(d, c.Window.Column, []Window{c.Window})
	h := d.RowHash(cols, HashOptions{})
	q := fmt.Sprintf("SELECT * FROM %s WHERE (%s) AND %s NOT IN (SELECT %s FROM %s WHERE %s)",
		d.QuoteRelation(c.From), in, h, h, d.QuoteRelation(c.Into), in)
	return q, append(args, args...)
}

// MergeGains counts the rows each merge of carries adds (Engine.MergeGains).
func (e *duckEngine) MergeGains(ctx context.Context, carries []Carry) ([]int64, error) {
	return mergeGains(ctx, e, carries)
}

// MergeGains counts the rows each merge of carries adds (Engine.MergeGains).
func (e *chEngine) MergeGains(ctx context.Context, carries []Carry) ([]int64, error) {
	return mergeGains(ctx, e, carries)
}

// mergeGains counts them with the query the merge runs.
func mergeGains(ctx context.Context, e Engine, carries []Carry) ([]int64, error) {
	out := make([]int64, len(carries))
	for i, c := range carries {
		if !c.Merge {
			continue
		}
		cols, err := sameColumns(ctx, e, c)
		if err != nil {
			return nil, err
		}
		q, args := mergeSelect(e.Dialect(), cols, c)
		res, err := e.Query(ctx, "SELECT count(*) FROM ("+q+") AS lacking", args...)
		if err != nil {
			return nil, fmt.Errorf("count the rows a merge of %s into %s adds: %w", c.From, c.Into, err)
		}
		out[i] = AsInt64(res.Rows[0][0])
	}
	return out, nil
}

// sameColumns refuses a carry between tables whose columns differ: a version built with another
// schema cannot take the live version's rows as they are.
func sameColumns(ctx context.Context, e Engine, c Carry) ([]Column, error) {
	from, err := e.Columns(ctx, c.From)
	if err != nil {
		return nil, err
	}
	into, err := e.Columns(ctx, c.Into)
	if err != nil {
		return nil, err
	}
	if len(from) != len(into) {
		return nil, fmt.Errorf("carry %s into %s: they have different columns", c.From, c.Into)
	}
	for i := range from {
		if from[i].Name != into[i].Name || BaseType(from[i].Type) != BaseType(into[i].Type) {
			return nil, fmt.Errorf("carry %s into %s: column %s is %s in one and %s %s in the other",
				c.From, c.Into, from[i].Name, from[i].Type, into[i].Name, into[i].Type)
		}
	}
	return from, nil
}

// carryIn is one carry's statements on DuckDB, run in the caller's transaction.
func (e *duckEngine) carryIn(ctx context.Context, tx *dbsql.Tx, cols []Column, c Carry) error {
	d := e.dialect
	into := d.QuoteRelation(c.Into)
	var stmts []string
	var args [][]any
	if c.Merge {
		q, a := mergeSelect(d, cols, c)
		stmts, args = append(stmts, "INSERT INTO "+into+" BY NAME "+q), append(args, a)
	} else {
		in, a := inWindows(d, c.Window.Column, []Window{c.Window})
		if err := e.checkInto(ctx, tx, c, in, a); err != nil {
			return err
		}
		stmts = append(stmts, "DELETE FROM "+into+" WHERE "+in,
			"INSERT INTO "+into+" BY NAME SELECT * FROM "+d.QuoteRelation(c.From)+" WHERE "+in)
		args = append(args, a, a)
	}
	for i, s := range stmts {
		if _, err := tx.ExecContext(ctx, s, args[i]...); err != nil {
			return fmt.Errorf("carry %s of %s into %s: %w", c.Window, c.From, c.Into, err)
		}
	}
	return nil
}

// checkInto refuses carry c with ErrCarryMoved when its destination partition (rows matching
// in, with args) no longer holds what the carry was planned against.
func (e *duckEngine) checkInto(ctx context.Context, tx *dbsql.Tx, c Carry, in string, args []any) error {
	if c.IntoWas == nil {
		return nil
	}
	cols, err := e.Columns(ctx, c.Into)
	if err != nil {
		return err
	}
	d := e.dialect
	var now PartMark
	err = e.eachOn(ctx, tx, "SELECT count(*), "+Fingerprint(d, cols)+" FROM "+d.QuoteRelation(c.Into)+" WHERE "+in, args, nil, func(r []any) error {
		now = PartMark{Rows: AsInt64(r[0]), Sum: AsText(r[1])}
		return nil
	})
	if err != nil {
		return fmt.Errorf("carry %s into %s: %w", c.Window, c.Into, err)
	}
	if now.Rows == 0 && c.IntoWas.Rows == 0 {
		return nil // empty then and now (an empty sum reads NULL)
	}
	if !now.Same(*c.IntoWas) {
		return fmt.Errorf("carry %s into %s: %w", c.Window, c.Into, ErrCarryMoved)
	}
	return nil
}

// carryColumns checks every carry's tables and returns their columns, by carry.
func carryColumns(ctx context.Context, e Engine, carries []Carry) ([][]Column, error) {
	out := make([][]Column, len(carries))
	for i, c := range carries {
		cols, err := sameColumns(ctx, e, c)
		if err != nil {
			return nil, err
		}
		out[i] = cols
	}
	return out, nil
}

// CarryPartitions carries every partition in one transaction.
func (e *duckEngine) CarryPartitions(ctx context.Context, carries []Carry) error {
	cols, err := carryColumns(ctx, e, carries)
	if err != nil || len(carries) == 0 {
		return err
	}
	return e.inTx(ctx, func(tx *dbsql.Tx) error {
		for i, c := range carries {
			if err := e.carryIn(ctx, tx, cols[i], c); err != nil {
				return err
			}
		}
		return nil
	})
}

// CarryPartitions carries the replaced partitions of each pair of tables by REPLACE PARTITION …
// FROM where they are whole partitions of both (carryWhole: parts shared, no row copied), else in
// one ReplacePartitions (one staging table, then REPLACE PARTITION, atomic per partition); each
// merged one by one INSERT … SELECT, which a rerun after a crash completes without adding a row
// twice.
func (e *chEngine) CarryPartitions(ctx context.Context, carries []Carry) error {
	cols, err := carryColumns(ctx, e, carries)
	if err != nil {
		return err
	}
	d := e.dialect
	type pair struct{ into, from string }
	var order []pair
	replaced := map[pair][]PartitionWrite{}
	for i, c := range carries {
		if !c.Merge {
			k := pair{c.Into, c.From}
			if _, ok := replaced[k]; !ok {
				order = append(order, k)
			}
			replaced[k] = append(replaced[k], PartitionWrite{Window: c.Window, Query: "SELECT * FROM " + d.QuoteRelation(c.From)})
			continue
		}
		q, a := mergeSelect(d, cols[i], c)
		list := columnList(d, cols[i])
		if err := e.Exec(ctx, fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM (%s)", d.QuoteRelation(c.Into), list, list, q), a...); err != nil {
			return fmt.Errorf("carry into %s: %w", c.Into, err)
		}
	}
	for _, k := range order {
		ws := make([]Window, len(replaced[k]))
		for i, w := range replaced[k] {
			ws[i] = w.Window
		}
		done, err := e.carryWhole(ctx, k.into, k.from, ws)
		if err == nil && !done {
			_, err = e.ReplacePartitions(ctx, k.into, replaced[k])
		}
		if err != nil {
			return fmt.Errorf("carry into %s: %w", k.into, err)
		}
	}
	return nil
}

// carryWhole carries the windows of from into into by REPLACE PARTITION … FROM (a metadata
// copy of parts that shares them) when each partition either table holds rows of the windows in
// holds nothing else — a table partitioned by the column at the windows' grain — and from holds
// every partition into holds there. It reports false, having changed nothing, otherwise (coarser
// partitions, a partition gone from from, an engine that counts rows otherwise): then the caller
// stages them (ReplacePartitions).
func (e *chEngine) carryWhole(ctx context.Context, into, from string, ws []Window) (bool, error) {
	d := e.dialect
	in, inArgs := inWindows(d, ws[0].Column, ws)
	count := func(table string) (map[string]int64, map[string]int64, error) {
		inside, err := e.partitionRows(ctx, "SELECT _partition_id, count() FROM "+d.QuoteRelation(table)+" WHERE "+in+" GROUP BY _partition_id", inArgs...)
		if err != nil {
			return nil, nil, err
		}
		where, args := systemTableWhere(table, "table")
		whole, err := e.partitionRows(ctx, "SELECT partition_id, sum(rows) FROM system.parts WHERE active AND "+where+" GROUP BY partition_id", args...)
		return inside, whole, err
	}
	fromIn, fromWhole, err := count(from)
	if err != nil {
		return false, err
	}
	intoIn, intoWhole, err := count(into)
	if err != nil {
		return false, err
	}
	for id, n := range fromIn {
		if fromWhole[id] != n {
			return false, nil
		}
	}
	for id, n := range intoIn {
		if _, ok := fromIn[id]; !ok || intoWhole[id] != n {
			return false, nil
		}
	}
	ids := make([]string, 0, len(fromIn))
	for id := range fromIn {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, lit := range quoteAll(d, ids) {
		if err := e.Exec(ctx, "ALTER TABLE "+d.QuoteRelation(into)+" REPLACE PARTITION ID "+lit+" FROM "+d.QuoteRelation(from)); err != nil {
			return true, err
		}
	}
	return true, nil
}

// WriteMark is a short text that changes whenever table's rows may have changed: on ClickHouse
// the names of its active parts (every insert, merge and mutation makes new ones), read from
// system.parts without touching a row.
func (e *chEngine) WriteMark(ctx context.Context, table string) (string, error) {
	where, args := systemTableWhere(table, "table")
	res, err := e.Query(ctx, "SELECT name FROM system.parts WHERE active AND "+where+" ORDER BY name", args...)
	if err != nil {
		return "", err
	}
	parts := make([]string, len(res.Rows))
	for i, r := range res.Rows {
		parts[i] = AsText(r[0])
	}
	return strings.Join(parts, ","), nil
}

// WriteMark on DuckDB digests the table's storage (pragma_storage_info: every segment's rows,
// block, statistics and pending updates) with its row count: an insert adds or rewrites a
// segment, a delete lowers the count, an update marks its segment until a checkpoint rewrites it.
// It reads no row. A checkpoint rearranges the segments written since the last one, so the mark
// may move with no row changed (a reread, never a wrong answer); SettledWriteMark is the one that
// survives a restart. A table with updates not yet checkpointed has no mark (""). Two writes can
// in principle leave the same digest, so trueup uses it only where a miss costs a reread:
// fingerprints, which --rescan ignores.
func (e *duckEngine) WriteMark(ctx context.Context, table string) (string, error) {
	mark, _, err := e.storageDigest(ctx, table)
	return mark, err
}

// settledWriteMark is WriteMark after a checkpoint of the rows written since the last one (what
// DuckDB does anyway as its log grows or the file closes), so that it stays as it is across a
// restart; "" when the checkpoint cannot be taken now (another write in flight).
func (e *duckEngine) settledWriteMark(ctx context.Context, table string) (string, error) {
	mark, dirty, err := e.storageDigest(ctx, table)
	if err != nil || !dirty {
		return mark, err
	}
	if err := e.Exec(ctx, "CHECKPOINT"); err != nil {
		return "", nil // busy: no mark now, so nothing is trusted from one
	}
	if mark, dirty, err = e.storageDigest(ctx, table); dirty {
		return "", err
	}
	return mark, err
}

// storageDigest is table's write mark and whether it holds rows not checkpointed yet.
func (e *duckEngine) storageDigest(ctx context.Context, table string) (string, bool, error) {
	d := e.dialect
	name, err := d.Literal(Param{Type: TypeString, Value: table})
	if err != nil {
		return "", false, err
	}
	res, err := e.Query(ctx, "SELECT (SELECT count(*) FROM "+d.QuoteRelation(table)+"), count(*), bool_or(has_updates), bool_or(NOT persistent), "+
		"md5(string_agg(concat_ws(':', row_group_id, column_id, segment_id, count, block_id, block_offset, stats, segment_info), '|' "+
		"ORDER BY row_group_id, column_id, segment_id)) FROM pragma_storage_info("+name+")")
	if err != nil {
		return "", false, err
	}
	r := res.Rows[0]
	updates, _ := r[2].(bool)
	transient, _ := r[3].(bool)
	if updates {
		return "", true, nil
	}
	return fmt.Sprintf("%d/%d/%s", AsInt64(r[0]), AsInt64(r[1]), AsText(r[4])), transient, nil
}

// SettledWriteMark is table's write mark as it stays across a restart of the engine's process
// when nothing writes to it: what a fingerprint kept in the ledger is checked against. On DuckDB
// it checkpoints the rows written since the last checkpoint first; elsewhere it is WriteMark.
func SettledWriteMark(ctx context.Context, e Engine, table string) (string, error) {
	if s, ok := e.(interface {
		settledWriteMark(ctx context.Context, table string) (string, error)
	}); ok {
		return s.settledWriteMark(ctx, table)
	}
	return e.WriteMark(ctx, table)
}

// PartMark is one partition's fingerprint: its rows, the sum of their row hashes (Fingerprint's:
// every column as stored, the engine's fast hash), the totals of its numeric columns and the NULLs
// of its columns that hold any. Fingerprints compare between tables of one engine, not across
// engines.
type PartMark struct {
	Rows   int64              `json:"rows"`
	Sum    string             `json:"sum"`
	Totals map[string]float64 `json:"totals,omitempty"`
	Nulls  map[string]int64   `json:"nulls,omitempty"`
}

// Same reports whether two fingerprints say the partitions hold the same rows.
func (m PartMark) Same(o PartMark) bool { return m.Rows == o.Rows && m.Sum == o.Sum }

// Fingerprint is the order-independent sum of the row hashes of a relation whose columns are
// cols, over the rows a query selects: every column hashed as the engine stores it, so equal
// sums mean equal rows (bar a 64-bit collision) and the hash is the engine's cheapest.
func Fingerprint(d Dialect, cols []Column) string { return d.HashSum(FingerprintRowHash(d, cols)) }

// FingerprintRowHash is the row hash Fingerprint sums.
func FingerprintRowHash(d Dialect, cols []Column) string {
	return d.RowHash(cols, FingerprintHashOptions(cols))
}

// FingerprintHashOptions are the options FingerprintRowHash hashes cols with: every column as stored.
func FingerprintHashOptions(cols []Column) HashOptions {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return HashOptions{Stored: names}
}

// MeasurePartitions fingerprints relation's partitions of grain along column, by partition
// start, in one scan; with only, just the partitions of those windows. The rows whose column is
// NULL are the partition keyed by the zero time (a Null window's), measured unless only leaves
// it out.
func MeasurePartitions(ctx context.Context, e Engine, relation, column, grain string, only []Window) (map[time.Time]PartMark, error) {
	return measurePartitions(ctx, e, relation, column, grain, only, true)
}

// MeasureRows is MeasurePartitions with each partition's rows and row-hash sum only, no totals
// or NULL counts: what tells whether a partition changed (PartMark.Same), at the cost of the
// bare count and hash scan.
func MeasureRows(ctx context.Context, e Engine, relation, column, grain string, only []Window) (map[time.Time]PartMark, error) {
	return measurePartitions(ctx, e, relation, column, grain, only, false)
}

func measurePartitions(ctx context.Context, e Engine, relation, column, grain string, only []Window, full bool) (map[time.Time]PartMark, error) {
	ctx = yieldIfBusy(ctx, e)
	cols, err := e.Columns(ctx, relation)
	if err != nil {
		return nil, err
	}
	d := e.Dialect()
	const alias = "trueup_partition__"
	sel := []string{d.TruncTime(d.Quote(column), grain) + " AS " + alias, "count(*)", Fingerprint(d, cols)}
	var totals, nullable []string
	for _, c := range cols {
		if full && c.Kind.Numeric() && c.Name != column {
			totals = append(totals, c.Name)
			sel = append(sel, d.ToFloat("sum("+d.Quote(c.Name)+")"))
		}
	}
	for _, c := range cols {
		if full && c.Nullable {
			nullable = append(nullable, c.Name)
			sel = append(sel, "count(*) - count("+d.Quote(c.Name)+")")
		}
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + d.QuoteRelation(relation)
	var args []any
	if len(only) > 0 {
		var in string
		in, args = inWindows(d, column, only)
		q += " WHERE " + in
	}
	q += " GROUP BY " + alias
	out := map[time.Time]PartMark{}
	err = e.Each(ctx, q, args, func(r []any) error {
		pm := PartMark{Rows: AsInt64(r[1]), Sum: AsText(r[2])}
		i := 3
		for _, c := range totals {
			// A NaN or infinite total cannot be recorded (nor compared): a diff sums the column
			// itself then.
			if v := AsFloat(r[i]); !math.IsNaN(v) && !math.IsInf(v, 0) {
				if pm.Totals == nil {
					pm.Totals = map[string]float64{}
				}
				pm.Totals[c] = v
			}
			i++
		}
		for _, c := range nullable {
			if n := AsInt64(r[i]); n > 0 {
				if pm.Nulls == nil {
					pm.Nulls = map[string]int64{}
				}
				pm.Nulls[c] = n
			}
			i++
		}
		start := time.Time{} // the rows whose column is NULL
		if r[0] != nil {
			start = TruncGrain(AsTime(r[0]), grain)
		}
		out[start] = pm
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("measure the partitions of %s: %w", relation, err)
	}
	return out, nil
}
