package ops_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/fault"
	"trueup/ledger"
	"trueup/notices"
	"trueup/ops"
	"trueup/ops/client"
	"trueup/server"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// clock is a ledger clock a test sets: swaps and rollbacks are recorded at the times it says.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// The times of the history TestQueryAsOf builds: trueup learns of sales at t0 (v1 live), swaps
// to v2 at t1 and rolls back to v1 at t2.
var (
	t0 = time.Date(2026, 7, 20, 8, 0, 0, 0, time.UTC)
	t1 = time.Date(2026, 7, 20, 9, 0, 0, 0, time.UTC)
	t2 = time.Date(2026, 7, 20, 10, 0, 0, 0, time.UTC)
)

// salesHistory builds sales with v1 and v2 (v2 adds 5 to region b's one sale, nothing else)
// in e and records, on a ledger whose clock the test sets, trueup first seeing it (t0), a swap
// to v2 (t1) and a rollback to v1 (t2).
func salesHistory(t *testing.T, e tsql.Engine) *views.Service {
	t.Helper()
	ctx := context.Background()
	clk := &clock{now: t0}
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "state.duckdb"), ledger.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	cols := []tsql.Column{{Name: "id", Kind: tsql.TypeInt}, {Name: "region", Kind: tsql.TypeString}, {Name: "amount", Kind: tsql.TypeInt}}
	for n, bump := range map[int]int64{1: 0, 2: 5} {
		name := views.Physical("sales", n)
		if err := e.CreateTable(ctx, name, cols, "", []string{"id"}); err != nil {
			t.Fatal(err)
		}
		rows := [][]any{{int64(1), "a", int64(10)}, {int64(2), "a", int64(20)}, {int64(3), "b", int64(30) + bump}, {int64(4), "c", int64(40)}}
		if err := e.Insert(ctx, name, []string{"id", "region", "amount"}, rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "sales", Table: views.Physical("sales", 1)}}); err != nil {
		t.Fatal(err)
	}
	s := views.New("wh", e, l)
	if _, err := s.Versions(ctx, "sales"); err != nil { // first sight: v1 live, v2 previous, at t0
		t.Fatal(err)
	}
	v2, err := s.Store().Get(ctx, "wh", "sales", 2)
	if err != nil {
		t.Fatal(err)
	}
	v2.State = views.StateValidated
	if err := s.Store().Put(ctx, v2); err != nil {
		t.Fatal(err)
	}
	clk.set(t1)
	if _, err := s.Swap(ctx, views.SwapRequest{Table: "sales", To: "v2", Actor: "ann", Reason: "fix"}); err != nil {
		t.Fatal(err)
	}
	clk.set(t2)
	if _, err := s.Rollback(ctx, views.RollbackRequest{Table: "sales", Actor: "ann", Reason: "oops"}); err != nil {
		t.Fatal(err)
	}
	clk.set(t2.Add(time.Hour))
	return s
}

const salesByRegion = "SELECT region, sum(amount) AS amount, count(*) AS n FROM sales GROUP BY region ORDER BY region"

// engines are the engines the behaviour runs on: DuckDB, and ClickHouse when the tests have one.
func engines(t *testing.T) map[string]func(t *testing.T) tsql.Engine {
	out := map[string]func(t *testing.T) tsql.Engine{"duckdb": func(t *testing.T) tsql.Engine { return sqltest.DuckDB(t) }}
	if sqltest.ClickHouseURL(t) != "" {
		out["clickhouse"] = func(t *testing.T) tsql.Engine { return sqltest.Open(t, sqltest.ClickHouseURL(t)) }
	}
	return out
}

