package sql

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"regexp"
	"strings"
)

// Adopting a plain table: the table becomes its first version (<table>__v1) and a view of the
// table's name reads it, so that readers go on querying the name unchanged (views.Adopt owns the
// flow; these are the engines' statements). Undoing it puts the table back under its name.

// AdoptRefusal says why table cannot be adopted on DuckDB ("" when it can): DuckDB refuses to
// rename a table that has indexes or that a foreign key references.
func (e *duckEngine) AdoptRefusal(ctx context.Context, table string) (string, error) {
	res, err := e.Query(ctx, `SELECT index_name FROM duckdb_indexes()
		WHERE database_name = current_database() AND schema_name = current_schema() AND table_name = ? ORDER BY 1`, table)
	if err != nil {
		return "", fmt.Errorf("adopt %s: %w", table, err)
	}
	if len(res.Rows) > 0 {
		return fmt.Sprintf("%s has the index %s, and DuckDB cannot rename a table with indexes: drop it first (CREATE it again on %s__v1 after the adopt)",
			table, AsText(res.Rows[0][0]), table), nil
	}
	res, err = e.Query(ctx, `SELECT table_name FROM duckdb_constraints()
		WHERE database_name = current_database() AND schema_name = current_schema()
		AND constraint_type = 'FOREIGN KEY' AND referenced_table = ? ORDER BY 1`, table)
	if err != nil {
		return "", fmt.Errorf("adopt %s: %w", table, err)
	}
	if len(res.Rows) > 0 {
		return fmt.Sprintf("a foreign key of %s references %s, and DuckDB cannot rename a referenced table", AsText(res.Rows[0][0]), table), nil
	}
	return "", nil
}

// AdoptTable renames table to version and creates the view in one transaction: readers never
// see the name missing.
func (e *duckEngine) AdoptTable(ctx context.Context, table, version string) error {
	d := e.dialect
	return e.inTx(ctx, func(tx *dbsql.Tx) error {
		for _, s := range append([]string{"ALTER TABLE " + d.QuoteRelation(table) + " RENAME TO " + d.Quote(version)},
			d.RepointStatements([]ViewPoint{{View: table, Table: version}}, nil, "")...) {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("adopt %s: %w", table, err)
			}
		}
		return nil
	})
}

// UnadoptTable drops the view and renames version back to table, in one transaction.
func (e *duckEngine) UnadoptTable(ctx context.Context, table, version string) error {
	d := e.dialect
	return e.inTx(ctx, func(tx *dbsql.Tx) error {
		for _, s := range []string{d.Drop(table, true), "ALTER TABLE " + d.QuoteRelation(version) + " RENAME TO " + d.Quote(table)} {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("undo adopt of %s: %w", table, err)
			}
		}
		return nil
	})
}

// chRenamable are the ClickHouse engines an adopt may rename and read through a view: the
// MergeTree family (by suffix) and these.
var chRenamable = map[string]bool{"Log": true, "TinyLog": true, "StripeLog": true, "Memory": true}

// chMergesRows are the MergeTree engines whose merges replace, collapse or add up rows, whose
// readers therefore ask for FINAL (each also as Replicated…). A view takes FINAL and ignores it,
// on every server version: after an adopt, SELECT … FROM t FINAL would read the rows unmerged,
// duplicates and cancelled rows included, with no error.
var chMergesRows = []string{"ReplacingMergeTree", "CollapsingMergeTree", "VersionedCollapsingMergeTree", "SummingMergeTree", "AggregatingMergeTree"}

var chMaterializedTo = regexp.MustCompile("(?is)^CREATE MATERIALIZED VIEW\\s+(?:`[^`]*`|\\S+)\\s+TO\\s+((?:`[^`]*`|[^\\s(]+))")

