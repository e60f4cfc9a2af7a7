package sql_test

import (
	dbsql "database/sql"

	"context"
	_ "github.com/ClickHouse/clickhouse-go/v2"
	"strings"
	"testing"
	"time"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestAdoptTableKeepsRowsUnderTheName adopts a plain table on each engine: the name reads the
// same rows through a view over <table>__v1, and undoing it puts the table back.
func TestAdoptTableKeepsRowsUnderTheName(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate}}
		if err := e.CreateTable(ctx, "sales", cols, "d", []string{"id"}); err != nil {
			t.Fatal(err)
		}
		rows := [][]any{{int64(1), time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)}, {int64(2), time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)}}
		if err := e.Insert(ctx, "sales", []string{"id", "d"}, rows); err != nil {
			t.Fatal(err)
		}
		// a view that reads the table keeps reading it, through the adopt's view
		if err := e.Exec(ctx, "CREATE VIEW sales_july AS SELECT * FROM sales WHERE d < '2026-08-01'"); err != nil {
			t.Fatal(err)
		}
		if why, err := e.AdoptRefusal(ctx, "sales"); err != nil || why != "" {
			t.Fatalf("refusal %q, %v", why, err)
		}
		if err := e.AdoptTable(ctx, "sales", "sales__v1"); err != nil {
			t.Fatal(err)
		}
		if src, err := e.ViewSource(ctx, "sales"); err != nil || src != "sales__v1" {
			t.Fatalf("view source %q, %v", src, err)
		}
		count := func(rel string) int64 {
			res, err := e.Query(ctx, "SELECT count(*) FROM "+rel)
			if err != nil {
				t.Fatal(err)
			}
			return tsql.AsInt64(res.Rows[0][0])
		}
		if n := count("sales"); n != 2 {
			t.Errorf("sales has %d rows after the adopt, want 2", n)
		}
		if n := count("sales_july"); n != 1 {
			t.Errorf("the view sales_july has %d rows after the adopt, want 1", n)
		}
		if err := e.UnadoptTable(ctx, "sales", "sales__v1"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.ViewSource(ctx, "sales"); err == nil {
			t.Error("sales is still a view after the undo")
		}
		if n := count("sales"); n != 2 {
			t.Errorf("sales has %d rows after the undo, want 2", n)
		}
	})
}

// TestAdoptRefusals names what a rename would break, per engine, and changes nothing.
func TestAdoptRefusals(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		engine string
		setup  []string
		want   string
	}{
		{"duckdb", []string{"CREATE TABLE sales (id INTEGER, d DATE)", "CREATE INDEX sales_d ON sales (d)"}, "index sales_d"},
		{"duckdb", []string{"CREATE TABLE sales (id INTEGER PRIMARY KEY)", "CREATE TABLE lines (sale INTEGER REFERENCES sales (id))"}, "foreign key of lines"},
		{"clickhouse", []string{"CREATE TABLE sales (id Int32) ENGINE = Null"}, "engine Null"},
		{"clickhouse", []string{"CREATE TABLE sales (id Int32, d Date) ENGINE = MergeTree ORDER BY id",
			"CREATE MATERIALIZED VIEW sales_copy ENGINE = Memory AS SELECT id FROM sales"}, "materialized view sales_copy reads sales"},
		{"clickhouse", []string{"CREATE TABLE sales (id Int32, d Date) ENGINE = MergeTree ORDER BY id",
			"CREATE TABLE raw (id Int32, d Date) ENGINE = MergeTree ORDER BY id",
			"CREATE MATERIALIZED VIEW raw_to_sales TO sales AS SELECT id, d FROM raw"}, "materialized view raw_to_sales writes TO sales"},
		{"clickhouse", []string{"CREATE TABLE sales (id Int32, d Date, ver UInt32) ENGINE = ReplacingMergeTree(ver) PARTITION BY toYYYYMM(d) ORDER BY id"},
			"engine ReplacingMergeTree, whose readers query it with FINAL, and a view ignores FINAL"},
		{"clickhouse", []string{"CREATE TABLE sales (id Int32, d Date, sign Int8) ENGINE = CollapsingMergeTree(sign) ORDER BY id"},
			"engine CollapsingMergeTree, whose readers"},
	} {
		t.Run(tc.engine+"/"+tc.want, func(t *testing.T) {
			var e tsql.Engine
			if tc.engine == "duckdb" {
				e = sqltest.DuckDB(t)
			} else {
				if e = sqltest.ClickHouse(t); e == nil {
					t.Skip("no ClickHouse server")
				}
			}
			for _, q := range tc.setup {
				if err := e.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			why, err := e.AdoptRefusal(ctx, "sales")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(why, tc.want) {
				t.Errorf("refusal %q, want it to say %q", why, tc.want)
			}
		})
	}
}

