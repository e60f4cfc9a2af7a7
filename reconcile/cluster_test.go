package reconcile_test

import (
	"testing"

	"trueup/reconcile"
	"trueup/sql/sqltest"
)

// TestDiffOnCluster: two logical tables on a cluster (views over Distributed tables, rows spread
// over the shards at random) compare as on one server: per-partition checksums over every
// shard's rows, and exactly the planted differences at row level.
func TestDiffOnCluster(t *testing.T) {
	e := sqltest.Cluster(t)
	if e == nil {
		t.Skip("no cluster")
	}
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
