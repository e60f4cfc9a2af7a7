package sql_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	tsql "trueup/sql"
)

// TestDuckDBDaysAreUTCDays: on a host whose zone is not UTC, a TIMESTAMPTZ column's partitions
// are still UTC days, as the windows trueup binds and ClickHouse's partitions are; before, they
// were the host's days, so a backfill on a host in Berlin fixed parts of two days. The zone is
// read once per process, so the test runs itself again with TZ=Europe/Berlin.
func TestDuckDBDaysAreUTCDays(t *testing.T) {
	if os.Getenv("TRUEUP_TZ_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestDuckDBDaysAreUTCDays$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TRUEUP_TZ_CHILD=1", "TZ=Europe/Berlin")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("with TZ=Europe/Berlin: %v\n%s", err, out)
		}
		return
	}
	ctx := context.Background()
	e, err := tsql.Create(ctx, "duckdb:"+filepath.Join(t.TempDir(), "w.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// 23:30 UTC on July 1 is 01:30 on July 2 in Berlin
	if err := e.Exec(ctx, "CREATE TABLE ev AS SELECT 1 AS id, TIMESTAMPTZ '2026-07-01 23:30:00+00' AS ts"); err != nil {
		t.Fatal(err)
	}
	res, err := e.Query(ctx, "SELECT current_setting('TimeZone')")
	if err != nil {
		t.Fatal(err)
	}
	if zone := tsql.AsText(res.Rows[0][0]); zone != "UTC" {
		t.Errorf("the target's time zone is %s, want UTC", zone)
	}
	parts, err := tsql.MeasureRows(ctx, e, "ev", "ts", "day", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := parts[time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)]; !ok || len(parts) != 1 {
		t.Errorf("partitions %v: want the UTC day 2026-07-01", parts)
	}
	// and no statement can switch it back
	if err := e.Exec(ctx, "SET TimeZone = 'Europe/Berlin'"); err == nil {
		t.Errorf("SET TimeZone went through: the configuration is not locked")
	}
}
