package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trueup/ledger"
	tsql "trueup/sql"
	"trueup/views"
)

// buildVersions adds v2 of orders and daily_revenue to the demo warehouse, recorded as one
// backfill run in the given state, as the backfill runner would leave them.
func buildVersions(t *testing.T, dir string, n int, state string) {
	t.Helper()
	ctx := context.Background()
	e, err := tsql.Create(ctx, "duckdb:"+filepath.Join(dir, "warehouse.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	l, err := ledger.Open(ctx, filepath.Join(dir, "trueup-state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	store := views.Store{L: l}
	for _, table := range []string{"orders", "daily_revenue"} {
		name := views.Physical(table, n)
		if err := e.Exec(ctx, "CREATE TABLE "+name+" AS SELECT * FROM "+table+"__v1 ORDER BY ALL LIMIT 10"); err != nil {
			t.Fatal(err)
		}
		rows, sum, err := views.Fingerprint(ctx, e, name)
		if err != nil {
			t.Fatal(err)
		}
		v := views.Version{Target: "warehouse", Table: table, N: n, State: state, BuiltBy: "ann", Backfill: "fix_dedup_bug",
			RunID: int64(n), Rows: rows, Checksum: sum, CreatedAt: time.Now()}
		if err := store.Put(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
}

func TestVersionsSwapRollbackCLI(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--config", cfg}, args...)...)
	}

	code, out, errs := run("versions", "orders", "--format", "json")
	if code != 0 {
		t.Fatalf("versions: exit %d: %s", code, errs)
	}
	var vs []map[string]any
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		t.Fatalf("versions json: %v\n%s", err, out)
	}
	if len(vs) != 1 || vs[0]["version"] != "v1" || vs[0]["state"] != "live" || vs[0]["live"] != true {
		t.Errorf("demo versions: %s", out)
	}
	if !strings.Contains(errs, "recovery: warehouse orders: v1 adopted as live") {
		t.Errorf("first start-up did not report adoption: %s", errs)
	}

	buildVersions(t, dir, 2, views.StateValidated)
	buildVersions(t, dir, 3, views.StateValidationFailed)

	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"missing_to", []string{"swap", "orders"}, exitUsage, "--to is required"},
		{"no_table", []string{"swap", "--to", "v2"}, exitUsage, "usage: trueup swap TABLE"},
		{"nonexistent_version", []string{"swap", "orders", "--to", "v9"}, exitUsage, "orders has no version v9"},
		{"other_tables_version", []string{"swap", "orders", "--to", "daily_revenue__v2"}, exitUsage, "is a version of daily_revenue"},
		{"failed_validation", []string{"swap", "orders", "--to", "v3"}, exitFailed, "an approver may override"},
		{"nothing_to_roll_back", []string{"rollback", "orders"}, exitFailed, "nothing to roll back"},
		{"rollback_no_table", []string{"rollback", "nope"}, exitUsage, "nope is not a logical table"},
		{"already_live", []string{"swap", "orders", "--to", "v1"}, exitFailed, "orders v1 is already live"},
		{"retire_live", []string{"versions", "orders", "--retire", "v1"}, exitFailed, "orders v1 is live"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := run(tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.msg) {
				t.Errorf("exit %d, want %d; stderr: %s (want %q)", code, tc.code, errs, tc.msg)
			}
		})
	}

	code, out, errs = run("swap", "orders", "--to", "v2", "--dry-run")
	if code != 0 || !strings.Contains(out, "orders v1 → v2") || !strings.Contains(out, "daily_revenue v1 → v2") {
		t.Errorf("dry run: exit %d: %s %s", code, out, errs)
	}
	code, out, errs = run("swap", "orders", "--to", "v2", "--reason", "fix the dedup bug", "--format", "json")
	if code != 0 {
		t.Fatalf("swap: exit %d: %s", code, errs)
	}
	var p views.Publish
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("swap json: %v\n%s", err, out)
	}
	if p.State != views.PublishDone || p.Summary() != "orders v1 → v2, daily_revenue v1 → v2" || p.Reason != "fix the dedup bug" {
		t.Errorf("swap: %+v", p)
	}
	code, out, errs = run("versions", "daily_revenue")
	if code != 0 || !strings.Contains(out, "live v2, rollback to v1") {
		t.Errorf("versions after swap: exit %d: %s %s", code, out, errs)
	}
	code, out, errs = run("rollback", "daily_revenue", "--reason", "numbers look off")
	if code != 0 || !strings.Contains(out, "rolled back daily_revenue v2 → v1, orders v2 → v1") {
		t.Errorf("rollback: exit %d: %s %s", code, out, errs)
	}
	code, out, errs = run("swap", "orders", "--to", "v3", "--override", "finance signed off the drift")
	if code != 0 || !strings.Contains(out, "published past a failed validation by") {
		t.Errorf("override: exit %d: %s %s", code, out, errs)
	}
	code, _, errs = run("versions", "orders", "--retire", "v2", "--reason", "superseded")
	if code != 0 {
		t.Errorf("retire v2: exit %d: %s", code, errs)
	}
	code, _, errs = run("versions", "orders", "--retire", "v1")
	if code != exitFailed || !strings.Contains(errs, "rollback target") {
		t.Errorf("retire the rollback target: exit %d: %s", code, errs)
	}
	// serve answers for the same versions.
	body := serveAndGet(t, cfg, "/api/v1/tables/orders")
	if !strings.Contains(body, `"live":"v3"`) || !strings.Contains(body, `"rollback_target":"v1"`) {
		t.Errorf("serve: %s", body)
	}
}

func TestViewsCLIErrorCodes(t *testing.T) {
	conflict := &views.ConflictError{Table: "orders", Holder: "ann", Kind: "swap", SwapID: 3}
	if code := exitCode(&strings.Builder{}, conflict); code != exitFailed {
		t.Errorf("conflict exits %d, want 1", code)
	}
}
