package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// rowsWarehouses makes orders in a DuckDB file (old) and, in each new target, orders with two
// orders more on 2026-07-10, 11005's amount changed and 12003 gone. It returns the old URL and
// the new ones by name.
func rowsWarehouses(t *testing.T) (string, map[string]string) {
	t.Helper()
	oldURL := "duckdb:" + filepath.Join(t.TempDir(), "old.duckdb")
	ordersAt(t, oldURL, nil)
	news := map[string]string{"duckdb": "duckdb:" + filepath.Join(t.TempDir(), "new.duckdb")}
	if url := sqltest.ClickHouseURL(t); url != "" {
		news["clickhouse"] = url
	}
	for _, url := range news {
		e, err := tsql.Create(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		var rows [][]any
		for _, r := range diffRows(map[string]int{"2026-07-10": 2}) {
			switch r[0].(int64) {
			case 12003:
				continue
			case 11005:
				r[2] = 105.5
			}
			rows = append(rows, r)
		}
		loadDiffTable(t, e, "orders", rows)
		e.Close()
	}
	return oldURL, news
}

// trueup diff --rows (or --format rows) prints every differing row, - for old and + for new,
// with no sample cap, and ends as a diff does: exit 1 when they differ, the counts on stderr.
func TestDiffRowsWithoutProject(t *testing.T) {
	oldURL, news := rowsWarehouses(t)
	want := []string{
		"+ order_id=10020 order_date=2026-07-10 amount=120",
		"+ order_id=10021 order_date=2026-07-10 amount=121",
		"+ order_id=11005 order_date=2026-07-11 amount=105.5",
		"- order_id=11005 order_date=2026-07-11 amount=105",
		"- order_id=12003 order_date=2026-07-12 amount=103",
	}
	for kind, newURL := range news {
		for _, flag := range []string{"--rows", "--format=rows"} {
			t.Run(kind+"_"+strings.TrimLeft(flag, "-"), func(t *testing.T) {
				emptyHere(t)
				code, out, errs := cli(t, "diff", "--old-target", oldURL, "--new-target", newURL, "--old", "orders",
					"--key", "order_id", "--partition", "order_date", "--samples", "1", flag)
				if code != exitFailed {
					t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
				}
				got := strings.Split(strings.TrimSpace(out), "\n")
				sort.Strings(got)
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("stdout (-want +got):\n%s", d)
				}
				for _, line := range []string{"rows: 2 added, 1 removed, 1 changed, 0 duplicate keys", "diff: 3 partitions differ"} {
					if !strings.Contains(errs, line) {
						t.Errorf("stderr lacks %q:\n%s", line, errs)
					}
				}
			})
		}
	}
	t.Run("refused_with_json", func(t *testing.T) {
		emptyHere(t)
		code, _, errs := cli(t, "diff", "--target", oldURL, "--old", "orders", "--new", "orders", "--key", "order_id", "--rows", "--format", "json")
		if code != exitUsage || !strings.Contains(errs, "--rows prints row lines") {
			t.Errorf("exit %d: %s", code, errs)
		}
	})
}

// --columns, --map and --where through the CLI, with two URLs and no project: in two DuckDB
// files and from DuckDB to ClickHouse; a --where that is not a condition is exit 2 saying so.
func TestDiffColumnsMapWhereWithoutProject(t *testing.T) {
	oldURL := "duckdb:" + filepath.Join(t.TempDir(), "old.duckdb")
	news := map[string]string{"duckdb": "duckdb:" + filepath.Join(t.TempDir(), "new.duckdb")}
	if url := sqltest.ClickHouseURL(t); url != "" {
		news["clickhouse"] = url
	}
	load := func(url, table, nameCol string, rows [][]any) {
		e, err := tsql.Create(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "region", Kind: tsql.TypeString},
			{Name: nameCol, Kind: tsql.TypeString}, {Name: "amount", Kind: tsql.TypeFloat}, {Name: "note", Kind: tsql.TypeString}}
		if err := e.CreateTable(context.Background(), table, cols, "", []string{"id"}); err != nil {
			t.Fatal(err)
		}
		if err := e.Insert(context.Background(), table, []string{"id", "region", nameCol, "amount", "note"}, rows); err != nil {
			t.Fatal(err)
		}
	}
	load(oldURL, "people", "name", [][]any{{int64(1), "EU", "ann", 10.0, "a"}, {int64(2), "EU", "bob", 20.0, "b"},
		{int64(3), "US", "cy", 30.0, "c"}, {int64(4), "EU", "dee", 40.0, "d"}})
	for kind, newURL := range news {
		t.Run(kind, func(t *testing.T) {
			load(newURL, "people2", "full_name", [][]any{{int64(1), "EU", "ann", 10.0, "A"}, {int64(2), "EU", "bobby", 20.0, "b"},
				{int64(3), "US", "cy", 33.0, "c"}, {int64(4), "EU", "dee", 41.0, "d"}})
			emptyHere(t)
			args := []string{"diff", "--old-target", oldURL, "--new-target", newURL, "--old", "people", "--new", "people2",
				"--key", "id", "--map", "name=full_name", "--columns", "name,amount", "--where", "region = 'EU'"}
			code, out, errs := cli(t, append(args, "--format", "json")...)
			if code != exitFailed {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
			}
			var res struct {
				Compared []string `json:"compared_columns"`
				Rows     struct{ Changed int }
				Samples  struct {
					Changed []struct {
						Key     json.RawMessage
						Columns []struct{ Column string }
					}
				}
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var changed []string
			for _, c := range res.Samples.Changed {
				var key bytes.Buffer
				json.Compact(&key, c.Key)
				changed = append(changed, key.String()+" "+c.Columns[0].Column)
			}
			// note is not compared; 3 is in the US
			if d := cmp.Diff([]string{`{"id":2} name`, `{"id":4} amount`}, changed); d != "" || res.Rows.Changed != 2 ||
				!cmp.Equal(res.Compared, []string{"id", "name", "amount"}) {
				t.Errorf("compared %v, changed (-want +got):\n%s\n%s", res.Compared, d, out)
			}

			code, _, errs = cli(t, append(args[:len(args)-1], "amount")...)
			if code != exitUsage || !strings.Contains(errs, `--where "amount" is`) || !strings.Contains(errs, "not a condition") {
				t.Errorf("--where amount: exit %d: %s", code, errs)
			}
		})
	}
}

// --columns, --map and --where give the same output and exit code through a server as locally
// (the API takes them as the flags are taken); --rows, a local stream, is refused there.
func TestDiffFlagsServerModeMatchesLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	local, served := demoDir(t), demoDir(t)
	srv := serveDemo(t, served)
	base := []string{"diff", "--old", "orders__v1", "--new", "orders__v1", "--key", "order_id", "--partition", "order_date"}
	for _, tc := range []remoteCase{
		{"where_columns_json", append(base, "--columns", "amount", "--where", "amount > 50", "--format", "json"), exitOK, "json"},
		{"map_text", append(base, "--map", "amount=amount", "--where", "amount > 50 AND order_id > 10"), exitOK, "text"},
		{"where_not_a_condition", append(base, "--where", "amount"), exitUsage, "text"},
		{"where_unknown_column", append(base, "--columns", "nope"), exitUsage, "text"},
	} {
		t.Run(tc.name, func(t *testing.T) { compareModes(t, local, srv, tc) })
	}
	code, _, errs := cli(t, append([]string{"--server", srv.url}, append(base, "--rows")...)...)
	if code != exitUsage || !strings.Contains(errs, "--rows works only locally") {
		t.Errorf("--rows through a server: exit %d: %s", code, errs)
	}
}
