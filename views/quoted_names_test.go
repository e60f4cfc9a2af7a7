package views_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// quotedEngines are the engines of TestQuotedNames: DuckDB, and on ClickHouse a database whose
// name needs quoting (the views' stored definitions then read `zz-exp-views-…`.orders__v1).
func quotedEngines(t *testing.T) map[string]tsql.Engine {
	out := map[string]tsql.Engine{"duckdb": sqltest.DuckDB(t)}
	base := os.Getenv("TRUEUP_TEST_CLICKHOUSE")
	if sqltest.ClickHouseURL(t) == "" || base == "" {
		return out
	}
	ctx := context.Background()
	admin := sqltest.Open(t, base)
	b := make([]byte, 4)
	rand.Read(b)
	db := "zz-exp-views-" + hex.EncodeToString(b)
	if err := admin.Exec(ctx, "CREATE DATABASE "+admin.Dialect().Quote(db)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+admin.Dialect().Quote(db)) })
	out["clickhouse"] = sqltest.Open(t, base[:strings.LastIndexByte(base, '/')+1]+db)
	return out
}

// TestQuotedNames: logical tables whose names need quoting (order-lines, umsätze) are found,
// listed and swapped like any other, on both engines; on ClickHouse in a database whose name
// needs quoting too.
func TestQuotedNames(t *testing.T) {
	for kind, e := range quotedEngines(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			tables := []string{"order-lines", "umsätze"}
			for _, table := range tables {
				makeVersion(t, e, table, 1, 20, 0)
				makeVersion(t, e, table, 2, 20, 1)
				pointView(t, e, table, 1)
			}
			s := views.New("w", e, ledgertest.Open(t))
			found, err := views.List(ctx, "w", e)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range found {
				names = append(names, f.Name+" "+f.Live)
			}
			if got := strings.Join(names, ", "); got != "order-lines v1, umsätze v1" {
				t.Errorf("logical tables: %q, want order-lines v1, umsätze v1", got)
			}
			for _, table := range tables {
				l, err := s.Versions(ctx, table)
				if err != nil {
					t.Fatalf("versions of %s: %v", table, err)
				}
				if l.Live != 1 || len(l.Versions) != 2 {
					t.Errorf("%s: live v%d, %d versions", table, l.Live, len(l.Versions))
				}
				record(t, s, table, 2, views.StateValidated, 0)
				if _, err := s.Swap(ctx, views.SwapRequest{Table: table, To: "v2", Actor: "ann"}); err != nil {
					t.Fatalf("swap %s: %v", table, err)
				}
				if src := source(t, e, table); src != views.Physical(table, 2) {
					t.Errorf("%s reads %s, want v2", table, src)
				}
				if _, err := s.Rollback(ctx, views.RollbackRequest{Table: table, Actor: "ann"}); err != nil {
					t.Fatalf("rollback %s: %v", table, err)
				}
			}
		})
	}
}
