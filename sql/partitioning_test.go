package sql

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/internal/golden"
)

func TestChPartitioning(t *testing.T) {
	for _, tc := range []struct {
		name, key string
		typ       Type
		want      Partitioning
		refused   bool
	}{
		{"none", "", TypeDate, Partitioning{Whole: true}, false},
		{"empty_tuple", "tuple()", TypeDate, Partitioning{Whole: true}, false},
		{"yyyymm", "toYYYYMM(d)", TypeDate, Partitioning{Key: "toYYYYMM(d)", Grain: "month"}, false},
		{"start_of_month", "toStartOfMonth(d)", TypeTimestamp, Partitioning{Key: "toStartOfMonth(d)", Grain: "month"}, false},
		{"monday", "toMonday(d)", TypeDate, Partitioning{Key: "toMonday(d)", Grain: "week"}, false},
		{"raw_date", "d", TypeDate, Partitioning{Key: "d", Grain: "day"}, false},
		{"raw_quoted", "`d`", TypeDate, Partitioning{Key: "`d`", Grain: "day"}, false},
		{"raw_timestamp", "d", TypeTimestamp, Partitioning{Key: "d"}, false},
		{"tuple_with_region", "(toYYYYMM(d), region)", TypeDate, Partitioning{Key: "(toYYYYMM(d), region)", Grain: "month"}, false},
		{"tuple_function", "tuple(region, toMonday(d))", TypeDate, Partitioning{Key: "tuple(region, toMonday(d))", Grain: "week"}, false},
		{"tuple_finest", "(toYYYYMM(d), toMonday(d))", TypeDate, Partitioning{Key: "(toYYYYMM(d), toMonday(d))", Grain: "week"}, false},
		{"hash", "intHash32(id) % 10", TypeDate, Partitioning{}, true},
		{"other_column", "toYYYYMM(shipped)", TypeDate, Partitioning{}, true},
		{"region_only", "region", TypeDate, Partitioning{}, true},
		{"tuple_hash_of_column", "(toYYYYMM(d), intHash32(d) % 3)", TypeDate, Partitioning{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chPartitioning("orders__v1", tc.key, "d", tc.typ)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "table orders__v1 is partitioned by "+tc.key+", ") || strings.Contains(err.Error(), "\n") {
					t.Errorf("want a one-line refusal naming %s, got %v", tc.key, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestChPartitionKeyFromEngineFull reads the key from engine_full as 18.16 writes it (the texts
// below are what it showed), for servers without system.tables.partition_key.
func TestChPartitionKeyFromEngineFull(t *testing.T) {
	for full, want := range map[string]string{
		"MergeTree() PARTITION BY (toYYYYMM(d), region) ORDER BY x SETTINGS index_granularity = 8192": "(toYYYYMM(d), region)",
		"MergeTree PARTITION BY toMonday(d) ORDER BY x SETTINGS index_granularity = 8192":             "toMonday(d)",
		"MergeTree PARTITION BY toYYYYMM(`my d`) ORDER BY x SETTINGS index_granularity = 8192":        "toYYYYMM(`my d`)",
		"MergeTree PARTITION BY intHash32(x) % 10 ORDER BY x SETTINGS index_granularity = 8192":       "intHash32(x) % 10",
		"MergeTree ORDER BY x SETTINGS index_granularity = 8192":                                      "",
		"MergeTree(d, x, 8192)": "toYYYYMM(d)",
		"ReplicatedMergeTree('/clickhouse/t', 'r1', d, (x, y), 8192)": "toYYYYMM(d)",
		"Memory": "",
	} {
		if got := chPartitionKey(full); got != want {
			t.Errorf("%s: %q, want %q", full, got, want)
		}
	}
}

// TestPartitionKeyQueriesGolden pins the statements that read a partition key: the engine_full
// one runs only on servers older than the test server.
func TestPartitionKeyQueriesGolden(t *testing.T) {
	probe, key, full, _ := chDialect{}.partitionKeyQueries("orders__v1")
	size, _ := chDialect{}.sizeQuery("orders__v1")
	golden.Check(t, "partition_key.clickhouse.golden.sql", strings.Join([]string{probe, key, full, size}, ";\n")+";\n")
}

func TestTruncGrainWeek(t *testing.T) {
	for in, want := range map[string]string{"2026-07-06": "2026-07-06", "2026-07-12": "2026-07-06", "2026-07-13": "2026-07-13", "2026-07-01": "2026-06-29"} {
		d, _ := time.Parse("2006-01-02", in)
		if got := TruncGrain(d, "week").Format("2006-01-02"); got != want {
			t.Errorf("week of %s: %s, want %s", in, got, want)
		}
	}
}

// TestEngineFullAgreesWithPartitionKey reads each table's key both ways on the test server: the
// engine_full fallback (older servers) finds what system.tables.partition_key says.
func TestEngineFullAgreesWithPartitionKey(t *testing.T) {
	base := os.Getenv("TRUEUP_TEST_CLICKHOUSE")
	if base == "" {
		t.Skip("TRUEUP_TEST_CLICKHOUSE is not set")
	}
	ctx := context.Background()
	e, err := Open(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	db := "t_pk_" + randomSuffix()
	if err := e.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	defer e.Exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+db)
	ch := e.(*chEngine)
	for i, clause := range []string{"ENGINE = MergeTree PARTITION BY toYYYYMM(d) ORDER BY x", "ENGINE = MergeTree() PARTITION BY (toMonday(`my d`), x) ORDER BY x",
		"ENGINE = MergeTree ORDER BY x", "ENGINE = MergeTree PARTITION BY intHash32(x) % 10 ORDER BY x SETTINGS index_granularity = 1024", "ENGINE = MergeTree(d, x, 8192)"} {
		table := fmt.Sprintf("%s.t%d", db, i)
		if err := e.Exec(ctx, "CREATE TABLE "+table+" (d Date, `my d` Date, x UInt64) "+clause); err != nil {
			t.Fatal(err)
		}
		probe, keyQ, fullQ, args := ch.dialect.partitionKeyQueries(table)
		res, err := e.Query(ctx, probe)
		if err != nil || AsInt64(res.Rows[0][0]) != 1 {
			t.Fatalf("the test server has no system.tables.partition_key: %v %v", res, err)
		}
		key, err := ch.oneText(ctx, table, keyQ, args)
		if err != nil {
			t.Fatal(err)
		}
		full, err := ch.oneText(ctx, table, fullQ, args)
		if err != nil {
			t.Fatal(err)
		}
		if got := chPartitionKey(full); got != key {
			t.Errorf("%s: engine_full %q gives %q, partition_key is %q", clause, full, got, key)
		}
	}
}

func TestCoarserAndNests(t *testing.T) {
	for _, tc := range []struct {
		p              Partitioning
		grain          string
		coarser, nests bool
	}{
		{Partitioning{Grain: "month"}, "day", true, true},
		{Partitioning{Grain: "month"}, "month", false, true},
		{Partitioning{Grain: "week"}, "day", true, true},
		{Partitioning{Grain: "week"}, "hour", true, true},
		{Partitioning{Grain: "week"}, "month", false, false},
		{Partitioning{Grain: "day"}, "month", false, true},
		{Partitioning{Grain: "day"}, "hour", true, true},
		{Partitioning{}, "hour", false, true},
		{Partitioning{Whole: true}, "month", true, true},
	} {
		if got := tc.p.Coarser(tc.grain); got != tc.coarser {
			t.Errorf("%+v coarser than %s: %v", tc.p, tc.grain, got)
		}
		if got := tc.p.Nests(tc.grain); got != tc.nests {
			t.Errorf("%+v nests %s: %v", tc.p, tc.grain, got)
		}
	}
}
