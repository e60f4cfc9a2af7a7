package sql

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadOnlySelect(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"SELECT 1;", "SELECT 1", ""},
		{"  with x AS (SELECT 1) SELECT * FROM x", "with x AS (SELECT 1) SELECT * FROM x", ""},
		{"SELECT 'DROP TABLE x' AS s", "SELECT 'DROP TABLE x' AS s", ""},
		{"SELECT 1; DROP TABLE x", "", "more than one statement"},
		{"DELETE FROM x", "", "starts with DELETE"},
		{"SELECT * FROM x; ", "SELECT * FROM x", ""},
		{"", "", "empty SQL"},
		{"SELECT * FROM (INSERT INTO x VALUES (1))", "", "contains INSERT"},
	} {
		got, err := ReadOnlySelect(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v", tc.in, got, err)
		}
	}
}

func TestTableRefs(t *testing.T) {
	q := `WITH dedup AS (SELECT * FROM orders_raw r JOIN "customers" c USING (customer_id))
		SELECT d.*, 'FROM fake' FROM dedup d, regions -- FROM commented
		LEFT JOIN analytics.plans p ON p.id = d.plan WHERE x IN (SELECT id FROM allow_list)
		AND y IN (SELECT * FROM range(3))`
	want := []string{"orders_raw", "customers", "regions", "analytics.plans", "allow_list"}
	if diff := cmp.Diff(want, TableRefs(q)); diff != "" {
		t.Errorf("refs (-want +got):\n%s", diff)
	}
}

func TestRewriteTables(t *testing.T) {
	q := "SELECT orders.order_date, count(*) AS orders FROM orders JOIN Customers c ON 1=1 WHERE 'orders' <> '' GROUP BY 1"
	got := RewriteTables(duckDialect{}, q, map[string]string{"orders": "orders__v2", "customers": "customers__v3"}, nil)
	want := `SELECT orders.order_date, count(*) AS orders FROM "orders__v2" AS "orders" JOIN "customers__v3" c ON 1=1 WHERE 'orders' <> '' GROUP BY 1`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestClockCalls(t *testing.T) {
	got := ClockCalls("SELECT * FROM t WHERE d < current_date AND ts > now() - 1 AND s = 'now()' AND \"today\" = 1")
	if diff := cmp.Diff([]string{"current_date", "now"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := ClockCalls("SELECT * FROM t WHERE d >= $start AND d < $end"); len(got) != 0 {
		t.Errorf("window-only transform flagged: %v", got)
	}
}

func TestRewriteTablesQualified(t *testing.T) {
	current := []string{"main", "warehouse.main", "warehouse"}
	to := map[string]string{"orders": "orders__v2", "daily_revenue": "daily_revenue__v1"}
	q := `SELECT sum(o.amount) FROM main.orders o JOIN warehouse.main.daily_revenue USING (id) JOIN "warehouse".orders x ON true JOIN customers ON true`
	got := RewriteTables(duckDialect{}, q, to, current)
	want := `SELECT sum(o.amount) FROM "orders__v2" o JOIN "daily_revenue__v1" AS "daily_revenue" USING (id) JOIN "orders__v2" x ON true JOIN customers ON true`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// a table of the same name in another schema or database is another table: left as written
	for q, want := range map[string]string{
		"SELECT * FROM other.orders":                                "SELECT * FROM other.orders",
		"SELECT * FROM orders JOIN attached.main.orders USING (id)": `SELECT * FROM "orders__v2" AS "orders" JOIN attached.main.orders USING (id)`,
		"SELECT * FROM other.customers":                             "SELECT * FROM other.customers",
	} {
		if got := RewriteTables(duckDialect{}, q, to, current); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}
