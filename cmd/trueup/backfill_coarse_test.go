package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trueup/backfill"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// salesProject writes a project over a fresh ClickHouse database holding sales_raw (July and
// August, 10 rows a day) and the live sales__v1, PARTITION BY clause, which lacks every tenth
// row; its backfill fix_sales rebuilds the days of scope. It returns the config's path and the
// database's URL.
func salesProject(t *testing.T, clause, scope, extraConfig string) (string, string) {
	t.Helper()
	url := sqltest.ClickHouseURL(t)
	if url == "" {
		t.Skip("partition keys are ClickHouse's")
	}
	ctx := context.Background()
	e, err := tsql.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, q := range []string{
		"CREATE TABLE sales_raw (id UInt64, d Date, region String, amount Float64) ENGINE = MergeTree ORDER BY id",
		"INSERT INTO sales_raw (id, d, region, amount) SELECT number, toDate('2026-07-01') + intDiv(number, 10), if(number % 2 = 0, 'eu', 'us'), number * 1.25 FROM system.numbers LIMIT 620",
		"CREATE TABLE sales__v1 (id UInt64, d Date, region String, amount Float64) ENGINE = MergeTree " + clause + " ORDER BY id",
		"INSERT INTO sales__v1 (id, d, region, amount) SELECT id, d, region, amount FROM sales_raw WHERE id % 10 != 3",
		"CREATE VIEW sales AS SELECT * FROM sales__v1",
	} {
		if err := e.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "trueup.yaml")
	write := func(path, text string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(cfg, "targets:\n  warehouse:\n    url: "+url+"\n"+extraConfig)
	write(filepath.Join(dir, "backfills", "fix_sales.sql"), `-- table: sales
-- partition: d
-- grain: day
-- key: id
-- reason: bug
-- objective: The load dropped every tenth sale.
-- scope: `+scope+`
-- expect: inside scope rows +5..15%, sum(amount) +0..20%; outside scope identical
SELECT id, d, region, amount FROM sales_raw WHERE d >= $start AND d < $end
`)
	return cfg, url
}

// dayChecksums is each day's portable hash sum and row count in rel.
func dayChecksums(t *testing.T, url, rel string) map[string]string {
	t.Helper()
	ctx := context.Background()
	e, err := tsql.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cols, err := e.Columns(ctx, rel)
	if err != nil {
		t.Fatal(err)
	}
	d := e.Dialect()
	res, err := e.Query(ctx, "SELECT toString(d), "+d.HashSum(d.RowHash(cols, tsql.HashOptions{Portable: true}))+", count() FROM "+rel+" GROUP BY d")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range res.Rows {
		out[tsql.AsText(r[0])] = fmt.Sprintf("%d/%d", tsql.AsUint64(r[1]), tsql.AsInt64(r[2]))
	}
	return out
}

// TestBackfillMonthPartitions (ClickHouse): a day-scope backfill of a table PARTITION BY
// toYYYYMM over two months: the plan states the month partitions; killed with SIGKILL once
// July's days are checkpointed (all at once: one unit), the run resumes with August's and ends
// as a clean run does; every day outside the scope is byte-identical to live, every day inside it
// is the transform's.
func TestBackfillMonthPartitions(t *testing.T) {
	cfg, url := salesProject(t, "PARTITION BY toYYYYMM(d)", "2026-07-25..2026-08-05", "")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--config", cfg}, args...)...)
	}
	code, out, errs := run("backfill", "plan", "fix_sales")
	want := "  Partitions   12 days in 2 month partitions: 2026-07 (7 days rebuilt, 24 carried from live), 2026-08 (5 days rebuilt, 26 carried from live)\n"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("plan: exit %d, want the line %q:\n%s%s", code, want, out, errs)
	}

	killedAt(t, "backfill.partition-done:1", "--config", cfg, "backfill", "run", "fix_sales")
	var st backfill.Status
	_, out, _ = run("backfill", "status", "fix_sales", "--format", "json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status: %v: %s", err, out)
	}
	states := map[string]string{}
	for _, p := range st.Partitions {
		states[p.Partition] = p.State
	}
	for day, state := range states {
		if july := day < "2026-08-01"; july != (state == backfill.PartDone) {
			t.Errorf("after the kill between months: %s is %s, want July's done and August's pending", day, state)
		}
	}
	if st.State != backfill.RunInterrupted || st.PartitionsDone != 7 {
		t.Errorf("after the kill: %s, %d done, want interrupted, 7 done", st.State, st.PartitionsDone)
	}
	code, out, errs = run("backfill", "resume", "fix_sales")
	if code != 0 || !strings.Contains(out, "run 1 of fix_sales: validated, v2") {
		t.Fatalf("resume: exit %d: %s%s", code, out, errs)
	}
	code, out, errs = run("backfill", "run", "fix_sales", "--new-version")
	if code != 0 || !strings.Contains(out, "run 2 of fix_sales: validated, v3") {
		t.Fatalf("a clean run: exit %d: %s%s", code, out, errs)
	}
	live, resumed, clean, raw := dayChecksums(t, url, "sales__v1"), dayChecksums(t, url, "sales__v2"), dayChecksums(t, url, "sales__v3"), dayChecksums(t, url, "sales_raw")
	for day := range raw {
		inScope := day >= "2026-07-25" && day <= "2026-08-05"
		switch {
		case resumed[day] != clean[day]:
			t.Errorf("%s: the resumed run has %s, the clean one %s", day, resumed[day], clean[day])
		case inScope && resumed[day] != raw[day]:
			t.Errorf("%s: %s, want the transform's %s", day, resumed[day], raw[day])
		case !inScope && resumed[day] != live[day]:
			t.Errorf("%s: %s, want live's %s byte-identical", day, resumed[day], live[day])
		}
	}
}

