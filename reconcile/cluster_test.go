package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"trueup/reconcile"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// TestDiffOnCluster: two logical tables on a cluster (views over Distributed tables, rows spread
// over the shards at random) compare as on one server: per-partition checksums over every
// shard's rows, and exactly the planted differences at row level. So they do through one node
// of the cluster, named without it (a team's URL of one server): the key lookup goes through
// the Distributed tables on that node.
func TestDiffOnCluster(t *testing.T) {
	url := sqltest.ClusterURL(t)
	if url == "" {
		t.Skip("no cluster")
	}
	e := sqltest.Open(t, url)
	l := sqltest.ClusterLoader(e)
	newRows := edit(baseRows(), func(r []any) []any {
		switch r[0].(int64) {
		case 2:
			return nil
		case 5:
			r[3] = 99.99
		case 6:
			r[2] = "renamed"
		}
		return r
	})
	newRows = append(newRows, []any{int64(100), day("2026-07-11"), "new", 1.5, nil})
	load(t, l, "old_t", orderCols, orderNames, baseRows())
	load(t, l, "new_t", orderCols, orderNames, newRows)
	load(t, l, "same_t", orderCols, orderNames, baseRows())

	s := spec(e)
	r := diff(t, s)
	checkOverview(t, r,
		"2026-07-10 both 4→3 match=false unexpected +0 -1 ~0 dup0",
		"2026-07-11 both 4→5 match=false unexpected +1 -0 ~2 dup0",
		"2026-07-12 both 4→4 match=true unchanged")
	if r.Rows != (reconcile.RowCounts{Added: 1, Removed: 1, Changed: 2}) {
		t.Errorf("rows: %+v", r.Rows)
	}
	if r.RowsTransferred == 0 || r.RowsTransferred > 10 {
		t.Errorf("rows read out: %d, want only the differing keys' rows", r.RowsTransferred)
	}
	// clickhouse://host1,host2,…/db?cluster=NAME → clickhouse://host1/db
	hosts := strings.TrimPrefix(url[:strings.IndexByte(url, '?')], "clickhouse://")
	node := sqltest.Open(t, "clickhouse://"+hosts[:strings.IndexAny(hosts, ",/")]+hosts[strings.IndexByte(hosts, '/'):])
	one := spec(node)
	if got := diff(t, one); got.Rows != r.Rows || !slices.EqualFunc(got.Partitions, r.Partitions, func(a, b *reconcile.Partition) bool {
		return a.Partition == b.Partition && a.OldCount == b.OldCount && a.NewCount == b.NewCount && a.ChecksumMatch == b.ChecksumMatch
	}) {
		t.Errorf("through one node: rows %+v, partitions %+v; want as through the cluster", got.Rows, got.Partitions)
	}

	s.New.Relation = "same_t"
	r = diff(t, s)
	checkOverview(t, r,
		"2026-07-10 both 4→4 match=true unchanged",
		"2026-07-11 both 4→4 match=true unchanged",
		"2026-07-12 both 4→4 match=true unchanged")
	if r.Differs || r.RowsTransferred != 0 {
		t.Errorf("identical on the cluster: differs=%v transferred=%d", r.Differs, r.RowsTransferred)
	}
}

