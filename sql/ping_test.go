package sql_test

import (
	"context"
	"testing"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestPing: an engine that answers pings; one whose pool is closed says so.
func TestPing(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		if err := e.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.Close()
		if err := e.Ping(context.Background()); err == nil {
			t.Error("a closed engine answered the ping")
		}
	})
}
