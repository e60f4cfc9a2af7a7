package sql_test

import (
	"context"
	"testing"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// A described comparison is a condition in each engine (DuckDB BOOLEAN, ClickHouse UInt8, also
// Nullable); a number or text is not.
func TestColumnCondition(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		for _, tc := range []struct {
			expr string
			want bool
		}{
			{"1 < 2", true},
			{"NULL = 1", true},
			{"1 < 2 AND NOT (3 = 4)", true},
			{"1.5", false},
			{"'yes'", false},
		} {
			cols, err := e.Describe(context.Background(), "SELECT ("+tc.expr+") AS c")
			if err != nil {
				t.Fatalf("%s: %v", tc.expr, err)
			}
			if got := cols[0].Condition(); got != tc.want {
				t.Errorf("%s is %s: condition %v, want %v", tc.expr, cols[0].Type, got, tc.want)
			}
		}
	})
}
