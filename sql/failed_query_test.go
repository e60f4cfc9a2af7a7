package sql_test

import (
	"context"
	"testing"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestFailedQueryLeavesEngineUsable: a statement the server rejects does not break the ones
// after it (ClickHouse 18.16 misreads the next packet on a connection that saw an exception),
// and a statement ending in a comment can be checked.
func TestFailedQueryLeavesEngineUsable(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		for i := 0; i < 20; i++ {
			if err := e.Check(ctx, "SELECT 1 +"); err == nil {
				t.Fatal("a syntax error was accepted")
			}
			res, err := e.Query(ctx, "SELECT 41 + 1")
			if err != nil {
				t.Fatalf("round %d: the query after a failed one: %v", i, err)
			}
			if got := tsql.AsInt64(res.Rows[0][0]); got != 42 {
				t.Fatalf("round %d: got %d, want 42", i, got)
			}
		}
		if err := e.Check(ctx, "SELECT 1 AS x -- a comment ends it"); err != nil {
			t.Errorf("a SELECT ending in a comment: %v", err)
		}
	})
}