// TestDiffOnClusterPerShard: both tables sharded by the key, so a key's rows are on the same
// shard on both sides: the partition scan runs per shard and sums, and only the partitions'
// shards that differ are compared row by row. Differences planted on one shard (a row changed
// twice over, one missing, one extra) are found exactly, each partition naming that shard alone.
func TestDiffOnClusterPerShard(t *testing.T) {
	e := sqltest.Cluster(t)
	if e == nil {
		t.Skip("no cluster")
	}
	ctx := context.Background()
	l := sqltest.ClusterLoaderBy(e, "id")
	probe := baseRows()
	for i := int64(100); i < 120; i++ {
		probe = append(probe, []any{i, day("2026-07-11"), "new", 1.5, nil})
	}
	load(t, l, "probe_t", orderCols, orderNames, probe)
	sh, err := e.(tsql.ShardReader).ShardsOf(ctx, "probe_t")
	if err != nil || sh == nil || len(sh.Shards) != 2 || !slices.Equal(sh.KeyColumns, []string{"id"}) {
		t.Fatalf("shards of probe_t: %+v %v", sh, err)
	}
	target := sh.Shards[1]
	res, err := target.Engine.Query(ctx, "SELECT id FROM "+target.Relation+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var base, extra []int64
	for _, r := range res.Rows {
		if id := tsql.AsInt64(r[0]); id < 100 {
			base = append(base, id)
		} else {
			extra = append(extra, id)
		}
	}
	if len(base) < 3 || len(extra) < 1 || len(base) == 12 {
		t.Fatalf("shard %d holds base ids %v and extra %v: cannot plant", target.Node.Shard, base, extra)
	}
	removed, changedAmount, changedName := base[0], base[1], base[2]
	newRows := edit(baseRows(), func(r []any) []any {
		switch r[0].(int64) {
		case removed:
			return nil
		case changedAmount:
			r[3] = 99.99
		case changedName:
			r[2] = "renamed"
		}
		return r
	})
	newRows = append(newRows, []any{extra[0], day("2026-07-11"), "new", 1.5, nil})
	load(t, l, "old_t", orderCols, orderNames, baseRows())
	load(t, l, "new_t", orderCols, orderNames, newRows)

	r := diff(t, spec(e))
	if r.Rows != (reconcile.RowCounts{Added: 1, Removed: 1, Changed: 2}) {
		t.Errorf("rows: %+v, want 1 added, 1 removed, 2 changed", r.Rows)
	}
	var oldRows, newCount int64
	for _, p := range r.Partitions {
		oldRows += p.OldCount
		newCount += p.NewCount
		switch {
		case p.ChecksumMatch && len(p.Shards) != 0:
			t.Errorf("partition %s matches but names shards %v", p.Partition, p.Shards)
		case !p.ChecksumMatch && !slices.Equal(p.Shards, []int{target.Node.Shard}):
			t.Errorf("partition %s differs on shards %v, want only shard %d", p.Partition, p.Shards, target.Node.Shard)
		}
	}
	if oldRows != 12 || newCount != 12 {
		t.Errorf("counts summed over the shards: old %d new %d, want 12 and 12", oldRows, newCount)
	}
	keys := map[string]bool{}
	for _, a := range r.Samples.Added {
		keys[fmt.Sprint("+", a.Key.Get("id"))] = true
	}
	for _, a := range r.Samples.Removed {
		keys[fmt.Sprint("-", a.Key.Get("id"))] = true
	}
	for _, c := range r.Samples.Changed {
		keys[fmt.Sprint("~", c.Key.Get("id"))] = true
	}
	want := map[string]bool{fmt.Sprint("+", extra[0]): true, fmt.Sprint("-", removed): true,
		fmt.Sprint("~", changedAmount): true, fmt.Sprint("~", changedName): true}
	if !maps.Equal(keys, want) {
		t.Errorf("sampled keys %v, want %v", keys, want)
	}
	if r.RowsTransferred == 0 || r.RowsTransferred > 8 {
		t.Errorf("rows read out: %d, want only the differing keys' rows of one shard", r.RowsTransferred)
	}
	var text strings.Builder
	if err := r.WriteText(&text, reconcile.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "shards") {
		t.Errorf("text names no shards:\n%s", text.String())
	}
	js, _ := json.Marshal(r)
	if !strings.Contains(string(js), fmt.Sprintf(`"shards":[%d]`, target.Node.Shard)) {
		t.Errorf("JSON names no shard: %s", js)
	}

	// identical tables: every shard's figures match, nothing is read out
	load(t, l, "same_t", orderCols, orderNames, baseRows())
	s := spec(e)
	s.New.Relation = "same_t"
	r = diff(t, s)
	if r.Differs || r.RowsTransferred != 0 {
		t.Errorf("identical on the cluster: differs=%v transferred=%d", r.Differs, r.RowsTransferred)
	}
}

// TestDiffOnClusterRowsOnAnotherShard: rows written past the Distributed table, into another
// shard's local table than the sharding key routes them to (as a team's own loader may), are
// compared with every shard's rows together, as on one server: a row moved to another shard
// and changed there is one changed row, not one removed and one added, and a key's second row
// on another shard is a duplicate key, not an added row.
func TestDiffOnClusterRowsOnAnotherShard(t *testing.T) {
	e := sqltest.Cluster(t)
	if e == nil {
		t.Skip("no cluster")
	}
	ctx := context.Background()
	moved, copied := int64(5), int64(9)
	withMoved := func(r []any) []any {
		if r[0].(int64) == moved {
			r[3] = 99.99
		}
		return r
	}
	// What the same rows compare as when nothing is read shard by shard (placed at random).
	flat := sqltest.ClusterLoader(e)
	load(t, flat, "flat_old", orderCols, orderNames, baseRows())
	flatNew := edit(baseRows(), withMoved)
	flatNew = append(flatNew, baseRows()[copied-1])
	load(t, flat, "flat_new", orderCols, orderNames, flatNew)
	s := spec(e)
	s.Old.Relation, s.New.Relation = "flat_old", "flat_new"
	want := diff(t, s)
	if want.Rows != (reconcile.RowCounts{Changed: 1, DuplicateKeys: 1}) {
		t.Fatalf("read whole: rows %+v, want 1 changed and 1 duplicate key", want.Rows)
	}

	l := sqltest.ClusterLoaderBy(e, "id")
	load(t, l, "old_t", orderCols, orderNames, baseRows())
	load(t, l, "new_t", orderCols, orderNames, edit(baseRows(), func(r []any) []any {
		if r[0].(int64) == moved {
			return nil
		}
		return r
	}))
	sh, err := e.(tsql.ShardReader).ShardsOf(ctx, "old_t")
	if err != nil || sh == nil || len(sh.Shards) != 2 {
		t.Fatalf("shards of old_t: %+v %v", sh, err)
	}
	// home is the shard of old_t holding id; the row goes to the other one's local table of new_t.
	other := func(id int64) tsql.ShardSource {
		for i, src := range sh.Shards {
			res, err := src.Engine.Query(ctx, "SELECT count(*) FROM "+src.Relation+" WHERE id = ?", id)
			if err != nil {
				t.Fatal(err)
			}
			if tsql.AsInt64(res.Rows[0][0]) == 1 {
				o := sh.Shards[1-i]
				o.Relation = strings.Replace(o.Relation, "old_t", "new_t", 1)
				return o
			}
		}
		t.Fatalf("no shard holds id %d", id)
		return tsql.ShardSource{}
	}
	for _, id := range []int64{moved, copied} {
		dst := other(id)
		if err := dst.Engine.Insert(ctx, dst.Relation, orderNames, [][]any{withMoved(baseRows()[id-1])}); err != nil {
			t.Fatalf("insert into %s on shard %d: %v", dst.Relation, dst.Node.Shard, err)
		}
		if e.Info().Cluster.Replicas > 1 {
			if err := e.(tsql.Cluster).OnNodes(ctx, func(ctx context.Context, _ tsql.Node, ne tsql.Engine) error {
				return ne.Exec(ctx, "SYSTEM SYNC REPLICA "+ne.Dialect().Quote(dst.Relation))
			}); err != nil {
				t.Fatal(err)
			}
		}
	}

	r := diff(t, spec(e))
	if r.Rows != want.Rows {
		t.Errorf("rows %+v, want %+v as read whole", r.Rows, want.Rows)
	}
	for i, p := range r.Partitions {
		w := want.Partitions[i]
		got := fmt.Sprintf("%s %d→%d match=%v", p.Partition, p.OldCount, p.NewCount, p.ChecksumMatch)
		wantRows := fmt.Sprintf("%s %d→%d match=%v", w.Partition, w.OldCount, w.NewCount, w.ChecksumMatch)
		if p.Rows != nil {
			got += fmt.Sprintf(" %+v", *p.Rows)
		}
		if w.Rows != nil {
			wantRows += fmt.Sprintf(" %+v", *w.Rows)
		}
		if got != wantRows {
			t.Errorf("partition %s, want %s as read whole", got, wantRows)
		}
	}
	if len(r.Samples.Changed) != 1 || tsql.AsInt64(r.Samples.Changed[0].Key.Get("id")) != moved {
		t.Errorf("changed samples %+v, want id %d", r.Samples.Changed, moved)
	}
}
