package views_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"trueup/ledger"
	tsql "trueup/sql"
	"trueup/views"
)

var ordersCols = []tsql.Column{
	{Name: "id", Kind: tsql.TypeInt},
	{Name: "d", Kind: tsql.TypeDate},
	{Name: "region", Kind: tsql.TypeString},
	{Name: "amount", Kind: tsql.TypeInt},
}

// makeVersion creates table__vN with rows rows; bump changes every amount so each version has
// its own checksum.
func makeVersion(t testing.TB, e tsql.Engine, table string, n, rows, bump int) {
	t.Helper()
	ctx := context.Background()
	name := views.Physical(table, n)
	if err := e.CreateTable(ctx, name, ordersCols, "d", []string{"id"}); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	regions := []string{"EMEA", "NA", "APAC", "LATAM"}
	start := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	data := make([][]any, rows)
	for i := range data {
		data[i] = []any{int64(i + 1), start.AddDate(0, 0, i%20), regions[i%4], int64(i%97 + bump)}
	}
	if err := e.Insert(ctx, name, []string{"id", "d", "region", "amount"}, data); err != nil {
		t.Fatalf("insert %s: %v", name, err)
	}
}

// pointView makes table's view read version n, as a pipeline outside trueup would.
func pointView(t testing.TB, e tsql.Engine, table string, n int) {
	t.Helper()
	if err := e.RepointViews(context.Background(), []tsql.ViewPoint{{View: table, Table: views.Physical(table, n)}}); err != nil {
		t.Fatalf("point %s at v%d: %v", table, n, err)
	}
}

// validatedRun makes the ledger know orders and daily_revenue (their v1 adopted live) and records
// their v2 validated, built by run 7: a publish of the two that has nothing to write first.
func validatedRun(t testing.TB, s *views.Service) {
	t.Helper()
	for _, table := range []string{"orders", "daily_revenue"} {
		if _, err := s.Versions(context.Background(), table); err != nil {
			t.Fatal(err)
		}
	}
	record(t, s, "orders", 2, views.StateValidated, 7)
	record(t, s, "daily_revenue", 2, views.StateValidated, 7)
}

// record records version n of table as a builder (the backfill runner) would.
func record(t testing.TB, s *views.Service, table string, n int, state string, run int64) {
	t.Helper()
	ctx := context.Background()
	rows, sum, err := views.Fingerprint(ctx, s.Engine(), views.Physical(table, n))
	if err != nil {
		t.Fatal(err)
	}
	v := views.Version{Target: s.Target(), Table: table, N: n, State: state, BuiltBy: "ann", RunID: run, Rows: rows, Checksum: sum}
	if run != 0 {
		v.Backfill = "fix_dedup_bug"
	}
	if err := s.Store().Put(ctx, v); err != nil {
		t.Fatal(err)
	}
}

// warehouse builds orders and daily_revenue, each with v1 live (built outside trueup) and a v2
// that one backfill run built and validated.
func warehouse(t testing.TB, e tsql.Engine, rows int) {
	t.Helper()
	for _, table := range []string{"orders", "daily_revenue"} {
		makeVersion(t, e, table, 1, rows, 0)
		makeVersion(t, e, table, 2, rows+rows/20, 1)
		pointView(t, e, table, 1)
	}
}

// source is the version a view reads.
func source(t testing.TB, e tsql.Engine, view string) string {
	t.Helper()
	src, err := e.ViewSource(context.Background(), view)
	if err != nil {
		t.Fatalf("view source of %s: %v", view, err)
	}
	return src
}

// states maps version name to state for a table.
func states(t testing.TB, s *views.Service, table string) map[string]string {
	t.Helper()
	vs, err := s.Store().List(context.Background(), s.Target(), table)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, v := range vs {
		out[v.Name()] = v.State
	}
	return out
}

// audit lists the actions in the audit log, oldest first, with their outcome.
func audit(t testing.TB, l *ledger.Ledger) []ledger.Entry {
	t.Helper()
	es, err := l.AuditLog(context.Background(), ledger.AuditFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(es)-1; i < j; i, j = i+1, j-1 {
		es[i], es[j] = es[j], es[i]
	}
	return es
}

// listener records what it hears.
type listener struct {
	mu     sync.Mutex
	events []string
}

func (l *listener) Published(_ context.Context, p views.Publish) ([]views.NoticeMove, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, "published "+p.Summary())
	return nil, nil
}

func (l *listener) RolledBack(_ context.Context, p views.Publish, reason string) ([]views.NoticeMove, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, "rolled back "+p.Summary()+": "+reason)
	return nil, nil
}

func (l *listener) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}
