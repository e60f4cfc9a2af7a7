package sql

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
)

// A partition replace that builds its rows in a staging table beside the table it replaces into
// (ClickHouse) names it StagingPrefix(table) followed by 12 hex digits, and drops it when done. A
// process killed in between leaves it behind; whoever next owns the table (a resumed run, the
// retirement of the version) drops what is left with DropStagingTables. The names carry the
// table's own name, so the staging of one version (orders__v5__stage_…) is never another's
// (orders__v6__stage_…, orders__v50__stage_…).

// stagingDigits is how many hex digits follow StagingPrefix.
const stagingDigits = 12

// StagingPrefix is how the names of table's staging tables begin.
func StagingPrefix(table string) string { return table + "__stage_" }

// StagingTables lists the staging tables of table in the engine's current schema.
func StagingTables(ctx context.Context, e Engine, table string) ([]string, error) {
	rels, err := e.Relations(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rels {
		rest, ok := strings.CutPrefix(r.Name, StagingPrefix(table))
		if _, err := hex.DecodeString(rest); ok && !r.View && len(rest) == stagingDigits && err == nil {
			out = append(out, r.Name)
		}
	}
	return out, nil
}

// DropStagingTables drops the staging tables left of table and returns their names. The caller
// owns table: no partition replace into it is at work.
func DropStagingTables(ctx context.Context, e Engine, table string) ([]string, error) {
	if c, ok := e.(interface {
		dropStagingTables(ctx context.Context, table string) ([]string, error)
	}); ok {
		return c.dropStagingTables(ctx, table) // a cluster's: beside the local tables, on every node
	}
	left, err := StagingTables(ctx, e, table)
	if err != nil {
		return nil, fmt.Errorf("staging tables of %s: %w", table, err)
	}
	for i, name := range left {
		if err := e.DropTable(ctx, name); err != nil {
			return left[:i], fmt.Errorf("drop staging table %s: %w", name, err)
		}
	}
	return left, nil
}
