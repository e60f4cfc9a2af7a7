package sql_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"trueup/fault"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// The payloads of the hardening issue: SQL a rule, transform or report author could write to read
// the server's files or reach the network. Each must be refused when the file is loaded.
func TestReadOnlySelectRefusesOutside(t *testing.T) {
	for _, tc := range []struct {
		name, sql, want string
		line            int
	}{
		{"read_text", "SELECT content\nFROM read_text('/etc/trueup.yaml')", "read_text()", 1},
		{"read_blob", "SELECT * FROM read_blob('/etc/passwd')", "read_blob()", 0},
		{"read_csv", "SELECT * FROM orders\nJOIN\n  read_csv('/etc/passwd') AS p ON true", "read_csv()", 2},
		{"read_csv_auto_upper", "SELECT * FROM READ_CSV_AUTO('/etc/passwd')", "READ_CSV_AUTO()", 0},
		{"glob", "SELECT file FROM glob('/*')", "glob()", 0},
		{"quoted_name", `SELECT * FROM "read_text"('/etc/passwd')`, "read_text()", 0},
		{"qualified", "SELECT * FROM main.read_parquet('/x.parquet')", "read_parquet()", 0},
		{"comment_between", "SELECT * FROM read_json /* x */ ('/x.json')", "read_json()", 0},
		{"in_subquery", "SELECT (SELECT count(*) FROM read_text('/etc/hosts')) AS n", "read_text()", 0},
		{"query_function", "SELECT * FROM query('SELECT 1')", "query()", 0},
		{"file_as_table", "SELECT * FROM '/etc/passwd'", "reads the file '/etc/passwd'", 0},
		{"file_as_join", "SELECT * FROM orders o JOIN 'x.csv' c ON true", "reads the file 'x.csv'", 0},
		{"url", "SELECT * FROM url('http://169.254.169.254/latest/meta-data/', 'TSV', 's String')", "url()", 0},
		{"file_ch", "SELECT * FROM file('users.xml', 'TSV', 's String')", "file()", 0},
		{"remote", "SELECT * FROM remote('10.0.0.1:9000', default.users)", "remote()", 0},
		{"remote_secure", "SELECT * FROM remoteSecure('10.0.0.1:9440', default.t)", "remoteSecure()", 0},
		{"mysql", "SELECT * FROM mysql('db:3306', 'd', 't', 'u', 'p')", "mysql()", 0},
		{"jdbc", "SELECT * FROM jdbc('jdbc:x', 't')", "jdbc()", 0},
		{"s3", "SELECT * FROM s3('https://bucket/x.csv')", "s3()", 0},
		{"hdfs", "SELECT * FROM hdfs('hdfs://x/y', 'TSV', 's String')", "hdfs()", 0},
		{"in_cte", "WITH x AS (SELECT * FROM url('http://x', CSV, 'a Int8')) SELECT * FROM x", "url()", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tsql.ReadOnlySelect(tc.sql)
			if err == nil {
				t.Fatalf("accepted %q", tc.sql)
			}
			if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "outside the warehouse") {
				t.Errorf("error %q: want fault.ErrInvalid naming %s", err, tc.want)
			}
			if got := tsql.LineOf(err); got != tc.line {
				t.Errorf("line %d, want %d", got, tc.line)
			}
		})
	}
}

// What must stay accepted: warehouse reads whose words look like the refused ones.
func TestReadOnlySelectKeepsWarehouseSQL(t *testing.T) {
	for _, sql := range []string{
		"SELECT extract(year FROM order_date) AS y, trim(both ' ' FROM name) FROM orders",
		"SELECT substring(s FROM 'a') FROM t",
		"SELECT file, url, query FROM documents", // columns named like the functions
		"SELECT * FROM range(10) t(i)",
		"SELECT * FROM numbers(10)",
		"SELECT 'read_text(1)' AS s FROM orders",
		"SELECT $$a;b$$ AS s FROM orders",          // dollar-quoted: one statement
		"SELECT $tag$ x; y $ z $tag$ AS s FROM t;", // tagged, with a lone $ inside
		"SELECT * FROM orders WHERE d >= $start AND d < $end",
	} {
		if _, err := tsql.ReadOnlySelect(sql); err != nil {
			t.Errorf("%q: %v", sql, err)
		}
	}
	if _, err := tsql.ReadOnlySelect("SELECT 1; SELECT $$x$$"); err == nil {
		t.Error("two statements around a dollar quote were accepted")
	}
	if _, err := tsql.ReadOnlySelect("SELECT $$ DROP $$ AS s"); err != nil {
		t.Errorf("a write word inside a dollar quote: %v", err)
	}
	if err := tsql.Inside("sum(length(file('users.xml')))"); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("an expression calling file(): %v", err)
	}
}

