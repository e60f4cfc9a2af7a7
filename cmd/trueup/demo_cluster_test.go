package main

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"trueup/fixtures"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestDemoOnCluster builds the demo on a cluster target and walks it as a user would, beside the
// same demo on one server (the test ClickHouse server, or DuckDB when none is configured): every
// demo table holds as many rows, laid out as trueup lays tables out on a cluster (local tables on
// every node holding each shard's share, a Distributed table over them); `trueup check` gives
// the same verdicts; the fix's backfill dry-run reports the same, its run builds every
// partition, the swap publishes it, and check then gives the same verdicts again.
func TestDemoOnCluster(t *testing.T) {
	t.Parallel() // long: beside the package's other long tests
	url := sqltest.ClusterURL(t)
	if url == "" {
		t.Skip("TRUEUP_TEST_CLUSTER is not set: no cluster can run here")
	}
	var single []string
	if u := sqltest.ClickHouseURL(t); u != "" {
		single = []string{"--target", u}
	}
	dirs := map[string]string{"cluster": demoDir(t, "--target", url), "one server": demoDir(t, single...)}
	cfg := func(name string) string { return filepath.Join(dirs[name], "trueup.yaml") }
	ctx := context.Background()
	cluster := sqltest.Open(t, url)
	counts := func(name string) map[string]int64 {
		t.Helper()
		a, err := openApp(ctx, globals{config: cfg(name)})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		e := a.Targets[a.Config.DefaultTarget]
		out := map[string]int64{}
		for _, table := range append(fixtures.Tables(), "orders__v2") {
			res, err := e.Query(ctx, "SELECT count(*) FROM "+e.Dialect().QuoteRelation(table))
			if err != nil {
				if strings.HasSuffix(table, "__v2") {
					continue
				}
				t.Fatalf("%s: count %s: %v", name, table, err)
			}
			out[table] = tsql.AsInt64(res.Rows[0][0])
		}
		return out
	}
	sameCounts := func(when string) {
		t.Helper()
		got, want := counts("cluster"), counts("one server")
		if len(got) != len(want) {
			t.Errorf("%s: the cluster has tables %v, one server %v", when, got, want)
		}
		for table, n := range want {
			if got[table] != n {
				t.Errorf("%s: %s has %d rows on the cluster, %d on one server", when, table, got[table], n)
			}
		}
	}
	sameCounts("built")
	built := counts("cluster")

	// Each table is a Distributed table over local tables on every node, each shard holding part
	// of its rows: one replica of each shard adds up to the whole.
	c := cluster.(tsql.Cluster)
	whole := counts("cluster")
	for _, table := range []string{"customers", "orders_raw", "orders__v1", "daily_revenue__v1"} {
		perShard := map[int]int64{}
		err := c.OnNodes(ctx, func(ctx context.Context, n tsql.Node, e tsql.Engine) error {
			res, err := e.Query(ctx, "SELECT count(*) FROM "+e.Dialect().QuoteRelation(table+"_local"))
			if err != nil {
				return err
			}
			if n.Replica == 1 {
				perShard[n.Shard] = tsql.AsInt64(res.Rows[0][0])
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s_local on every node: %v", table, err)
		}
		var sum int64
		for shard, k := range perShard {
			sum += k
			if k == 0 && whole[table] > 10 {
				t.Errorf("%s: shard %d holds none of its %d rows", table, shard, whole[table])
			}
		}
		if sum != whole[table] {
			t.Errorf("%s: the shards hold %d rows (%v), the Distributed table reads %d", table, sum, perShard, whole[table])
		}
	}

	type verdicts struct {
		code  int
		rules map[string]string
	}
	check := func(name string) verdicts {
		t.Helper()
		code, out, errs := cli(t, "--config", cfg(name), "check", "--format", "json")
		var rep struct {
			Results []struct{ Rule, Status string } `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: check --format json: exit %d: %v: %s %s", name, code, err, out, errs)
		}
		v := verdicts{code: code, rules: map[string]string{}}
		for _, r := range rep.Results {
			v.rules[r.Rule] = r.Status
		}
		return v
	}
	sameChecks := func(when string) verdicts {
		t.Helper()
		got, want := check("cluster"), check("one server")
		if got.code != want.code || len(got.rules) != len(want.rules) {
			t.Errorf("%s: check on the cluster: exit %d, %v; on one server: exit %d, %v", when, got.code, got.rules, want.code, want.rules)
		}
		for rule, s := range want.rules {
			if got.rules[rule] != s {
				t.Errorf("%s: rule %s: %s on the cluster, %s on one server", when, rule, got.rules[rule], s)
			}
		}
		return got
	}
	if v := sameChecks("built"); v.code != exitFailed || v.rules["matches_raw"] != "fail" {
		t.Errorf("built: check: exit %d, %v; want the planted bug failing matches_raw", v.code, v.rules)
	}

	step := func(name string, args ...string) string {
		t.Helper()
		code, out, errs := cli(t, append([]string{"--config", cfg(name)}, args...)...)
		if code != exitOK {
			t.Fatalf("%s: %s: exit %d: %s %s", name, strings.Join(args, " "), code, out, errs)
		}
		return out
	}
	dry := map[string]string{}
	for name := range dirs {
		dry[name] = step(name, "backfill", "dry-run", "fix_dedup_bug")
	}
	if dry["cluster"] != dry["one server"] || !strings.Contains(dry["cluster"], "result: meets its expectations") {
		t.Errorf("backfill dry-run on the cluster:\n%s\non one server:\n%s", dry["cluster"], dry["one server"])
	}
	for name := range dirs {
		if out := step(name, "backfill", "run", "fix_dedup_bug"); !strings.Contains(out, "36/36 partitions done, 0 failed") {
			t.Errorf("%s: backfill run: %s", name, out)
		}
		if out := step(name, "swap", "orders", "--to", "v2", "--reason", "fix the dedup"); !strings.Contains(out, "swapped orders v1 → v2") {
			t.Errorf("%s: swap: %s", name, out)
		}
	}
	sameCounts("swapped")
	if v := sameChecks("swapped"); v.code != exitOK || v.rules["matches_raw"] != "pass" {
		t.Errorf("swapped: check: exit %d, %v; want matches_raw passing", v.code, v.rules)
	}

	// --fresh drops the demo's tables, every version's, on every node, and builds it again.
	if code, _, errs := cli(t, "--target", url, "demo", "--dir", dirs["cluster"], "--rows", "5000", "--write-only", "--fresh"); code != exitOK {
		t.Fatalf("demo --fresh on the cluster: exit %d: %s", code, errs)
	}
	if again := counts("cluster"); !maps.Equal(again, built) {
		t.Errorf("rebuilt with --fresh: %v, first built %v", again, built)
	}
}