// A query as of a time reads the version live then, from the recorded swaps and rollbacks —
// the time between a swap and its rollback still reads the swapped-in version — locally and
// through a server alike; a time before trueup knew the table and a retired version are refused
// naming the table and what is retained; compare_to_live shows exactly the numbers that differ.
func TestQueryAsOf(t *testing.T) {
	for name, open := range engines(t) {
		t.Run(name, func(t *testing.T) {
			s := salesHistory(t, open(t))
			xs := []*notices.Exposure{{Name: "sales_by_region", Title: "Sales by region", Tables: []string{"sales"}, SQL: salesByRegion}}
			local := ops.NewQueries(ops.TableServices{"wh": s}, "wh", xs)
			ts := httptest.NewServer(server.New(server.Options{Queries: local}).Handler())
			t.Cleanup(ts.Close)
			c, err := client.New(ts.URL, "", "cli:test")
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []struct {
				name string
				q    ops.Queries
			}{{"local", local}, {"server", c.Queries()}} {
				t.Run(mode.name, func(t *testing.T) { queryAsOfCases(t, mode.q) })
			}
			// retire v2: the time it was live can no longer be read
			if err := s.Retire(context.Background(), views.RetireRequest{Table: "sales", Version: "v2", Actor: "ann", Reason: "old"}); err != nil {
				t.Fatal(err)
			}
			for _, mode := range []struct {
				name string
				q    ops.Queries
			}{{"local", local}, {"server", c.Queries()}} {
				t.Run(mode.name+"_retired", func(t *testing.T) {
					for _, req := range []ops.QueryRequest{
						{SQL: salesByRegion, AsOf: "2026-07-20 09:30"},
						{SQL: salesByRegion, Versions: map[string]string{"sales": "v2"}},
					} {
						_, err := mode.q.Query(context.Background(), req)
						if fault.Of(err) != fault.Invalid || !strings.Contains(err.Error(), "sales v2") ||
							!strings.Contains(err.Error(), "retired") || !strings.Contains(err.Error(), "retained: v1") {
							t.Errorf("%+v: got %v, want the refusal of retired sales v2 naming v1 as retained", req, err)
						}
					}
				})
			}
		})
	}
}

