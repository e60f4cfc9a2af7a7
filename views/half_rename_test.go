package views_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// halfRenameEngine repoints as ClickHouse 18.16 does but stops inside the RENAME, after moving the
// first view to its __old_ name and before putting the __next_ one in its place, and loses the
// connection (nothing can be read or tidied until a restart).
type halfRenameEngine struct {
	tsql.Engine
	gone bool
}

func (e *halfRenameEngine) RepointViews(ctx context.Context, points []tsql.ViewPoint) error {
	d, p := e.Engine.Dialect(), points[0]
	for _, s := range []string{
		"CREATE VIEW " + d.Quote(p.View+"__next_0123456789ab") + " AS SELECT * FROM " + d.Quote(p.Table),
		"RENAME TABLE " + d.Quote(p.View) + " TO " + d.Quote(p.View+"__old_0123456789ab"),
	} {
		if err := e.Engine.Exec(ctx, s); err != nil {
			return err
		}
	}
	e.gone = true
	return errors.New("read tcp: connection reset by peer")
}

func (e *halfRenameEngine) Query(ctx context.Context, q string, args ...any) (*tsql.Result, error) {
	if e.gone {
		return nil, errors.New("dial tcp: connection refused")
	}
	return e.Engine.Query(ctx, q, args...)
}

// TestRecoverPutsBackAHalfRenamedView: on ClickHouse 18.16 a swap whose RENAME stopped after
// moving orders away leaves no view orders, only orders__old_… and orders__next_…. Start-up
// recovery renames orders back, drops the helper views and settles the swap as abandoned, with the
// ledger agreeing with the view and the tables free — instead of "the ledger follows the views"
// with readers left without orders.
func TestRecoverPutsBackAHalfRenamedView(t *testing.T) {
	real := sqltest.ClickHouse(t)
	if real == nil {
		return // skipped: the half-done RENAME is ClickHouse's
	}
	ctx := context.Background()
	warehouse(t, real, 50)
	path := filepath.Join(t.TempDir(), "state.duckdb")
	l := ledgertest.OpenAt(t, path)
	s := views.New("w", &halfRenameEngine{Engine: real}, l)
	validatedRun(t, s)
	if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann", Reason: "the fix"}); err == nil {
		t.Fatal("the swap that stopped part-way succeeded")
	}
	if _, err := real.ViewSource(ctx, "orders"); err == nil {
		t.Fatal("orders still exists: the RENAME was not stopped half-way")
	}

	l.Close() // restart
	l = ledgertest.OpenAt(t, path)
	s = views.New("w", real, l)
	repairs, err := views.Recover(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmtRepairs(repairs), "orders__old_0123456789ab renamed back") {
		t.Errorf("repairs: %s", fmtRepairs(repairs))
	}
	for _, table := range []string{"orders", "daily_revenue"} {
		if src := source(t, real, table); src != views.Physical(table, 1) {
			t.Errorf("%s reads %s, want v1", table, src)
		}
		if got := states(t, s, table); got["v1"] != views.StateLive {
			t.Errorf("%s states: %v, want v1 live", table, got)
		}
	}
	rels, err := real.Relations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rels {
		if strings.Contains(r.Name, "__next_") || strings.Contains(r.Name, "__old_") {
			t.Errorf("left behind: %s", r.Name)
		}
	}
	h, _ := s.History(ctx, "orders", 0)
	if len(h) != 1 || h[0].State != views.PublishAbandoned || strings.Contains(h[0].Detail, "follows the views") {
		t.Errorf("history: %+v, want the swap abandoned with the views put back", h)
	}
	if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"}); err != nil {
		t.Fatalf("swap after recovery: %v", err)
	}
	if src := source(t, real, "orders"); src != "orders__v2" {
		t.Errorf("orders reads %s after the swap, want v2", src)
	}
}

func fmtRepairs(rs []views.Repair) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Table+": "+r.What)
	}
	return strings.Join(out, "; ")
}
