package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"trueup/fault"
	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// exec runs statements on e, failing the test on the first error.
func exec(t *testing.T, e tsql.Engine, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if err := e.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// A diff the engine cannot run (a query failing at run time) is an invalid diff saying the
// engine's cause, not a difference: exit 2, never 1.
func TestEngineErrorIsInvalid(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		if e.Info().Kind == "duckdb" {
			exec(t, e, "CREATE TABLE good AS SELECT 1 AS id, 5 AS v",
				"CREATE VIEW bad AS SELECT 1 AS id, CAST('x' || id AS INTEGER) AS v FROM (SELECT 1 AS id)")
		} else {
			exec(t, e, "CREATE TABLE good (id Int64, v UInt8) ENGINE = Memory",
				"INSERT INTO good SELECT toInt64(1), toUInt8(5)",
				"CREATE VIEW bad AS SELECT id, throwIf(v > 0) AS v FROM good")
		}
		_, err := reconcile.Diff(context.Background(), reconcile.Spec{
			Old: reconcile.Side{Engine: e, Relation: "good"}, New: reconcile.Side{Engine: e, Relation: "bad"},
			Key: []string{"id"}})
		if err == nil {
			t.Fatal("no error")
		}
		if k := fault.Of(err); k != fault.Invalid {
			t.Errorf("kind %v, want invalid: %v", k, err)
		}
		if !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("not errors.Is invalid: %v", err)
		}
		if msg := fault.Message(err); !strings.Contains(msg, "bad") {
			t.Errorf("message does not name the relation: %s", msg)
		}
	})
}
