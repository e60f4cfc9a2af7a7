package sql

import (
	"strings"
	"testing"

	"trueup/internal/golden"
)

// TestAdoptAtomicGolden pins the statements of an adopt in an Atomic database (ClickHouse 20.5
// and later), which the 18.16 test server cannot run: the copy, the view and the EXCHANGE.
func TestAdoptAtomicGolden(t *testing.T) {
	d := chDialect{version: parseVersion("24.8.4.13")}
	stmts := adoptAtomicStatements(d, "sales", "sales__v1", []string{"202607", "202608"})
	stmts = append(stmts, replacePartitionsFrom(d, "sales__v1", "sales"+adoptingSuffix, []string{"202607", "202608"})...)
	stmts = append(stmts, d.Drop("sales"+adoptingSuffix, false))
	golden.Check(t, "adopt.clickhouse-atomic.golden.sql", strings.Join(stmts, ";\n")+";\n")
}
