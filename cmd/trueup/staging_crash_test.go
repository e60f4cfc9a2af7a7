package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestStagingTablesLeftByAKill (ClickHouse, where a partition replace stages its rows in a table
// of its own): the staging table a process killed mid-replace leaves beside the version it was
// building is dropped by the resume of that run, and by the retirement of that version; another
// version's staging table is left alone. The resumed run has the rows a clean run gives.
func TestStagingTablesLeftByAKill(t *testing.T) {
	url := sqltest.ClickHouseURL(t)
	if url == "" {
		t.Skip("staging tables are ClickHouse's")
	}
	ctx := context.Background()
	dir := demoDir(t, "--target", url)
	cfg := filepath.Join(dir, "trueup.yaml")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--config", cfg}, args...)...)
	}
	e, err := tsql.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	leave := func(name, like string) {
		t.Helper()
		if err := e.Exec(ctx, "CREATE TABLE "+name+" AS "+like); err != nil {
			t.Fatal(err)
		}
		if err := e.Exec(ctx, "INSERT INTO "+name+" SELECT * FROM "+like+" LIMIT 7"); err != nil {
			t.Fatal(err)
		}
	}
	staging := func() []string {
		t.Helper()
		res, err := e.Query(ctx, "SELECT name FROM system.tables WHERE database = currentDatabase() AND position(name, '__stage_') > 0 ORDER BY name")
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, r := range res.Rows {
			out = append(out, tsql.AsText(r[0]))
		}
		return out
	}

	killedAt(t, "backfill.partition-done:2", "--config", cfg, "backfill", "run", "fix_dedup_bug")
	leave("orders__v2__stage_0123456789ab", "orders__v2")  // what the kill left, mid-replace
	leave("orders__v20__stage_abcdefabcdef", "orders__v1") // another version's: not this run's to drop
	code, out, errs := run("backfill", "resume", "fix_dedup_bug")
	if code != 0 || !strings.Contains(out, "run 1 of fix_dedup_bug: validated, v2") {
		t.Fatalf("resume: exit %d: %s%s", code, out, errs)
	}
	if diff := cmp.Diff([]string{"orders__v20__stage_abcdefabcdef"}, staging()); diff != "" {
		t.Errorf("staging tables after the resume (-want +got):\n%s", diff)
	}
	code, out, errs = run("backfill", "run", "fix_dedup_bug", "--new-version")
	if code != 0 || !strings.Contains(out, "run 2 of fix_dedup_bug: validated, v3") {
		t.Fatalf("a clean run: exit %d: %s%s", code, out, errs)
	}
	sameRows(t, url, 2, 3, "orders", "daily_revenue", "customer_ltv", "region_summary")

	leave("orders__v2__stage_fedcba987654", "orders__v2")
	if code, _, errs = run("versions", "orders", "--retire", "v2", "--reason", "superseded"); code != 0 {
		t.Fatalf("retire v2: exit %d: %s", code, errs)
	}
	if diff := cmp.Diff([]string{"orders__v20__stage_abcdefabcdef"}, staging()); diff != "" {
		t.Errorf("staging tables after retiring v2 (-want +got):\n%s", diff)
	}
}
