package main

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/backfill"
	"trueup/config"
	"trueup/notices"
	"trueup/rules"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// snapshot is every file under dir, by path, with its bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func keys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

var projectFiles = []string{".gitignore", "backfills/example.sql", "exposures/example.sql", "rules/example/orders_every_day.sql", "trueup.yaml"}

// The trueup.yaml init writes says how webhooks are signed as notices signs them: the Standard
// Webhooks headers, and X-Trueup-Signature only as the legacy_signature option.
func TestInitConfigNamesTheWebhookHeaders(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if code, out, errs := cli(t, "init"); code != exitOK {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "trueup.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	yaml := string(b)
	for _, h := range []string{notices.HeaderWebhookID, notices.HeaderWebhookTimestamp, notices.HeaderWebhookSignature, "Standard Webhooks"} {
		if !strings.Contains(yaml, h) {
			t.Errorf("trueup.yaml does not name %s:\n%s", h, yaml)
		}
	}
	if n := strings.Count(yaml, notices.HeaderSignature); n != 1 || !strings.Contains(yaml, "legacy_signature: true also sends the "+notices.HeaderSignature) {
		t.Errorf("trueup.yaml names %s %d times, want once, as the legacy option:\n%s", notices.HeaderSignature, n, yaml)
	}
}

// init in an empty folder writes the project, and `trueup check` there loads it and exits 0.
func TestInitEmptyFolder(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, out, errs := cli(t, "init")
	if code != exitOK {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errs)
	}
	if diff := cmp.Diff(projectFiles, keys(snapshot(t, dir))); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	for _, want := range []string{"Made a project in " + dir, "wrote trueup.yaml", "wrote rules/example/orders_every_day.sql (an example, commented out)", "trueup check"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = cli(t, "check")
	if code != exitOK || !strings.Contains(out, "0 rules, 0 passed, 0 failed") {
		t.Fatalf("check in the new project: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = cli(t, "check", "--state", "other.duckdb")
	if code != exitUsage || !strings.Contains(errs, "check: --state is for running without a trueup.yaml") {
		t.Errorf("--state in a project: exit %d: %s", code, errs)
	}
	for _, verb := range [][]string{{"backfill", "history"}, {"notice", "list"}} {
		if code, out, errs := cli(t, verb...); code != exitOK {
			t.Errorf("%v in the new project: exit %d\n%s\n%s", verb, code, out, errs)
		}
	}
}

// A second init, in a folder that holds the project (one file edited since), writes nothing,
// changes no byte, says what exists and exits 0.
func TestInitAgainKeepsEveryFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if code, _, errs := cli(t, "init"); code != exitOK {
		t.Fatalf("init: exit %d: %s", code, errs)
	}
	edited := "# mine\n" + snapshot(t, dir)["trueup.yaml"]
	if err := os.WriteFile("trueup.yaml", []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	code, out, errs := cli(t, "init", "--target", "duckdb::memory:")
	if code != exitOK {
		t.Fatalf("second init: exit %d\n%s\n%s", code, out, errs)
	}
	if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
		t.Errorf("the second init changed files (-before +after):\n%s", diff)
	}
	if !strings.HasPrefix(out, "A project exists in "+dir+": nothing written") {
		t.Errorf("stdout does not say the project exists:\n%s", out)
	}
	for _, p := range projectFiles {
		if !strings.Contains(out, "kept  "+p+" (exists)\n") {
			t.Errorf("stdout does not name %s as kept:\n%s", p, out)
		}
	}
	if !strings.Contains(out, "trueup.yaml was kept: its targets are its own") {
		t.Errorf("stdout does not say --target was not written:\n%s", out)
	}
}

// The examples, commented out in the project, are a rule, a backfill and an exposure that parse
// once the first "-- " of each line is removed.
func TestInitExamplesParseUncommented(t *testing.T) {
	files, err := config.NewProject(config.ProjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uncomment := func(text string) string {
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			if l == "--" {
				lines[i] = ""
			} else {
				lines[i] = strings.TrimPrefix(l, "-- ")
			}
		}
		return strings.Join(lines, "\n")
	}
	seen := 0
	for _, f := range files {
		text := uncomment(string(f.Data))
		switch {
		case strings.HasPrefix(f.Path, "rules/"):
			r, err := rules.Parse(f.Path, text)
			if err != nil || r.Kind != rules.Completeness || r.Table != "orders" {
				t.Errorf("%s uncommented: %v %+v", f.Path, err, r)
			}
		case strings.HasPrefix(f.Path, "backfills/"):
			b, ps := backfill.Parse(f.Path, text)
			if len(ps) > 0 || b == nil || b.Table != "orders" {
				t.Errorf("%s uncommented: %v", f.Path, ps)
			}
		case strings.HasPrefix(f.Path, "exposures/"):
			x, ps := notices.ParseExposure(f.Path, text)
			if len(ps) > 0 || x.Title != "Revenue by month" {
				t.Errorf("%s uncommented: %v", f.Path, ps)
			}
		default:
			continue
		}
		seen++
	}
	if seen != 3 {
		t.Errorf("%d examples, want 3", seen)
	}
}

// warehouse fills url with a plain table customers, a logical table orders (a view over
// orders__v1) and a plain view recent, and closes it (one process owns a DuckDB file: the
// command opens it next).
func warehouse(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	e, err := tsql.Create(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	loadDiffTable(t, e, "customers", diffRows(nil))
	loadDiffTable(t, e, "orders__v1", diffRows(nil))
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v1"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Exec(ctx, "CREATE VIEW recent AS SELECT order_id FROM customers"); err != nil {
		t.Fatal(err)
	}
	// a table adopt refuses: indexed on DuckDB (it cannot be renamed), merging rows on ClickHouse
	for _, q := range map[string][]string{
		"duckdb":     {"CREATE TABLE refunds (id BIGINT)", "CREATE INDEX refunds_id ON refunds (id)"},
		"clickhouse": {"CREATE TABLE refunds (id UInt64) ENGINE = ReplacingMergeTree ORDER BY id"},
	}[e.Info().Kind] {
		if err := e.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
}

// targetURLs are a DuckDB file's URL and, when a server is there, a fresh ClickHouse database's.
func targetURLs(t *testing.T) map[string]string {
	out := map[string]string{"duckdb": "duckdb:" + filepath.Join(t.TempDir(), "wh.duckdb")}
	if url := sqltest.ClickHouseURL(t); url != "" {
		out["clickhouse"] = url
	}
	return out
}

// init --target lists the target's logical tables, plain tables and views, names the tables to
// adopt, and writes a config whose target is that URL; check there exits 0.
func TestInitTargetListsRelations(t *testing.T) {
	for kind, url := range targetURLs(t) {
		t.Run(kind, func(t *testing.T) {
			warehouse(t, url)
			t.Chdir(t.TempDir())
			code, out, errs := cli(t, "init", "--target", url, "--dir", "proj")
			if code != exitOK {
				t.Fatalf("init: exit %d\n%s\n%s", code, out, errs)
			}
			for _, want := range []string{
				"1 logical table, 2 tables, 1 other view",
				"  logical tables (a view over NAME__vN: trueup can rebuild, swap and roll them back):\n    orders                   live v1, versions v1, 80 rows\n",
				"  tables:\n    customers\n    refunds\n  views:\n    recent\n",
				"Next:\n  cd proj\n  trueup adopt customers ",
				"  trueup check ",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "adopt orders") || strings.Contains(out, "adopt recent") || strings.Contains(out, "adopt refunds") {
				t.Errorf("init offers to adopt a logical table, a view or a table adopt refuses:\n%s", out)
			}
			c, err := config.Load(filepath.Join("proj", "trueup.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := c.TargetURL(""); got != url {
				t.Errorf("trueup.yaml's target is %s, want %s", got, url)
			}
			if code, out, errs := cli(t, "--config", filepath.Join("proj", "trueup.yaml"), "check"); code != exitOK {
				t.Errorf("check: exit %d\n%s\n%s", code, out, errs)
			}
		})
	}
}

// A DuckDB target that does not exist is refused without --create (exit 2, no file made) and
// made with it; --create is for DuckDB files only.
func TestInitCreate(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, out, errs := cli(t, "init", "--target", "duckdb:wh.duckdb")
	if code != exitUsage || !strings.Contains(errs, "there is no DuckDB file at wh.duckdb (pass --create") {
		t.Fatalf("without --create: exit %d\n%s\n%s", code, out, errs)
	}
	if files := snapshot(t, dir); len(files) != 0 {
		t.Fatalf("a refused init wrote %v", keys(files))
	}
	if url := sqltest.ClickHouseURL(t); url != "" {
		if code, _, errs := cli(t, "init", "--target", url, "--create"); code != exitUsage || !strings.Contains(errs, "--create makes a DuckDB file") {
			t.Errorf("--create with ClickHouse: exit %d: %s", code, errs)
		}
	}
	code, out, errs = cli(t, "init", "--target", "duckdb:wh.duckdb", "--create")
	if code != exitOK || !strings.Contains(out, "duckdb:wh.duckdb (duckdb ") || !strings.Contains(out, "0 logical tables, 0 tables, 0 other views") {
		t.Fatalf("with --create: exit %d\n%s\n%s", code, out, errs)
	}
	if diff := cmp.Diff(append([]string{}, ".gitignore", "backfills/example.sql", "exposures/example.sql", "rules/example/orders_every_day.sql", "trueup.yaml", "wh.duckdb"), keys(snapshot(t, dir))); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if !strings.Contains(snapshot(t, dir)["trueup.yaml"], "    url: \"duckdb:wh.duckdb\"\n") {
		t.Errorf("trueup.yaml does not name the new file beside it")
	}
	if code, out, errs := cli(t, "check"); code != exitOK {
		t.Errorf("check: exit %d\n%s\n%s", code, out, errs)
	}
}