// TestBackfillPartitionKeyRefused: a key the days cannot be placed in is refused by plan and
// run alike, exit 2, with a line naming the key, and nothing is written.
func TestBackfillPartitionKeyRefused(t *testing.T) {
	cfg, url := salesProject(t, "PARTITION BY intHash32(id) % 10", "2026-07-10..2026-07-18", "")
	want := "table sales__v1 is partitioned by intHash32(id) % 10, which is not d or toYYYYMM"
	for _, verb := range []string{"plan", "run"} {
		code, out, errs := cli(t, "--config", cfg, "backfill", verb, "fix_sales")
		if code != exitUsage || !strings.Contains(out+errs, want) {
			t.Errorf("backfill %s: exit %d, want %d and %q:\n%s%s", verb, code, exitUsage, want, out, errs)
		}
	}
	e, err := tsql.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rels, err := e.Relations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) != 3 {
		t.Errorf("after the refusals the database holds %v, want sales, sales__v1 and sales_raw", rels)
	}
}

// TestBackfillWholeTableRewrite: a table with no PARTITION BY larger than
// backfill.full_rewrite_rows is rebuilt whole only with --allow-full-rewrite; the plan says so.
func TestBackfillWholeTableRewrite(t *testing.T) {
	cfg, url := salesProject(t, "", "2026-07-10..2026-07-18", "backfill:\n  full_rewrite_rows: 100\n")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--config", cfg}, args...)...)
	}
	code, out, errs := run("backfill", "plan", "fix_sales")
	for _, want := range []string{"  Partitions   9 days in 1 partition, the whole table (sales__v1 has no PARTITION BY): a whole-table rebuild, 558 rows",
		"sales__v1 has no PARTITION BY: a run rewrites all of its 558 rows"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("plan: exit %d, lacks %q:\n%s%s", code, want, out, errs)
		}
	}
	// unasked: refused alike locally and through a server, exit 2, nothing written
	srv := serveDemo(t, filepath.Dir(cfg))
	for _, mode := range [][]string{nil, {"--server", srv.url}} {
		code, out, errs = cli(t, append(append([]string{"--config", cfg}, mode...), "backfill", "run", "fix_sales")...)
		if code != exitUsage || !strings.Contains(errs, "sales has no PARTITION BY and 558 rows") || !strings.Contains(errs, "run it allowing a full rewrite (--allow-full-rewrite") {
			t.Errorf("run unasked %v: exit %d, want %d:\n%s%s", mode, code, exitUsage, out, errs)
		}
	}
	code, out, errs = cli(t, "--config", cfg, "--server", srv.url, "backfill", "run", "fix_sales", "--allow-full-rewrite")
	if code != 0 || !strings.Contains(out, "run 1 of fix_sales: validated, v2") {
		t.Fatalf("run --allow-full-rewrite through the server: exit %d: %s%s", code, out, errs)
	}
	code, out, errs = run("backfill", "run", "fix_sales", "--allow-full-rewrite", "--new-version")
	if code != 0 || !strings.Contains(out, "run 2 of fix_sales: validated, v3") {
		t.Fatalf("run --allow-full-rewrite: exit %d: %s%s", code, out, errs)
	}
	live, remote, local := dayChecksums(t, url, "sales__v1"), dayChecksums(t, url, "sales__v2"), dayChecksums(t, url, "sales__v3")
	for day := range live {
		if inScope := day >= "2026-07-10" && day <= "2026-07-18"; inScope == (live[day] == local[day]) || remote[day] != local[day] {
			t.Errorf("%s: live %s, v2 %s, v3 %s (in scope: %v)", day, live[day], remote[day], local[day], inScope)
		}
	}
}
