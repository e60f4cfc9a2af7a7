package sql

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"trueup/fault"
)

// ClickHouse replaces rows a partition at a time (ALTER TABLE … REPLACE PARTITION … FROM, atomic
// per partition). A window of a backfill may be finer than the table's partitions (days in a
// table partitioned by toYYYYMM): then the partitions it touches are rebuilt whole in a staging
// table, from the table's own rows outside the window and the window's new rows, and replaced.

// partitionKeyColumn is the column of system.tables that holds a table's partition key, on the
// servers that have it (18.16 as Debian ships it does; older ones do not).
const partitionKeyColumn = "partition_key"

// partitionKeyQueries are the statements that read a table's partition key: from
// system.tables.partition_key where the server has it, else from engine_full (chPartitionKey).
func (d chDialect) partitionKeyQueries(table string) (probe, key, engineFull string, args []any) {
	probe = "SELECT count() FROM system.columns WHERE database = 'system' AND table = 'tables' AND name = '" + partitionKeyColumn + "'"
	where, args := systemTableWhere(table, "name")
	return probe, "SELECT " + partitionKeyColumn + " FROM system.tables WHERE " + where,
		"SELECT engine_full FROM system.tables WHERE " + where, args
}

// sizeQuery counts a table's rows and bytes on disk from its active parts.
func (d chDialect) sizeQuery(table string) (string, []any) {
	where, args := systemTableWhere(table, "table")
	return "SELECT sum(rows), sum(bytes_on_disk) FROM system.parts WHERE active AND " + where, args
}

// systemTableWhere selects a table by name in a system table whose column of table names is
// nameCol, in the named database or the current one.
func systemTableWhere(table, nameCol string) (string, []any) {
	parts := splitRelation(table)
	if len(parts) == 2 {
		return "database = ? AND " + nameCol + " = ?", []any{parts[0], parts[1]}
	}
	return "database = currentDatabase() AND " + nameCol + " = ?", []any{parts[0]}
}

// Partitioning reads the table's partition key (see chPartitioning) and, for a table with none,
// its size.
func (e *chEngine) Partitioning(ctx context.Context, table, column string) (Partitioning, error) {
	fail := func(err error) (Partitioning, error) {
		return Partitioning{}, fmt.Errorf("partitioning of %s: %w", table, err)
	}
	cols, err := e.Columns(ctx, table)
	if err != nil {
		return Partitioning{}, err
	}
	typ := TypeOther
	for _, c := range cols {
		if c.Name == column {
			typ = c.Kind
		}
	}
	where, args := systemTableWhere(table, "name")
	res, err := e.tablesQuery(ctx, "SELECT engine FROM system.tables WHERE "+where, args...)
	if err != nil {
		return fail(err)
	}
	if len(res.Rows) > 0 {
		if engine := AsText(res.Rows[0][0]); !strings.HasSuffix(engine, "MergeTree") && engine != "View" {
			return Partitioning{}, fault.New(fault.Invalid, "%s has the engine %s, which has no partitions to replace: trueup backfills MergeTree tables (copy it into one: CREATE TABLE … ENGINE = MergeTree ORDER BY … AS SELECT * FROM %s)",
				table, engine, table)
		}
	}
	key, err := e.partitionKey(ctx, table)
	if err != nil {
		return fail(err)
	}
	p, err := chPartitioning(table, key, column, typ)
	if err != nil || !p.Whole {
		return p, err
	}
	q, args := e.dialect.sizeQuery(table)
	res, err = e.Query(ctx, q, args...)
	if err != nil {
		return fail(err)
	}
	if len(res.Rows) > 0 {
		p.Rows, p.Bytes = AsInt64(res.Rows[0][0]), AsInt64(res.Rows[0][1])
	}
	return p, nil
}

// partitionKey chooses by what the server has: system.tables.partition_key, or engine_full.
func (e *chEngine) partitionKey(ctx context.Context, table string) (string, error) {
	probe, keyQ, fullQ, args := e.dialect.partitionKeyQueries(table)
	res, err := e.Query(ctx, probe)
	if err != nil {
		return "", err
	}
	if AsInt64(res.Rows[0][0]) > 0 {
		return e.oneText(ctx, table, keyQ, args)
	}
	full, err := e.oneText(ctx, table, fullQ, args)
	if err != nil {
		return "", err
	}
	return chPartitionKey(full), nil
}

func (e *chEngine) oneText(ctx context.Context, table, q string, args []any) (string, error) {
	res, err := e.Query(ctx, q, args...)
	if err != nil {
		return "", err
	}
	if len(res.Rows) == 0 {
		return "", fmt.Errorf("there is no table %s", table)
	}
	return AsText(res.Rows[0][0]), nil
}

