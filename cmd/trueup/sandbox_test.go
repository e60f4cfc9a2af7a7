package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Whoever can commit a rule, backfill or exposure file must not get the server's files,
// credentials or network: SQL that reads outside the warehouse is refused when the file loads,
// at its path:line, exit 2, and nothing runs — the secret in trueup.yaml is never shown.
func TestUserSQLCannotReachOutside(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	conf, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	secret := "webhook-secret-7f3a"
	if err := os.WriteFile(cfg, append(conf, []byte("# "+secret+"\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	lit := "'" + cfg + "'"
	for _, tc := range []struct {
		name, file, text, cmd, want string
		line                        int
	}{
		{"rule_read_text", "rules/orders/leak.sql", "-- kind: custom\n-- table: orders\nSELECT content\nFROM read_text(" + lit + ")\n",
			"check", "read_text()", 4},
		{"rule_read_blob", "rules/orders/leak.sql", "-- kind: custom\n-- table: orders\nSELECT * FROM read_blob(" + lit + ")\n",
			"check", "read_blob()", 3},
		{"rule_read_csv", "rules/orders/leak.sql", "-- kind: custom\n-- table: orders\nSELECT * FROM orders\nWHERE order_id IN (SELECT 1 FROM read_csv(" + lit + "))\n",
			"check", "read_csv()", 4},
		{"rule_glob", "rules/orders/leak.sql", "-- kind: custom\n-- table: orders\nSELECT * FROM glob('/*')\n", "check", "glob()", 3},
		{"rule_file_as_table", "rules/orders/leak.sql", "-- kind: custom\n-- table: orders\nSELECT * FROM " + lit + "\n", "check", "reads the file", 3},
		{"rule_url", "rules/orders/leak.sql", "-- kind: custom\n-- table: orders\nSELECT * FROM url('http://169.254.169.254/', 'TSV', 's String')\n",
			"check", "url()", 3},
		{"rule_measure", "rules/orders/leak.sql", "-- kind: distribution\n-- table: orders\n-- partition: order_date\n-- measure: sum(length(file('users.xml')))\n",
			"check", "file()", 4},
		{"rule_reference", "rules/orders/leak.sql", "-- kind: totals\n-- table: orders\n-- partition: order_date\n-- measure: sum(amount)\n-- reference: SELECT order_date, sum(amount) FROM remote('10.0.0.1', default.orders) GROUP BY 1\n",
			"check", "remote()", 5},
		{"backfill_transform", "backfills/leak.sql", "-- table: orders\n-- partition: order_date\n-- grain: day\n-- reason: bug\nSELECT * FROM orders_raw\nWHERE order_date >= $start AND order_date < $end\nUNION ALL SELECT * FROM read_csv(" + lit + ")\n",
			"backfill leak", "read_csv()", 7},
		{"exposure", "exposures/leak.sql", "-- title: Leak\n-- tables: daily_revenue\nSELECT content FROM read_text(" + lit + "), daily_revenue\n",
			"backfill fix_dedup_bug", "read_text()", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(path)
			args := []string{"--config", cfg, "check"}
			if name, ok := strings.CutPrefix(tc.cmd, "backfill "); ok {
				args = []string{"--config", cfg, "backfill", "plan", name}
			}
			code, out, errs := cli(t, args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, exitUsage, out, errs)
			}
			want := tc.file + ":" + itoa(tc.line) + ":"
			if !strings.Contains(errs, want) || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "outside the warehouse") {
				t.Errorf("stderr %q: want %s naming %s", errs, want, tc.want)
			}
			if strings.Contains(out+errs, secret) {
				t.Errorf("the secret was shown:\n%s\n%s", out, errs)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A DuckDB URL whose file does not exist is an error naming the path, and no empty warehouse is
// created in its place: in the config, as --target, and as a diff's --new-target.
func TestMissingDuckDBFileIsAnError(t *testing.T) {
	dir := demoDir(t)
	cfg := filepath.Join(dir, "trueup.yaml")
	missing := filepath.Join(dir, "warehuose.duckdb")
	for _, tc := range []struct {
		name string
		args []string
		cfg  func()
	}{
		{"target_flag", []string{"--config", cfg, "--target", "duckdb:" + missing, "check"}, nil},
		{"new_target", []string{"--config", cfg, "diff", "--old", "orders__v1", "--new", "orders__v1", "--key", "order_id", "--new-target", "duckdb:" + missing}, nil},
		{"config", []string{"--config", cfg, "check"}, func() {
			b, _ := os.ReadFile(cfg)
			os.WriteFile(cfg, []byte(strings.Replace(string(b), "duckdb:warehouse.duckdb", "duckdb:warehuose.duckdb", 1)), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg != nil {
				tc.cfg()
			}
			code, out, errs := cli(t, tc.args...)
			if code != exitUsage || !strings.Contains(errs, missing) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
				t.Errorf("exit %d, want %d and one line naming %s\n%s\n%s", code, exitUsage, missing, out, errs)
			}
			if _, err := os.Stat(missing); err == nil {
				t.Fatalf("%s was created", missing)
			}
		})
	}
}