func queryAsOfCases(t *testing.T, q ops.Queries) {
	ctx := context.Background()
	b := func(amount int) string { return `["b",` + strconv.Itoa(amount) + `,1]` }
	for _, tc := range []struct {
		name, asOf string
		versions   map[string]string
		want       string // sales' version
		wantB      string // region b's row
		publish    int64
	}{
		{"before_the_swap", "2026-07-20 08:30", nil, "v1", b(30), 0},
		{"after_the_swap", "2026-07-20T09:30:00Z", nil, "v2", b(35), 1},
		{"between_swap_and_rollback_after_the_rollback", "2026-07-20 09:59:59", nil, "v2", b(35), 1},
		{"after_the_rollback", "2026-07-20 10:00", nil, "v1", b(30), 2},
		{"named_version", "", map[string]string{"sales": "v2"}, "v2", b(35), 0},
		{"live", "", nil, "v1", b(30), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := q.Query(ctx, ops.QueryRequest{SQL: salesByRegion, AsOf: tc.asOf, Versions: tc.versions})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Read) != 1 || res.Read[0].Table != "sales" || res.Read[0].Version != tc.want || res.Read[0].Publish != tc.publish {
				t.Fatalf("read %+v, want sales %s (publish %d)", res.Read, tc.want, tc.publish)
			}
			if res.Read[0].Live != (tc.want == "v1") {
				t.Errorf("read %+v: live is v1", res.Read[0])
			}
			if got := rowText(res.Answer, 1); got != tc.wantB {
				t.Errorf("region b: %s, want %s", got, tc.wantB)
			}
		})
	}
	t.Run("compare_to_live_shows_exactly_the_changed_numbers", func(t *testing.T) {
		res, err := q.Query(ctx, ops.QueryRequest{Exposure: "sales_by_region", AsOf: "2026-07-20 09:30", CompareToLive: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Live == nil || res.Live.Read[0].Version != "v1" || res.Read[0].Version != "v2" {
			t.Fatalf("read %+v, live %+v: want v2 as asked, v1 live", res.Read, res.Live)
		}
		f := func(x float64) *float64 { return &x }
		want := []notices.ExposureRow{{Label: "b", Column: "amount", Before: f(35), After: f(30)}}
		if d := cmp.Diff(want, res.Live.Comparison.Rows); d != "" {
			t.Errorf("changed numbers (-want +got):\n%s", d)
		}
		if res.Live.Comparison.Unchanged != 5 {
			t.Errorf("unchanged %d, want 5 (a, c amounts and every count)", res.Live.Comparison.Unchanged)
		}
	})
	for _, tc := range []struct {
		name string
		req  ops.QueryRequest
		kind fault.Kind
		says string
	}{
		{"before_trueup_knew", ops.QueryRequest{SQL: salesByRegion, AsOf: "2026-07-20 07:00"}, fault.Invalid, "sales: 2026-07-20 07:00:00 UTC is before trueup knew the table"},
		{"in_the_future", ops.QueryRequest{SQL: salesByRegion, AsOf: "2026-07-20 12:00"}, fault.Invalid, "sales: 2026-07-20 12:00:00 UTC is in the future (it is now 2026-07-20 11:00:00 UTC)"},
		{"not_a_select", ops.QueryRequest{SQL: "DELETE FROM sales"}, fault.Invalid, "want a single read-only SELECT"},
		{"two_statements", ops.QueryRequest{SQL: "SELECT 1; SELECT 2"}, fault.Invalid, "more than one statement"},
		{"reads_a_file", ops.QueryRequest{SQL: "SELECT * FROM read_csv('/etc/passwd')"}, fault.Invalid, "outside the warehouse"},
		{"bad_time", ops.QueryRequest{SQL: salesByRegion, AsOf: "yesterday"}, fault.Invalid, `as of "yesterday"`},
		{"version_of_a_plain_table", ops.QueryRequest{SQL: salesByRegion, Versions: map[string]string{"sales__v1": "v1"}}, fault.Invalid, "sales__v1 is not a logical table"},
		{"version_of_a_table_not_read", ops.QueryRequest{SQL: "SELECT 1 AS x", Versions: map[string]string{"sales": "v1"}}, fault.Invalid, "the query does not read sales"},
		{"no_such_version", ops.QueryRequest{SQL: salesByRegion, Versions: map[string]string{"sales": "v9"}}, fault.NotFound, "sales has no version v9"},
		{"no_such_exposure", ops.QueryRequest{Exposure: "nope"}, fault.NotFound, `no exposure "nope"`},
		{"limit_too_big", ops.QueryRequest{SQL: salesByRegion, Limit: ops.MaxQueryLimit + 1}, fault.Invalid, "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := q.Query(ctx, tc.req)
			if fault.Of(err) != tc.kind || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v (%v), want a one-line %v saying %q", err, fault.Of(err), tc.kind, tc.says)
			}
		})
	}
	t.Run("bounded_rows", func(t *testing.T) {
		res, err := q.Query(ctx, ops.QueryRequest{SQL: "SELECT id FROM sales ORDER BY id", Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Answer.Rows) != 2 || !res.Answer.Truncated {
			t.Errorf("%d rows, truncated %v: want 2 of 4, truncated", len(res.Answer.Rows), res.Answer.Truncated)
		}
	})
}

func rowText(a ops.Answer, i int) string {
	if i >= len(a.Rows) {
		return "(no row)"
	}
	var parts []string
	for _, c := range a.Rows[i] {
		parts = append(parts, string(c))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestQueryIsCancellable: a query whose caller goes away stops in the engine, with the cause,
// instead of running to its end (this one would scan ten billion rows).
func TestQueryIsCancellable(t *testing.T) {
	s := salesHistory(t, sqltest.DuckDB(t))
	q := ops.NewQueries(ops.TableServices{"wh": s}, "wh", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	started := time.Now()
	_, err := q.Query(ctx, ops.QueryRequest{SQL: "SELECT count(*) FROM range(10000000000) AS r(i), sales WHERE i % 7 = 3"})
	if err == nil {
		t.Fatal("a cancelled query answered")
	}
	t.Logf("after %s: %v", time.Since(started), err)
	if took := time.Since(started); took > 20*time.Second {
		t.Errorf("the query ran %s after its caller went away", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "nterrupt") && !strings.Contains(err.Error(), "cancel") {
		t.Errorf("the cause is not the cancellation: %v", err)
	}
}