// ReplacePartition replaces the rows of table inside w, as ReplacePartitions does one window.
func (e *chEngine) ReplacePartition(ctx context.Context, table string, w Window, query string, args ...any) (int64, error) {
	return replaceOne(ctx, e, table, w, query, args)
}

// ReplacePartitions builds the windows' rows in one staging table of the table's layout and swaps
// them in with ALTER TABLE … REPLACE PARTITION ID, which ClickHouse applies atomically to each
// partition. The partitions replaced are those of the staged rows and those where the table
// holds rows of a window now, whatever the table's partition key. A partition that also holds
// rows outside the windows (a table partitioned more coarsely than they are: days of a month
// partition, or a table with no partition key at all) gets those rows in the staging table too,
// read from the table itself, so replacing it keeps them as they are; and a rerun after a replace
// that stopped part-way reads the same rows again. Each window's rows are counted as they are
// staged: the count is the window's, not its partition's.
func (e *chEngine) ReplacePartitions(ctx context.Context, table string, writes []PartitionWrite) ([]int64, error) {
	if len(writes) == 0 {
		return nil, nil
	}
	d := e.dialect
	rows := make([]int64, len(writes))
	fail := func(err error) ([]int64, error) { return nil, fmt.Errorf("replace partition of %s: %w", table, err) }
	cols, err := e.Columns(ctx, table)
	if err != nil {
		return nil, err
	}
	list := columnList(d, cols)
	stage := StagingPrefix(table) + randomSuffix() // see staging.go
	if err := e.createStage(ctx, stage, table); err != nil {
		return fail(err)
	}
	defer e.Exec(context.WithoutCancel(ctx), d.Drop(stage, false))
	windows := make([]Window, len(writes))
	var staged int64
	for i, w := range writes {
		windows[i] = w.Window
		in, inArgs := inWindows(d, w.Window.Column, []Window{w.Window})
		ins := fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM (%s) WHERE %s", d.QuoteRelation(stage), list, list, w.Query, in)
		if err := e.Exec(ctx, ins, append(append([]any{}, w.Args...), inArgs...)...); err != nil {
			return fail(err)
		}
		n, err := e.count(ctx, stage)
		if err != nil {
			return fail(err)
		}
		rows[i], staged = n-staged, n
		if w.NeverEmpty && rows[i] == 0 {
			res, err := e.Query(ctx, "SELECT count() FROM "+d.QuoteRelation(table)+" WHERE "+in, inArgs...)
			if err != nil {
				return fail(err)
			}
			if held := AsInt64(res.Rows[0][0]); held > 0 { // nothing replaced yet: the staging table is dropped
				return nil, &EmptiedError{Table: table, Window: w.Window, Rows: held}
			}
		}
	}
	in, inArgs := inWindows(d, windows[0].Column, windows)
	ids, current, err := e.touchedPartitions(ctx, table, stage, in, inArgs)
	if err != nil {
		return fail(err)
	}
	if len(ids) == 0 {
		return rows, nil
	}
	carry, err := e.partitionsHoldingMore(ctx, table, ids, current)
	if err != nil {
		return fail(err)
	}
	if len(carry) > 0 {
		q := fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE _partition_id IN (%s) AND NOT ifNull((%s), 0)",
			d.QuoteRelation(stage), list, list, d.QuoteRelation(table), strings.Join(quoteAll(d, carry), ", "), in)
		if err := e.Exec(ctx, q, inArgs...); err != nil {
			return fail(fmt.Errorf("carry the rows outside the windows: %w", err))
		}
	}
	// A partition the staging table lacks is emptied: the windows have no rows there now.
	for _, s := range replacePartitionsFrom(d, table, stage, ids) {
		if err := e.Exec(ctx, s); err != nil {
			return fail(err)
		}
	}
	return rows, nil
}

// createStage creates stage with table's layout. A replicated table's staging table is a plain
// MergeTree of the same keys (REPLACE PARTITION … FROM takes it): one made AS the table would
// share its replication path and join its replicas.
func (e *chEngine) createStage(ctx context.Context, stage, table string) error {
	d := e.dialect
	where, args := systemTableWhere(table, "name")
	res, err := e.tablesQuery(ctx, "SELECT engine, engine_full FROM system.tables WHERE "+where, args...)
	if err != nil {
		return err
	}
	like := ""
	if len(res.Rows) > 0 && strings.HasPrefix(AsText(res.Rows[0][0]), "Replicated") {
		like = " ENGINE = " + strings.TrimPrefix(AsText(res.Rows[0][0]), "Replicated") + "() " + engineTail(AsText(res.Rows[0][1]))
	}
	return e.Exec(ctx, "CREATE TABLE "+d.QuoteRelation(stage)+" AS "+d.QuoteRelation(table)+like)
}