// TestAdoptRefusesADictionarySource: the test server's dictionary (scripts/clickhouse/
// dictionaries.xml) loads from trueup_dict.source; adopting that table is refused.
func TestAdoptRefusesADictionarySource(t *testing.T) {
	base := sqltest.ClickHouseURL(t) // skips without a server
	if base == "" {
		return
	}
	ctx := context.Background()
	admin := sqltest.Open(t, base)
	for _, q := range []string{"CREATE DATABASE IF NOT EXISTS trueup_dict",
		"CREATE TABLE IF NOT EXISTS trueup_dict.source (id UInt64, name String) ENGINE = MergeTree ORDER BY id",
		// a lazily loaded dictionary is in system.dictionaries once something asked for it
		"SYSTEM RELOAD DICTIONARY trueup_test_dict"} {
		if err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	e := sqltest.Open(t, base[:strings.LastIndexByte(base, '/')+1]+"trueup_dict")
	why, err := e.AdoptRefusal(ctx, "source")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(why, "the dictionary trueup_test_dict loads from source") {
		t.Errorf("refusal %q", why)
	}
}

// TestFinishAdoptCarriesLateRows: an Atomic adopt that stopped after its EXCHANGE leaves the old
// table (sales__adopting) beside the view; finishing it carries the rows written there after the
// first copy into sales__v1 and drops it. The statements run on 18.16 too, so the state is made
// by hand here.
func TestFinishAdoptCarriesLateRows(t *testing.T) {
	e := sqltest.ClickHouse(t)
	if e == nil {
		return
	}
	ctx := context.Background()
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "d", Kind: tsql.TypeDate}}
	day := func(n int) time.Time { return time.Date(2026, 7, n, 0, 0, 0, 0, time.UTC) }
	for name, rows := range map[string][][]any{
		"sales__v1":       {{int64(1), day(1)}, {int64(2), day(2)}},
		"sales__adopting": {{int64(1), day(1)}, {int64(2), day(2)}, {int64(3), day(2)}},
	} {
		if err := e.CreateTable(ctx, name, cols, "d", []string{"id"}); err != nil {
			t.Fatal(err)
		}
		if err := e.Insert(ctx, name, []string{"id", "d"}, rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "sales", Table: "sales__v1"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.FinishAdopt(ctx, "sales", "sales__v1"); err != nil {
		t.Fatal(err)
	}
	res, err := e.Query(ctx, "SELECT count(*) FROM sales")
	if err != nil || tsql.AsInt64(res.Rows[0][0]) != 3 {
		t.Errorf("sales after finishing: %v, %v", res, err)
	}
	if err := e.FinishAdopt(ctx, "sales", "sales__v1"); err != nil {
		t.Errorf("finishing again: %v", err)
	}
	rels, _ := e.Relations(ctx)
	for _, r := range rels {
		if r.Name == "sales__adopting" {
			t.Error("the old table is still there")
		}
	}
}

// TestAdoptLeavesTheTableWhenNoViewCanBeMade: ClickHouse 18.16 makes a view over a table with a
// LowCardinality column only behind a setting, which trueup sends unless the URL turns it off.
// Turned off, the adopt is refused before the rename, and readers keep the table under its name
// with its rows. As trueup connects by default the table is adopted.
func TestAdoptLeavesTheTableWhenNoViewCanBeMade(t *testing.T) {
	url := sqltest.ClickHouseURL(t)
	if url == "" {
		return
	}
	ctx := context.Background()
	raw, err := dbsql.Open("clickhouse", url+"?allow_experimental_low_cardinality_type=1")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, "CREATE TABLE sales (id UInt64, d Date, region LowCardinality(String)) ENGINE = MergeTree PARTITION BY toYYYYMM(d) ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	e := sqltest.Open(t, url)
	rows := [][]any{{int64(1), time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), "eu"}, {int64(2), time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC), "us"}}
	if err := e.Insert(ctx, "sales", []string{"id", "d", "region"}, rows); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, "CREATE TABLE sales2 AS sales"); err != nil {
		t.Fatal(err)
	}
	if err := e.AdoptTable(ctx, "sales2", "sales2__v1"); err != nil {
		t.Fatalf("adopt on %s: %v", e.Info().Version, err)
	}
	if e.Info().Version.AtLeast(19, 1) {
		return
	}
	off, err := tsql.Open(ctx, url+"?allow_experimental_low_cardinality_type=0")
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	err = off.AdoptTable(ctx, "sales", "sales__v1")
	if err == nil || !strings.Contains(err.Error(), "cannot make a view over sales") {
		t.Fatalf("adopt on 18.16: %v, want a refusal before the rename", err)
	}
	if _, err := e.ViewSource(ctx, "sales"); err == nil {
		t.Error("sales became a view")
	}
	res, err := e.Query(ctx, "SELECT count() FROM sales")
	if err != nil || tsql.AsInt64(res.Rows[0][0]) != 2 {
		t.Fatalf("sales after the refused adopt: %v, %v", res, err)
	}
	res, err = e.Query(ctx, "SELECT name FROM system.tables WHERE database = currentDatabase() AND name LIKE 'sales%' AND name NOT LIKE 'sales2%' ORDER BY name")
	if err != nil || len(res.Rows) != 1 {
		t.Errorf("tables after the refused adopt: %v, %v; want sales alone", res, err)
	}
}
