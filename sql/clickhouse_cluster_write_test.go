package sql_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tsql "trueup/sql"
)

// monthTable creates version 1 of a logical table m on the cluster as a team's own might be:
// local tables partitioned by month (toYYYYMM), a Distributed table sharded by cityHash64(id),
// filled with n rows over July and August 2026 through it.
func monthTable(t *testing.T, e tsql.Engine, c tsql.Cluster, n int) {
	t.Helper()
	ctx := context.Background()
	engine := "MergeTree()"
	if e.Info().Cluster.Replicas > 1 {
		engine = "ReplicatedMergeTree('/clickhouse/tables/{shard}/' || currentDatabase() || '/m__v1_local', '{replica}')"
	}
	err := c.OnNodes(ctx, func(ctx context.Context, _ tsql.Node, ne tsql.Engine) error {
		res, err := ne.Query(ctx, "SELECT currentDatabase()")
		if err != nil {
			return err
		}
		db := tsql.AsText(res.Rows[0][0])
		eng := strings.ReplaceAll(engine, "' || currentDatabase() || '", db)
		for _, s := range []string{
			"CREATE TABLE m__v1_local (id UInt64, d Date, x Int64) ENGINE = " + eng + " PARTITION BY toYYYYMM(d) ORDER BY id",
			"CREATE TABLE m__v1 AS m__v1_local ENGINE = Distributed(trueup, " + db + ", m__v1_local, cityHash64(id))",
			"CREATE VIEW m AS SELECT * FROM m__v1",
		} {
			if err := ne.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	for i := range n {
		rows = append(rows, []any{uint64(i), time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i%60), int64(i)})
	}
	insertSynced(t, e, c, "m__v1", []string{"id", "d", "x"}, rows)
}

func insertSynced(t *testing.T, e tsql.Engine, c tsql.Cluster, table string, cols []string, rows [][]any) {
	t.Helper()
	ctx := context.Background()
	if err := e.Insert(ctx, table, cols, rows); err != nil {
		t.Fatal(err)
	}
	syncLocal(t, e, c, table+"_local")
}

func syncLocal(t *testing.T, e tsql.Engine, c tsql.Cluster, local string) {
	t.Helper()
	if e.Info().Cluster.Replicas < 2 {
		return
	}
	if err := c.OnNodes(context.Background(), func(ctx context.Context, _ tsql.Node, ne tsql.Engine) error {
		return ne.Exec(ctx, "SYSTEM SYNC REPLICA "+ne.Dialect().Quote(local))
	}); err != nil {
		t.Fatal(err)
	}
}

// nodeSums is, by node, the rows and a checksum of a local table there.
func nodeSums(t *testing.T, c tsql.Cluster, local string) map[string]string {
	t.Helper()
	var mu sync.Mutex
	out := map[string]string{}
	err := c.OnNodes(context.Background(), func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
		res, err := ne.Query(ctx, "SELECT count(), sum(cityHash64(id, d, x)) FROM "+ne.Dialect().Quote(local))
		if err != nil {
			return err
		}
		mu.Lock()
		out[fmt.Sprintf("shard %d replica %d", n.Shard, n.Replica)] = fmt.Sprintf("%d rows, sum %d", tsql.AsInt64(res.Rows[0][0]), tsql.AsUint64(res.Rows[0][1]))
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// expectLike builds table like m__v1 from query in one pass through its Distributed table (the
// server routes each row by the sharding key) and checks that every node's local table of got
// equals its local table of it.
func expectLike(t *testing.T, e tsql.Engine, c tsql.Cluster, got, table, query string) {
	t.Helper()
	ctx := context.Background()
	if err := e.DropTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateTableLike(ctx, table, "m__v1"); err != nil {
		t.Fatal(err)
	}
	if err := e.Exec(ctx, "INSERT INTO "+table+" "+query); err != nil {
		t.Fatal(err)
	}
	syncLocal(t, e, c, table+"_local")
	want, have := nodeSums(t, c, table+"_local"), nodeSums(t, c, got+"_local")
	if len(want) != len(e.Info().Cluster.Nodes) {
		t.Fatalf("checksums of %d nodes", len(want))
	}
	for n, w := range want {
		if have[n] != w {
			t.Errorf("%s, %s: %s, want %s", got, n, have[n], w)
		}
	}
}

// TestClusterBackfillWrites: on a cluster, a version made like a month-partitioned live one
// has its local tables on every node with the live one's keys; carrying over the partitions
// outside two days, replacing those two days (inside a month partition) shard by shard, and then
// catch-up carries (a replaced day, a merged one) leave every node's local table equal to a
// single-pass build routed by the Distributed table; the version drops on every node.
func TestClusterBackfillWrites(t *testing.T) {
	e, c := cluster(t)
	ctx := context.Background()
	monthTable(t, e, c, 1200)

	// The Distributed table is partitioned as its local tables are.
	if p, err := e.Partitioning(ctx, "m__v1", "d"); err != nil || p.Grain != "month" || p.Whole {
		t.Errorf("partitioning of m__v1: %+v %v, want months", p, err)
	}
	if err := e.CreateTableLike(ctx, "m__v2", "m__v1"); err != nil {
		t.Fatal(err)
	}
	err := c.OnNodes(ctx, func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
		res, err := ne.Query(ctx, "SELECT engine, partition_key FROM system.tables WHERE database = currentDatabase() AND name = 'm__v2_local'")
		if err != nil {
			return err
		}
		want := "MergeTree"
		if e.Info().Cluster.Replicas > 1 {
			want = "ReplicatedMergeTree"
		}
		if len(res.Rows) != 1 || tsql.AsText(res.Rows[0][0]) != want || tsql.AsText(res.Rows[0][1]) != "toYYYYMM(d)" {
			return fmt.Errorf("m__v2_local: %v, want %s by toYYYYMM(d)", res.Rows, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	day := func(d int) tsql.Window {
		return tsql.Window{Column: "d", Type: tsql.TypeDate, Start: time.Date(2026, 7, d, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 7, d+1, 0, 0, 0, 0, time.UTC)}
	}
	scope := []tsql.Window{day(10), day(11)}
	if err := e.CopyPartitions(ctx, "m__v2", "m__v1", "d", scope); err != nil {
		t.Fatal(err)
	}
	var writes []tsql.PartitionWrite
	for _, w := range scope {
		q, args, err := tsql.Expand(e.Dialect(), "SELECT id, d, x * 10 AS x FROM m WHERE d >= $start AND d < $end", w.Params())
		if err != nil {
			t.Fatal(err)
		}
		writes = append(writes, tsql.PartitionWrite{Window: w, Query: q, Args: args})
	}
	rows, err := e.ReplacePartitions(ctx, "m__v2", writes)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0] != 20 || rows[1] != 20 {
		t.Errorf("rows replaced: %v, want 20 a day", rows)
	}
	// Rerunning gives the same result.
	if _, err := e.ReplacePartitions(ctx, "m__v2", writes); err != nil {
		t.Fatal(err)
	}
	const fixed = "SELECT id, d, if(d >= toDate('2026-07-10') AND d < toDate('2026-07-12'), x * 10, x) AS x FROM m__v1"
	expectLike(t, e, c, "m__v2", "m_clean", fixed)

	// Catch-up: live gained a row on a day outside the scope (carried by replace) and one on
	// another (carried by merge).
	insertSynced(t, e, c, "m__v1", []string{"id", "d", "x"}, [][]any{
		{uint64(10001), time.Date(2026, 8, 5, 0, 0, 0, 0, time.UTC), int64(1)},
		{uint64(10002), time.Date(2026, 7, 20, 0, 0, 0, 0, time.UTC), int64(2)},
	})
	aug5 := tsql.Window{Column: "d", Type: tsql.TypeDate, Start: time.Date(2026, 8, 5, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 8, 6, 0, 0, 0, 0, time.UTC)}
	if err := e.CarryPartitions(ctx, []tsql.Carry{
		{Into: "m__v2", From: "m__v1", Window: aug5},
		{Into: "m__v2", From: "m__v1", Window: day(20), Merge: true},
	}); err != nil {
		t.Fatal(err)
	}
	expectLike(t, e, c, "m__v2", "m_clean", fixed)

	// Staging tables are gone from every node, and the version drops on every node.
	left, err := tsql.DropStagingTables(ctx, e, "m__v2")
	if err != nil || len(left) != 0 {
		t.Errorf("staging tables left: %v %v", left, err)
	}
	if err := e.DropTable(ctx, "m__v2"); err != nil {
		t.Fatal(err)
	}
	err = c.OnNodes(ctx, func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
		for _, name := range []string{"m__v2", "m__v2_local"} {
			if _, err := ne.Columns(ctx, name); err == nil {
				return fmt.Errorf("%s is left", name)
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
