package sql_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/fault"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// dayHashes is each day's portable hash sum and row count in table.
func dayHashes(t *testing.T, e tsql.Engine, table string) map[string]string {
	t.Helper()
	ctx := context.Background()
	cols, err := e.Columns(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	d := e.Dialect()
	res, err := e.Query(ctx, "SELECT toString(d), "+d.HashSum(d.RowHash(cols, tsql.HashOptions{Portable: true}))+", count() FROM "+d.QuoteRelation(table)+" GROUP BY d")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range res.Rows {
		out[tsql.AsText(r[0])] = fmt.Sprintf("%d/%d", tsql.AsUint64(r[1]), tsql.AsInt64(r[2]))
	}
	return out
}

// TestClickHouseCoarsePartitions: on the real server, the partition key is read for each layout
// a table may have, and windows of days replace only their days' rows in partitions holding
// other days, which stay byte-identical; a copy that leaves windows out carries every other day.
func TestClickHouseCoarsePartitions(t *testing.T) {
	e := sqltest.ClickHouse(t)
	if e == nil {
		t.Skip("partition keys are ClickHouse's")
	}
	ctx := context.Background()
	keys := []struct {
		name, clause string
		want         tsql.Partitioning
	}{
		{"month", "PARTITION BY toYYYYMM(d)", tsql.Partitioning{Key: "toYYYYMM(d)", Grain: "month"}},
		{"start_of_month", "PARTITION BY toStartOfMonth(d)", tsql.Partitioning{Key: "toStartOfMonth(d)", Grain: "month"}},
		{"monday", "PARTITION BY toMonday(d)", tsql.Partitioning{Key: "toMonday(d)", Grain: "week"}},
		{"raw", "PARTITION BY d", tsql.Partitioning{Key: "d", Grain: "day"}},
		{"tuple", "PARTITION BY (toYYYYMM(d), region)", tsql.Partitioning{Key: "(toYYYYMM(d), region)", Grain: "month"}},
		{"none", "", tsql.Partitioning{Whole: true, Rows: 620}},
	}
	for _, k := range keys {
		t.Run(k.name, func(t *testing.T) {
			src, dst := "src_"+k.name, "dst_"+k.name
			// 62 days × 10 rows (July and August), in two regions
			if err := e.Exec(ctx, "CREATE TABLE "+src+" (id UInt64, d Date, region String, amount Float64) ENGINE = MergeTree "+k.clause+" ORDER BY id"); err != nil {
				t.Fatal(err)
			}
			if err := e.Exec(ctx, "INSERT INTO "+src+" (id, d, region, amount) SELECT number, toDate('2026-07-01') + intDiv(number, 10), if(number % 2 = 0, 'eu', 'us'), number * 1.5 FROM system.numbers LIMIT 620"); err != nil {
				t.Fatal(err)
			}
			p, err := e.Partitioning(ctx, src, "d")
			if err != nil {
				t.Fatal(err)
			}
			p.Bytes = 0
			if diff := cmp.Diff(k.want, p); diff != "" {
				t.Errorf("partitioning (-want +got):\n%s", diff)
			}
			before := dayHashes(t, e, src)

			// carry over all but 07-10..07-18, then rebuild those nine days (twice: a rerun)
			var ws []tsql.Window
			var writes []tsql.PartitionWrite
			for i := 0; i < 9; i++ {
				w := tsql.Window{Column: "d", Type: tsql.TypeDate, Start: day("2026-07-10").AddDate(0, 0, i), End: day("2026-07-11").AddDate(0, 0, i)}
				ws = append(ws, w)
				q, args, err := tsql.Expand(e.Dialect(), "SELECT id, d, region, amount * 2 AS amount FROM "+src+" WHERE d >= $start AND d < $end AND id % 10 != 0", w.Params())
				if err != nil {
					t.Fatal(err)
				}
				writes = append(writes, tsql.PartitionWrite{Window: w, Query: q, Args: args})
			}
			if err := e.CreateTableLike(ctx, dst, src); err != nil {
				t.Fatal(err)
			}
			if err := e.CopyPartitions(ctx, dst, src, "d", ws); err != nil {
				t.Fatal(err)
			}
			carried := dayHashes(t, e, dst)
			if len(carried) != 62-9 {
				t.Errorf("carried %d days, want 53", len(carried))
			}
			if k.name == "tuple" {
				// As a process killed between the replaces of one unit leaves it: July's eu
				// partition rebuilt, July's us one not yet. The replaces below rebuild from there.
				for _, q := range []string{
					"CREATE TABLE half AS " + dst,
					"INSERT INTO half SELECT * FROM " + dst + " WHERE region = 'eu' AND toYYYYMM(d) = 202607 AND NOT (d >= '2026-07-10' AND d <= '2026-07-18')",
					"INSERT INTO half SELECT id, d, region, amount * 2 FROM " + src + " WHERE region = 'eu' AND d >= '2026-07-10' AND d <= '2026-07-18' AND id % 10 != 0",
				} {
					if err := e.Exec(ctx, q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
				res, err := e.Query(ctx, "SELECT DISTINCT _partition_id FROM half")
				if err != nil || len(res.Rows) != 1 {
					t.Fatalf("the partition of July's eu rows: %v %v", res, err)
				}
				if err := e.Exec(ctx, "ALTER TABLE "+dst+" REPLACE PARTITION ID '"+tsql.AsText(res.Rows[0][0])+"' FROM half"); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 2; i++ {
				rows, err := e.ReplacePartitions(ctx, dst, writes)
				if err != nil {
					t.Fatal(err)
				}
				if !cmp.Equal(rows, []int64{9, 9, 9, 9, 9, 9, 9, 9, 9}) {
					t.Errorf("rows per day: %v, want 9 each", rows)
				}
			}
			after := dayHashes(t, e, dst)
			for day, h := range before {
				scoped := day >= "2026-07-10" && day <= "2026-07-18"
				if scoped && (h == after[day] || after[day] == "" || carried[day] != "") {
					t.Errorf("%s: not rebuilt (live %s, carried %q, now %s)", day, h, carried[day], after[day])
				}
				if !scoped && h != after[day] {
					t.Errorf("%s: live %s, now %s: a day outside the windows changed", day, h, after[day])
				}
			}
		})
	}

	t.Run("refused_keys", func(t *testing.T) {
		for name, clause := range map[string]string{"hash": "intHash32(id) % 10", "other_column": "toYYYYMM(shipped)"} {
			if err := e.Exec(ctx, "CREATE TABLE refused_"+name+" (id UInt64, d Date, shipped Date) ENGINE = MergeTree PARTITION BY "+clause+" ORDER BY id"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Partitioning(ctx, "refused_"+name, "d"); err == nil {
				t.Errorf("%s: partitioned by %s: no refusal", name, clause)
			} else if want := "is partitioned by " + clause + ", "; !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want it to name the key", name, err)
			}
		}
	})
}

// TestClickHousePartitioningOfATableWithoutParts: a Log or Memory table (adopt takes them) has
// no partitions to replace: Partitioning says so, and a backfill's plan is blocked with it (the
// run failed on "Unknown identifier: _partition_id").
func TestClickHousePartitioningOfATableWithoutParts(t *testing.T) {
	e := sqltest.ClickHouse(t)
	if e == nil {
		t.Skip("engines are ClickHouse's")
	}
	for _, engine := range []string{"Memory", "Log"} {
		table := "no_parts_" + strings.ToLower(engine)
		if err := e.Exec(context.Background(), "CREATE TABLE "+table+" (id UInt64, d Date) ENGINE = "+engine); err != nil {
			t.Fatal(err)
		}
		_, err := e.Partitioning(context.Background(), table, "d")
		if fault.Of(err) != fault.Invalid || !strings.Contains(err.Error(), table+" has the engine "+engine+", which has no partitions to replace: trueup backfills MergeTree tables") {
			t.Errorf("%s: %v (%v)", engine, err, fault.Of(err))
		}
	}
}