// AdoptRefusal says why table cannot be adopted on ClickHouse ("" when it can): an engine that
// is not a plain data store (Kafka, Distributed, Dictionary, …), a materialized view that reads
// it (its trigger stays on the name, which becomes a view, so it would stop receiving rows) or
// writes TO it (it would write into a view), a dictionary that loads from it, or an engine whose
// merges change rows (chMergesRows: its readers' FINAL would be lost through the view).
func (e *chEngine) AdoptRefusal(ctx context.Context, table string) (string, error) {
	res, err := e.Query(ctx, `SELECT engine, dependencies_table FROM system.tables
		WHERE database = currentDatabase() AND name = ?`, table)
	if err != nil {
		return "", fmt.Errorf("adopt %s: %w", table, err)
	}
	if len(res.Rows) == 0 {
		return "", nil // the caller has found it; gone since, the rename says so
	}
	engine := AsText(res.Rows[0][0])
	if !strings.HasSuffix(engine, "MergeTree") && !chRenamable[engine] {
		return fmt.Sprintf("%s has the engine %s; trueup adopts tables that hold their rows (MergeTree, Log, Memory engines)", table, engine), nil
	}
	for _, m := range chMergesRows {
		if engine == m || engine == "Replicated"+m {
			return fmt.Sprintf("%s has the engine %s, whose readers query it with FINAL, and a view ignores FINAL: SELECT … FROM %s FINAL would read the rows unmerged, with no error", table, engine, table), nil
		}
	}
	if deps, ok := res.Rows[0][1].([]string); ok && len(deps) > 0 {
		return fmt.Sprintf("the materialized view %s reads %s: its trigger would stay on the name %s, which becomes a view, and it would stop receiving rows", deps[0], table, table), nil
	}
	res, err = e.Query(ctx, `SELECT name, create_table_query FROM system.tables
		WHERE database = currentDatabase() AND engine = 'MaterializedView' ORDER BY name`)
	if err != nil {
		return "", fmt.Errorf("adopt %s: %w", table, err)
	}
	db, err := e.currentDatabase(ctx)
	if err != nil {
		return "", err
	}
	for _, r := range res.Rows {
		m := chMaterializedTo.FindStringSubmatch(AsText(r[1]))
		if m == nil {
			continue
		}
		to := strings.ReplaceAll(m[1], "`", "")
		if to == table || to == db+"."+table {
			return fmt.Sprintf("the materialized view %s writes TO %s: after the adopt it would write into a view", AsText(r[0]), table), nil
		}
	}
	res, err = e.Query(ctx, `SELECT name, source FROM system.dictionaries ORDER BY name`)
	if err != nil {
		return "", fmt.Errorf("adopt %s: %w", table, err)
	}
	for _, r := range res.Rows {
		// e.g. "ClickHouse: db.table", as 18.16 and later servers describe a ClickHouse source
		if src := AsText(r[1]); strings.TrimSpace(strings.TrimPrefix(src, "ClickHouse:")) == db+"."+table {
			return fmt.Sprintf("the dictionary %s loads from %s (%s)", AsText(r[0]), table, src), nil
		}
	}
	return "", nil
}

func (e *chEngine) currentDatabase(ctx context.Context) (string, error) {
	res, err := e.Query(ctx, "SELECT currentDatabase()")
	if err != nil {
		return "", err
	}
	return AsText(res.Rows[0][0]), nil
}

// atomic reports whether the current database is an Atomic one, where EXCHANGE TABLES swaps
// two names in one step.
func (e *chEngine) atomic(ctx context.Context) (bool, error) {
	if !e.dialect.version.AtLeast(20, 5) {
		return false, nil
	}
	res, err := e.Query(ctx, "SELECT engine FROM system.databases WHERE name = currentDatabase()")
	if err != nil {
		return false, err
	}
	return len(res.Rows) == 1 && AsText(res.Rows[0][0]) == "Atomic", nil
}

// AdoptTable renames table to version and creates the view. In an Atomic database (ClickHouse
// 20.5 and later) a MergeTree table is copied into version part by part (hard links), a view
// over it takes the name in one EXCHANGE, and the parts are copied again from the old table,
// now out of every writer's reach, so version holds exactly its rows: readers never see the name
// missing. Elsewhere (ClickHouse 18.16's Ordinary databases) it is RENAME then CREATE VIEW, with
// a moment between the two when the name is missing; the caller's recorded intent lets
// start-up recovery finish it.
func (e *chEngine) AdoptTable(ctx context.Context, table, version string) error {
	d := e.dialect
	atomic, err := e.atomic(ctx)
	if err != nil {
		return fmt.Errorf("adopt %s: %w", table, err)
	}
	engine, err := e.engineOf(ctx, table)
	if err != nil {
		return fmt.Errorf("adopt %s: %w", table, err)
	}
	if !atomic || !strings.HasSuffix(engine, "MergeTree") {
		// The view is made under another name first: a server that cannot make one over the
		// table (18.16 and a LowCardinality column, which its views take only behind a setting)
		// refuses it before anything is renamed, and readers keep the table.
		probe := table + "__adopt_probe"                         // not adoptingSuffix: recovery takes that one for an old table
		if err := e.Exec(ctx, d.Drop(probe, true)); err != nil { // one a crash left
			return fmt.Errorf("adopt %s: %w", table, err)
		}
		if err := e.Exec(ctx, "CREATE VIEW "+d.QuoteRelation(probe)+" AS SELECT * FROM "+d.QuoteRelation(table)); err != nil {
			return fmt.Errorf("the server cannot make a view over %s, which readers would read by its name: %w", table, err)
		}
		if err := e.Exec(ctx, d.Drop(probe, true)); err != nil {
			return fmt.Errorf("adopt %s: %w", table, err)
		}
		if err := e.Exec(ctx, "RENAME TABLE "+d.QuoteRelation(table)+" TO "+d.QuoteRelation(version)); err != nil {
			return fmt.Errorf("adopt %s: %w", table, err)
		}
		if err := e.Exec(ctx, "CREATE VIEW "+d.QuoteRelation(table)+" AS SELECT * FROM "+d.QuoteRelation(version)); err != nil {
			// The name goes back to the table, so that a failure leaves things as they were.
			if rerr := e.Exec(context.WithoutCancel(ctx), "RENAME TABLE "+d.QuoteRelation(version)+" TO "+d.QuoteRelation(table)); rerr != nil {
				return fmt.Errorf("adopt %s: %w (and renaming %s back: %v)", table, err, version, rerr)
			}
			return fmt.Errorf("adopt %s: %w", table, err)
		}
		return nil
	}
	parts, err := e.partitionIDs(ctx, table)
	if err != nil {
		return fmt.Errorf("adopt %s: %w", table, err)
	}
	for _, s := range adoptAtomicStatements(d, table, version, parts) {
		if err := e.Exec(ctx, s); err != nil {
			return fmt.Errorf("adopt %s: %w", table, err)
		}
	}
	return e.FinishAdopt(ctx, table, version)
}

