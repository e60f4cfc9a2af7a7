package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"trueup/reconcile"
	"trueup/rules"
	tsql "trueup/sql"
)

// benchCluster measures, on a ClickHouse cluster of 2 shards, `trueup check` of the 20-rule set
// and `trueup diff` identical and sparse over orders laid out as trueup lays out a logical table
// there (a local table per node, a Distributed table over them sharded by order_id, the view
// orders on every node), each against the same hand-written SQL on the Distributed tables, in the
// same run. The cluster is TRUEUP_BENCH_CLUSTER when set; else the benchmark starts one with
// scripts/clickhouse-cluster.sh for its own run and stops it after (so four idle servers do not
// share the cores with the other benchmarks); without the script it skips.
func benchCluster(ctx context.Context, b *env) error {
	url := os.Getenv("TRUEUP_BENCH_CLUSTER")
	if url == "" {
		script := "scripts/clickhouse-cluster.sh"
		if _, err := os.Stat(script); err != nil {
			fmt.Println("cluster: skipped (TRUEUP_BENCH_CLUSTER is not set and scripts/clickhouse-cluster.sh is not here)")
			return nil
		}
		dir := filepath.Join(b.dir, "cluster")
		out, err := exec.Command(script, "start", dir).Output()
		if err != nil {
			fmt.Printf("cluster: skipped (starting one failed: %v)\n", err)
			return nil
		}
		defer exec.Command(script, "stop", dir).Run()
		url = strings.TrimSpace(string(out))
	}
	e, drop, err := scratchCluster(ctx, url)
	if err != nil {
		return err
	}
	defer drop()
	ci := e.Info().Cluster
	fmt.Printf("cluster %s: %d shards × %d replicas\n", ci.Name, ci.Shards, ci.Replicas)
	start := time.Now()
	if err := clusterOrders(ctx, e, b.rows); err != nil {
		return err
	}
	fmt.Printf("cluster setup: %d rows over 365 days and %d shards, two copies, in %.1fs\n", b.rows, ci.Shards, time.Since(start).Seconds())
	if err := clusterRules(ctx, e); err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	return clusterDiffs(ctx, b, e)
}