// The engines refuse the same payloads at run time, for SQL that reaches them without the load
// check (defence in depth): nothing is returned, no file is read and no request leaves the server.
func TestEngineReadsOnlyTheWarehouse(t *testing.T) {
	ctx := context.Background()
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("s3cret-token\n"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	web := "http://" + ln.Addr().String() + "/x"

	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		if err := e.CreateTable(ctx, "sandbox_t", []tsql.Column{{Name: "i", Type: "INTEGER", Kind: tsql.TypeInt}}, "", nil); err != nil {
			t.Fatal(err)
		}
		lit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
		var reads, writes []string
		if e.Info().Kind == "duckdb" {
			reads = []string{
				"SELECT content FROM read_text(" + lit(secret) + ")",
				"SELECT content FROM read_blob(" + lit(secret) + ")",
				"SELECT * FROM read_csv(" + lit(secret) + ")",
				"SELECT * FROM " + lit(secret),
				"SELECT * FROM glob(" + lit(filepath.Dir(secret)+"/*") + ")",
				"SELECT * FROM read_csv(" + lit(web) + ")",
			}
			writes = []string{
				"ATTACH " + lit(filepath.Join(filepath.Dir(secret), "other.duckdb")) + " AS o",
				"COPY sandbox_t TO " + lit(filepath.Join(filepath.Dir(secret), "out.csv")),
				"SET enable_external_access = true",
				"RESET lock_configuration",
				"INSTALL httpfs",
				"LOAD httpfs",
			}
		} else {
			reads = []string{
				"SELECT * FROM url(" + lit(web) + ", 'TSV', 's String')",
				"SELECT * FROM file('trueup-server-token', 'TSV', 's String')",
				"SELECT * FROM remote('127.0.0.1:1', default.sandbox_t)",
				"SELECT * FROM sandbox_t WHERE i IN (SELECT toInt32(length(s)) FROM url(" + lit(web) + ", 'TSV', 's String'))",
			}
		}
		for _, q := range reads {
			res, err := e.Query(ctx, q)
			if err == nil {
				t.Errorf("%s: returned %v", q, res.Rows)
				continue
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%s: the error shows the secret: %v", q, err)
			}
			if err := e.Check(ctx, q); err == nil {
				t.Errorf("%s: Check accepted it", q)
			}
		}
		for _, q := range writes {
			if err := e.Exec(ctx, q); err == nil {
				t.Errorf("%s: ran", q)
			}
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(secret), "out.csv")); err == nil {
			t.Error("COPY wrote a file")
		}
		if n := hits.Load(); n != 0 {
			t.Errorf("%d requests reached the web server", n)
		}
		// the warehouse itself still reads and writes
		if err := e.Insert(ctx, "sandbox_t", []string{"i"}, [][]any{{int64(1)}}); err != nil {
			t.Fatal(err)
		}
		res, err := e.Query(ctx, "SELECT count(*) FROM sandbox_t")
		if err != nil || tsql.AsInt64(res.Rows[0][0]) != 1 {
			t.Fatalf("warehouse read: %v %v", res, err)
		}
	})
}

// A DuckDB URL names a file that exists: a typo is an error naming the path, and no empty
// warehouse appears in its place. Create makes one where that is the point.
func TestOpenMissingDuckDBFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warehuose.duckdb")
	for _, url := range []string{"duckdb:" + path, "duckdb:" + path + "?enable_external_access=true"} {
		e, err := tsql.Open(ctx, url)
		if err == nil {
			e.Close()
			t.Fatalf("%s opened", url)
		}
		if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v", url, err)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("%s: created %s", url, path)
		}
	}
	e, err := tsql.Create(ctx, "duckdb:"+path)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	e, err = tsql.Open(ctx, "duckdb:"+path)
	if err != nil {
		t.Fatalf("open after create: %v", err)
	}
	e.Close()
}