// FinishAdopt carries into version the rows written to the old table between an Atomic adopt's
// first copy and its EXCHANGE, then drops the old table: the end of AdoptTable, and what
// start-up recovery runs after a crash left the old table behind (nothing to do when there is
// none, as always on 18.16 and DuckDB).
func (e *chEngine) FinishAdopt(ctx context.Context, table, version string) error {
	d := e.dialect
	old := table + adoptingSuffix
	if _, err := e.engineOf(ctx, old); err != nil {
		return nil // no old table left: nothing to finish
	}
	parts, err := e.partitionIDs(ctx, old)
	if err != nil {
		return fmt.Errorf("adopt %s: %w", table, err)
	}
	for _, s := range append(replacePartitionsFrom(d, version, old, parts), d.Drop(old, false)) {
		if err := e.Exec(ctx, s); err != nil {
			return fmt.Errorf("adopt %s: %w", table, err)
		}
	}
	return nil
}

// FinishAdopt has nothing to do on DuckDB: its adopt is one transaction.
func (e *duckEngine) FinishAdopt(context.Context, string, string) error { return nil }

// adoptingSuffix names the helper an Atomic adopt uses: the view before the EXCHANGE, the old
// table after it.
const adoptingSuffix = "__adopting"

// adoptAtomicStatements are an Atomic database's adopt up to the EXCHANGE (see AdoptTable):
// version made like table, each partition copied in, the view made and exchanged with table.
func adoptAtomicStatements(d chDialect, table, version string, partitions []string) []string {
	helper := table + adoptingSuffix
	out := []string{"CREATE TABLE " + d.QuoteRelation(version) + " AS " + d.QuoteRelation(table)}
	out = append(out, replacePartitionsFrom(d, version, table, partitions)...)
	return append(out,
		"CREATE VIEW "+d.QuoteRelation(helper)+" AS SELECT * FROM "+d.QuoteRelation(version),
		"EXCHANGE TABLES "+d.QuoteRelation(table)+" AND "+d.QuoteRelation(helper))
}

func replacePartitionsFrom(d chDialect, dst, src string, partitions []string) []string {
	out := make([]string, 0, len(partitions))
	for _, id := range partitions {
		lit, _ := d.Literal(Param{Type: TypeString, Value: id})
		out = append(out, "ALTER TABLE "+d.QuoteRelation(dst)+" REPLACE PARTITION ID "+lit+" FROM "+d.QuoteRelation(src))
	}
	return out
}

func (e *chEngine) engineOf(ctx context.Context, table string) (string, error) {
	return e.oneText(ctx, table, "SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = ?", []any{table})
}

func (e *chEngine) partitionIDs(ctx context.Context, table string) ([]string, error) {
	res, err := e.Query(ctx, `SELECT DISTINCT partition_id FROM system.parts
		WHERE database = currentDatabase() AND table = ? AND active ORDER BY partition_id`, table)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(res.Rows))
	for i, r := range res.Rows {
		out[i] = AsText(r[0])
	}
	return out, nil
}

// UnadoptTable puts version back under table's name: drop the view, then RENAME, with a moment
// without the name, on every server. (EXCHANGE of the view and the table would leave, until it
// is dropped, a view of version's name reading itself, and a read of a view that reads itself
// brings ClickHouse 18.16 down.)
func (e *chEngine) UnadoptTable(ctx context.Context, table, version string) error {
	d := e.dialect
	for _, s := range []string{d.Drop(table, true), "RENAME TABLE " + d.QuoteRelation(version) + " TO " + d.QuoteRelation(table)} {
		if err := e.Exec(ctx, s); err != nil {
			return fmt.Errorf("undo adopt of %s: %w", table, err)
		}
	}
	return nil
}