// tablesQuery runs a query of system.tables, again when another table was dropped while it was
// listed (code 60 on old servers, see ViewCatalog).
func (e *chEngine) tablesQuery(ctx context.Context, q string, args ...any) (*Result, error) {
	res, err := e.Query(ctx, q, args...)
	for try := 0; try < 5 && droppedWhileListed(err); try++ {
		res, err = e.Query(ctx, q, args...)
	}
	return res, err
}

func quoteAll(d chDialect, ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i], _ = d.Literal(Param{Type: TypeString, Value: id})
	}
	return out
}

func (e *chEngine) count(ctx context.Context, table string) (int64, error) {
	res, err := e.Query(ctx, "SELECT count() FROM "+e.dialect.QuoteRelation(table))
	if err != nil {
		return 0, err
	}
	return AsInt64(res.Rows[0][0]), nil
}

// touchedPartitions lists, in order, the partitions of the staged rows and those where table
// holds rows matching in now, with how many rows match in each of the latter.
func (e *chEngine) touchedPartitions(ctx context.Context, table, stage, in string, inArgs []any) ([]string, map[string]int64, error) {
	d := e.dialect
	staged, err := e.partitionRows(ctx, "SELECT _partition_id, count() FROM "+d.QuoteRelation(stage)+" GROUP BY _partition_id")
	if err != nil {
		return nil, nil, err
	}
	current, err := e.partitionRows(ctx, "SELECT _partition_id, count() FROM "+d.QuoteRelation(table)+" WHERE "+in+" GROUP BY _partition_id", inArgs...)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]string, 0, len(staged)+len(current))
	for id := range staged {
		ids = append(ids, id)
	}
	for id := range current {
		if _, ok := staged[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, current, nil
}

// partitionsHoldingMore returns those of ids where table holds rows outside the windows: its
// active parts hold more rows than match them (matching, by partition, as touchedPartitions
// counted).
func (e *chEngine) partitionsHoldingMore(ctx context.Context, table string, ids []string, matching map[string]int64) ([]string, error) {
	where, args := systemTableWhere(table, "table")
	whole, err := e.partitionRows(ctx, "SELECT partition_id, sum(rows) FROM system.parts WHERE active AND "+where+" GROUP BY partition_id", args...)
	if err != nil {
		return nil, err
	}
	current := matching
	var out []string
	for _, id := range ids {
		if whole[id] > current[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// partitionRows runs a query of (partition id, rows) and returns the rows by partition id.
func (e *chEngine) partitionRows(ctx context.Context, q string, args ...any) (map[string]int64, error) {
	res, err := e.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(res.Rows))
	for _, r := range res.Rows {
		out[AsText(r[0])] = AsInt64(r[1])
	}
	return out, nil
}

// CopyPartitions attaches src's partitions that hold no row of the excluded windows to dst by
// REPLACE PARTITION (a metadata copy of parts); the rows outside the windows of the partitions
// that do — all of them in a table partitioned more coarsely than the windows — are copied by
// INSERT … SELECT. Which partitions hold rows of a window is read from the rows, not from the
// partition's value, so it holds whatever the key (toYYYYMM, toMonday, a tuple, none).
func (e *chEngine) CopyPartitions(ctx context.Context, dst, src string, column string, exclude []Window) error {
	d := e.dialect
	fail := func(err error) error { return fmt.Errorf("copy partitions of %s: %w", src, err) }
	in, inArgs := inWindows(d, column, exclude)
	inside := "0"
	if in != "" {
		inside = "countIf(ifNull((" + in + "), 0))"
	}
	touched, err := e.partitionRows(ctx, "SELECT _partition_id, "+inside+" FROM "+d.QuoteRelation(src)+" GROUP BY _partition_id", inArgs...)
	if err != nil {
		return fail(err)
	}
	ids := make([]string, 0, len(touched))
	for id := range touched {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var split []string
	for _, id := range ids {
		if touched[id] > 0 {
			split = append(split, id)
			continue
		}
		lit, err := d.Literal(Param{Type: TypeString, Value: id})
		if err != nil {
			return fail(err)
		}
		if err := e.Exec(ctx, "ALTER TABLE "+d.QuoteRelation(dst)+" REPLACE PARTITION ID "+lit+" FROM "+d.QuoteRelation(src)); err != nil {
			return fmt.Errorf("copy partition %s of %s: %w", id, src, err)
		}
	}
	if len(split) == 0 {
		return nil
	}
	cols, err := e.Columns(ctx, dst)
	if err != nil {
		return err
	}
	list := columnList(d, cols)
	q := fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE _partition_id IN (%s) AND NOT ifNull((%s), 0)",
		d.QuoteRelation(dst), list, list, d.QuoteRelation(src), strings.Join(quoteAll(d, split), ", "), in)
	if err := e.Exec(ctx, q, inArgs...); err != nil {
		return fail(err)
	}
	return nil
}