// scratchCluster creates a fresh database on every node of the cluster at url and opens it.
func scratchCluster(ctx context.Context, url string) (tsql.Engine, func(), error) {
	admin, err := tsql.Open(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	c, ok := admin.(tsql.Cluster)
	if !ok {
		admin.Close()
		return nil, nil, fmt.Errorf("%s is no cluster target (?cluster=NAME)", url)
	}
	db := fmt.Sprintf("trueup_bench_cluster_%d", time.Now().UnixNano())
	onNodes := func(ctx context.Context, stmt string) error {
		return c.OnNodes(ctx, func(ctx context.Context, _ tsql.Node, n tsql.Engine) error {
			return n.Exec(ctx, stmt+" "+n.Dialect().Quote(db))
		})
	}
	if err := onNodes(ctx, "CREATE DATABASE"); err != nil {
		admin.Close()
		return nil, nil, err
	}
	drop := func() {
		onNodes(context.Background(), "DROP DATABASE IF EXISTS")
		admin.Close()
	}
	hosts := strings.Index(url, "://") + 3
	slash := strings.IndexByte(url[hosts:], '/')
	query := strings.IndexByte(url, '?')
	e, err := tsql.Open(ctx, url[:hosts+slash+1]+db+url[query:])
	if err != nil {
		drop()
		return nil, nil, err
	}
	return e, func() { e.Close(); drop() }, nil
}

var clusterOrderCols = []tsql.Column{
	{Name: "order_id", Kind: tsql.TypeInt, Type: "Int64"},
	{Name: "order_date", Kind: tsql.TypeDate, Type: "Date"},
	{Name: "customer_id", Kind: tsql.TypeInt, Type: "Int64"},
	{Name: "region", Kind: tsql.TypeString, Type: "String"},
	{Name: "amount", Kind: tsql.TypeDecimal, Type: "Decimal(18, 2)"},
}

// clusterOrders makes the logical tables orders, orders_same (the same rows) and orders_sparse
// (an eighth of the orders of three days with a new amount: 0.1% of the rows), each generated on
// each shard's first replica straight into its local table, the rows that shard's key hash
// routes there; then the small tables the rules read, on the entry node.
func clusterOrders(ctx context.Context, e tsql.Engine, rows int) error {
	c := e.(tsql.Cluster)
	ci := e.Info().Cluster
	gen := fmt.Sprintf(`SELECT toInt64(number) AS order_id, toDate('2026-01-01') + (number %% 365) AS order_date,
		toInt64(number %% 100000) AS customer_id, arrayElement(['EMEA','NA','APAC','LATAM'], (number %% 4) + 1) AS region,
		toDecimal64(((number * 7919) %% 100000) / 100, 2) AS amount FROM numbers(%d)`, rows)
	sparse := `SELECT order_id, order_date, customer_id, region,
		if(order_date IN (toDate('2026-03-01'), toDate('2026-07-10'), toDate('2026-11-20')) AND intDiv(order_id, 365) % 8 = 0,
		amount + toDecimal64(1, 2), amount) AS amount FROM orders__v1_local`
	tables := []struct{ name, fill string }{
		{"orders", ""}, // generated: gen, the shard's rows
		{"orders_same", "SELECT * FROM orders__v1_local"},
		{"orders_sparse", sparse},
	}
	var points []tsql.ViewPoint
	for _, t := range tables {
		v := tsql.ClusterTable{Name: t.name, Version: 1, Columns: clusterOrderCols, Partition: "order_date", Order: []string{"order_id"}, ShardingKey: []string{"order_id"}}
		if err := c.CreateVersion(ctx, v); err != nil {
			return err
		}
		err := c.OnNodes(ctx, func(ctx context.Context, n tsql.Node, ne tsql.Engine) error {
			if n.Replica != 1 {
				return nil
			}
			q := t.fill
			if t.name == "orders" {
				q = "SELECT * FROM (" + gen + ") WHERE " + fmt.Sprintf("cityHash64(order_id) %% %d = %d", ci.Shards, n.Shard-1)
			}
			return ne.Exec(ctx, "INSERT INTO "+v.Local()+" "+q)
		})
		if err != nil {
			return fmt.Errorf("fill %s: %w", v.Local(), err)
		}
		if ci.Replicas > 1 {
			if err := c.OnNodes(ctx, func(ctx context.Context, _ tsql.Node, ne tsql.Engine) error {
				return ne.Exec(ctx, "SYSTEM SYNC REPLICA "+v.Local())
			}); err != nil {
				return err
			}
		}
		points = append(points, tsql.ViewPoint{View: t.name, Table: v.Distributed()})
	}
	if err := e.RepointViews(ctx, points); err != nil {
		return err
	}
	for _, t := range ruleTables {
		if err := e.Exec(ctx, "CREATE TABLE "+t.name+" ENGINE = MergeTree() ORDER BY tuple() AS "+t.query); err != nil {
			return fmt.Errorf("create %s: %w", t.name, err)
		}
	}
	return nil
}

var fromOrders = regexp.MustCompile(`\bFROM orders\b`)

// clusterRules runs the 20 rules through the view orders against handWritten on the
// Distributed table orders__v1.
func clusterRules(ctx context.Context, e tsql.Engine) error {
	fsys, targets := benchRuleFiles(e)
	set, err := rules.Load(ctx, fsys, "rules", targets)
	if err != nil {
		return err
	}
	runner := benchRunner(targets)
	runner.Run(ctx, set.Rules) // records the schema snapshots, warms the caches
	var hand []string
	for _, q := range handWritten(e.Dialect()) {
		// over a Distributed table a subquery of IN runs on each shard, against that node's
		// tables: GLOBAL IN runs it once on the entry node, as one writes it on a cluster
		q = strings.ReplaceAll(q, " NOT IN (SELECT", " GLOBAL NOT IN (SELECT")
		hand = append(hand, fromOrders.ReplaceAllString(q, "FROM orders__v1"))
	}
	var fused *rules.Run
	tf, th, _, _, err := interleaved(3, func() error {
		fused = runner.Run(ctx, set.Rules)
		if bad := errored(fused); bad != "" {
			return fmt.Errorf("%s", bad)
		}
		return nil
	}, func() error { return runHandWritten(ctx, e, hand) })
	if err != nil {
		return err
	}
	pass, fail, _ := fused.Counts()
	fmt.Printf("cluster: %d rules (%d pass, %d fail), %d queries\n", len(set.Rules), pass, fail, fused.Queries)
	report("cluster check vs hand-written SQL", tf, th, "≤ 1.3x")
	return nil
}

// clusterDiffs runs `trueup diff` (the diff and its save) of orders with orders_same and
// orders_sparse against the bare checksum scan of both Distributed tables.
func clusterDiffs(ctx context.Context, b *env, e tsql.Engine) error {
	store, closeStore, err := openDiffStore(ctx, filepath.Join(b.dir, "cluster-state.duckdb"))
	if err != nil {
		return err
	}
	defer closeStore()
	for _, c := range []struct {
		name, table string
		wantChanged int64
	}{
		{"identical", "orders_same", 0},
		{"sparse", "orders_sparse", int64(b.rows) / 1000},
	} {
		var res *reconcile.Result
		bare := fmt.Sprintf(bareHashScanClickHouse, "orders__v1", c.table+"__v1")
		to, tb, _, _, err := interleaved(reconcileRuns, func() error {
			var err error
			res, err = diffAndSave(ctx, store, ordersSpec(reconcile.Side{Engine: e, Relation: "orders"}, reconcile.Side{Engine: e, Relation: c.table}))
			return err
		}, func() error { return e.Each(ctx, bare, nil, func([]any) error { return nil }) })
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if err := changedAbout(res, c.wantChanged); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		var shards []string
		for _, p := range res.Partitions {
			if len(p.Shards) > 0 {
				shards = append(shards, fmt.Sprintf("%s on %v", p.Partition, p.Shards))
			}
		}
		report(fmt.Sprintf("cluster diff %s, %d rows", c.name, b.rows), to, tb, "≤ 1.3x bare checksum scan of both")
		// The same diff read through the Distributed tables (an engine that cannot say where the
		// shards are): what the per-shard scans cost against the entry node's aggregation.
		whole := unsharded{e}
		tw, err := bestOf(reconcileRuns, func() error {
			_, err := diffAndSave(ctx, store, ordersSpec(reconcile.Side{Engine: whole, Relation: "orders"}, reconcile.Side{Engine: whole, Relation: c.table}))
			return err
		})
		if err != nil {
			return fmt.Errorf("%s through the Distributed tables: %w", c.name, err)
		}
		fmt.Printf("    the same diff through the Distributed tables, not per shard: %.3fs (%.2fx bare)\n", tw.Seconds(), tw.Seconds()/tb.Seconds())
		fmt.Printf("    %d of %d partitions differ (%s), %d changed rows, %d rows read out\n",
			len(res.Differing()), len(res.Partitions), strings.Join(shards, ", "), res.Rows.Changed, res.RowsTransferred)
	}
	return nil
}

// unsharded hides a cluster engine's shards: a diff over it reads the Distributed tables whole.
type unsharded struct{ tsql.Engine }
