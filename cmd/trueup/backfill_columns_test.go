package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trueup/sql/sqltest"
)

// A transform whose columns are not its table's is refused at the plan, on both engines, naming
// the columns: `backfill plan` and `backfill run` exit 2, and the run builds no orders__v2,
// drafts no notice and records no run (it used to build v2, draft a notice and fail every
// partition on DuckDB's Binder error).
func TestBackfillColumnMismatchIsRefused(t *testing.T) {
	t.Parallel() // long: beside the package's other long tests
	targets := map[string]string{"duckdb": ""}
	if url := sqltest.ClickHouseURL(t); url != "" {
		targets["clickhouse"] = url
	}
	for kind, url := range targets {
		t.Run(kind, func(t *testing.T) {
			var dir string
			if url == "" {
				dir = demoDir(t)
				url = "duckdb:" + filepath.Join(dir, "warehouse.duckdb")
			} else {
				dir = demoDir(t, "--target", url)
			}
			cfg := filepath.Join(dir, "trueup.yaml")
			file := filepath.Join(dir, "backfills", "fix_dedup_bug.sql")
			orig, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			header, transform, _ := strings.Cut(string(orig), "SELECT\n")
			transform = "SELECT\n" + transform
			text := func(name string) string {
				e := sqltest.Open(t, url)
				defer e.Close()
				d := e.Dialect()
				switch name {
				case "extra_column":
					return header + "SELECT * FROM orders_raw WHERE order_date >= $start AND order_date < $end\n"
				case "missing_column":
					return header + strings.Replace(transform, "\tmin(region) AS region,\n", "", 1)
				}
				return header + strings.Replace(transform, "min(customer_id) AS customer_id", d.ToText("min(customer_id)")+" AS customer_id", 1)
			}
			for _, tc := range []struct{ name, want string }{
				{"extra_column", "transform: its rows have columns orders does not: event_id, ingest_delay_days"},
				{"missing_column", "transform: its rows lack columns of orders: region"},
				{"retyped_column", "transform: column customer_id is a string ("},
			} {
				t.Run(tc.name, func(t *testing.T) {
					os.WriteFile(file, []byte(text(tc.name)), 0o644)
					defer os.WriteFile(file, orig, 0o644)
					for _, verb := range []string{"plan", "run"} {
						code, out, errs := cli(t, "--config", cfg, "backfill", verb, "fix_dedup_bug")
						refused := map[string]string{"plan": "blocked by", "run": "Backfill fix_dedup_bug is blocked"}[verb]
						if code != exitUsage || !strings.Contains(out+errs, tc.want) || !strings.Contains(errs, refused) {
							t.Errorf("backfill %s: exit %d, want 2 naming %q:\n%s%s", verb, code, tc.want, out, errs)
						}
					}
					if code, out, errs := cli(t, "--config", cfg, "notice", "list"); code != 0 || !strings.Contains(out, "No notices") {
						t.Errorf("notice list after the refused run: exit %d: %s%s", code, out, errs)
					}
					if code, _, errs := cli(t, "--config", cfg, "backfill", "status", "fix_dedup_bug"); code != exitUsage || !strings.Contains(errs, "has never run") {
						t.Errorf("status after the refused run: exit %d: %s", code, errs)
					}
					e := sqltest.Open(t, url)
					defer e.Close()
					rels, err := e.Relations(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range rels {
						if strings.Contains(r.Name, "__v2") {
							t.Errorf("the refused run created %s", r.Name)
						}
					}
				})
			}
		})
	}
}
