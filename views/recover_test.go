package views_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
	"trueup/views"
)

// crashExit is the exit code of a child killed by a crash hook.
const crashExit = 3

// TestCrashBetweenIntentAndOutcome kills a process between a swap's intent and its outcome (a
// child test process exits from a hook, with no clean-up), then recovers as start-up would:
// the ledger and the views agree, the intent is settled and the tables are free again.
func TestCrashBetweenIntentAndOutcome(t *testing.T) {
	if stage := os.Getenv("TRUEUP_VIEWS_CRASH"); stage != "" {
		crashChild(t, stage)
		return
	}
	urls := map[string]func() string{"duckdb": func() string { return sqltest.DuckDBURL(t) }}
	if sqltest.ClickHouseURL(t) != "" {
		urls["clickhouse"] = func() string { return sqltest.ClickHouseURL(t) }
	}
	for kind, newURL := range urls {
		for _, tc := range []struct {
			stage     string // where the child dies: after-intent is before the repoint (DuckDB has no intent)
			halfDone  bool   // only orders was repointed (ClickHouse 19.5+ repoints one view per statement)
			gone      bool   // and daily_revenue__v2 was dropped since: the rest cannot be repointed
			wantState string
			wantLive  int // 0: orders v2, daily_revenue v1
		}{
			{"after-intent", false, false, views.PublishAbandoned, 1},
			{"after-repoint", false, false, views.PublishDone, 2},
			{"after-intent", true, false, views.PublishDone, 2},
			{"after-intent", true, true, views.PublishAbandoned, 0},
		} {
			name := kind + "/" + strings.ReplaceAll(tc.stage, "-", "_")
			if tc.halfDone {
				name += "_half_done"
			}
			if tc.gone {
				name += "_rest_gone"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				url := newURL()
				// An engine that notes its views repoints them in one transaction with the note:
				// it has no intent in the ledger, and never a half-done repoint.
				probe := sqltest.Open(t, url)
				_, noted := probe.(tsql.NotedRepointer)
				probe.Close()
				if noted && tc.halfDone {
					t.Skip("the engine repoints every view in one transaction")
				}
				ledgerPath := filepath.Join(t.TempDir(), "state.duckdb")
				func() { // set up, then close everything: the child must be able to open the files
					e, err := tsql.Create(ctx, url)
					if err != nil {
						t.Fatal(err)
					}
					defer e.Close()
					warehouse(t, e, 100)
					l := ledgertest.OpenAt(t, ledgerPath)
					defer l.Close()
					s := views.New("w", e, l)
					if _, err := s.Versions(ctx, "orders"); err != nil {
						t.Fatal(err)
					}
					record(t, s, "orders", 2, views.StateValidated, 7)
					record(t, s, "daily_revenue", 2, views.StateValidated, 7)
				}()

				child := exec.Command(os.Args[0], "-test.run=^TestCrashBetweenIntentAndOutcome$", "-test.count=1")
				child.Env = append(os.Environ(), "TRUEUP_VIEWS_CRASH="+tc.stage, "TRUEUP_VIEWS_WAREHOUSE="+url, "TRUEUP_VIEWS_LEDGER="+ledgerPath)
				out, err := child.CombinedOutput()
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != crashExit {
					t.Fatalf("child: %v, want exit %d:\n%s", err, crashExit, out)
				}

				e := sqltest.Open(t, url)
				if tc.halfDone {
					pointView(t, e, "orders", 2)
				}
				if tc.gone {
					if err := e.DropTable(ctx, views.Physical("daily_revenue", 2)); err != nil {
						t.Fatal(err)
					}
				}
				l := ledgertest.OpenAt(t, ledgerPath)
				s := views.New("w", e, l)
				h, _ := s.History(ctx, "orders", 0)
				if noted {
					if len(h) != 0 {
						t.Fatalf("before recovery the ledger should hold nothing of the swap: %+v", h)
					}
				} else {
					if len(h) != 1 || h[0].State != views.PublishIntent {
						t.Fatalf("before recovery the ledger should hold one intent: %+v", h)
					}
					if l, _ := s.Versions(ctx, "orders"); l.Busy == nil || l.Busy.Holder != "ann" {
						t.Errorf("before recovery the lock row of the dead swap should be visible: %+v", l.Busy)
					}
				}

				repairs, err := views.Recover(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				h, _ = s.History(ctx, "orders", 0)
				switch {
				case noted && tc.wantState == views.PublishAbandoned:
					// died before the engine committed: nothing happened, no swap to settle
					if len(h) != 0 || strings.Contains(fmt.Sprint(repairs), "swap") {
						t.Errorf("after recovery: history %+v, repairs %+v; want no swap", h, repairs)
					}
				case len(repairs) == 0:
					t.Error("recovery reported nothing")
				case len(h) != 1 || h[0].State != tc.wantState || !strings.Contains(h[0].Detail, "recovered after a crash"):
					t.Errorf("after recovery: %+v, want state %s", h, tc.wantState)
				case h[0].Actor != "ann" || h[0].Reason != "the fix" || len(h[0].Changes) != 2:
					t.Errorf("after recovery the swap lost who, why or what: %+v", h[0])
				}
				if tc.gone {
					// settled instead of holding the tables on every start-up; the ledger follows
					// the views, each table on its own
					for table, live := range map[string]int{"orders": 2, "daily_revenue": 1} {
						if src := source(t, e, table); src != views.Physical(table, live) {
							t.Errorf("%s reads %s, want v%d", table, src, live)
						}
						if got := states(t, s, table)[fmt.Sprintf("v%d", live)]; got != views.StateLive {
							t.Errorf("%s v%d is %s in the ledger, want live", table, live, got)
						}
						if l, _ := s.Versions(ctx, table); l.Busy != nil {
							t.Errorf("%s still held after recovery: %+v", table, l.Busy)
						}
					}
					return
				}
				want := map[string]string{"v1": views.StateLive, "v2": views.StateValidated}
				if tc.wantLive == 2 {
					want = map[string]string{"v1": views.StatePrevious, "v2": views.StateLive}
				}
				for _, table := range []string{"orders", "daily_revenue"} {
					if src := source(t, e, table); src != views.Physical(table, tc.wantLive) {
						t.Errorf("%s reads %s, want v%d", table, src, tc.wantLive)
					}
					if diff := cmp.Diff(want, states(t, s, table)); diff != "" {
						t.Errorf("%s: ledger disagrees with the view (-want +got):\n%s", table, diff)
					}
				}
				// The tables are free: the next operation goes through.
				if tc.wantLive == 1 {
					_, err = s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann"})
				} else {
					_, err = s.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "ann"})
				}
				if err != nil {
					t.Errorf("after recovery: %v", err)
				}
			})
		}
	}
}

// crashChild swaps orders to v2 and dies at stage, as a killed process would: no deferred
// clean-up, nothing closed.
func crashChild(t *testing.T, stage string) {
	ctx := context.Background()
	e, err := tsql.Open(ctx, os.Getenv("TRUEUP_VIEWS_WAREHOUSE"))
	if err != nil {
		t.Fatal(err)
	}
	l := ledgertest.OpenAt(t, os.Getenv("TRUEUP_VIEWS_LEDGER"))
	die := func(views.Publish) { os.Exit(crashExit) }
	var hooks views.Hooks
	switch stage {
	case "after-intent":
		hooks.AfterIntent = die
	case "after-repoint":
		hooks.AfterRepoint = die
	default:
		t.Fatalf("unknown stage %q", stage)
	}
	s := views.New("w", e, l, views.WithHooks(hooks))
	_, err = s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann", Reason: "the fix"})
	t.Fatalf("swap returned instead of crashing: %v", err)
}

// TestRecoverRepairsAViewChangedOutsideTrueup: a pipeline repointed a view behind trueup's back;
// recovery makes the ledger follow the view.
func TestRecoverRepairsAViewChangedOutsideTrueup(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, e tsql.Engine) {
		ctx := context.Background()
		warehouse(t, e, 50)
		l := ledgertest.Open(t)
		s := views.New("w", e, l)
		if _, err := views.Recover(ctx, s); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]string{"v1": views.StateLive, "v2": views.StatePrevious}, states(t, s, "orders")); diff != "" {
			t.Errorf("adopted (-want +got):\n%s", diff)
		}
		pointView(t, e, "orders", 2)
		repairs, err := views.Recover(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		var what []string
		for _, r := range repairs {
			what = append(what, r.Table+": "+r.What)
		}
		want := []string{"orders: v1 live → previous (the view reads v2)", "orders: v2 previous → live (the view reads v2)"}
		if diff := cmp.Diff(want, what); diff != "" {
			t.Errorf("repairs (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]string{"v1": views.StatePrevious, "v2": views.StateLive}, states(t, s, "orders")); diff != "" {
			t.Errorf("repaired (-want +got):\n%s", diff)
		}
		var repaired int
		for _, a := range audit(t, l) {
			if a.Action == "version.repair" && a.Target == "orders" {
				repaired++
			}
		}
		if repaired != 2 {
			t.Errorf("%d version.repair audit entries, want 2", repaired)
		}
	})
}

// TestRecoverFromNotes: on DuckDB a rollback that dies after the warehouse committed (views and
// notes) and before the ledger recorded it is recorded by recovery from the notes, as the
// rollback it was — who, why, the swap it took back — and the versions' states follow. A second
// ledger over the same warehouse does not take those notes for its own crashes.
func TestRecoverFromNotes(t *testing.T) {
	ctx := context.Background()
	e := sqltest.Open(t, sqltest.DuckDBURL(t))
	warehouse(t, e, 100)
	dir := t.TempDir()
	l := ledgertest.OpenAt(t, filepath.Join(dir, "state.duckdb"))
	s := views.New("w", e, l)
	validatedRun(t, s)
	swap, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann", Reason: "the fix"})
	if err != nil {
		t.Fatal(err)
	}

	type crash struct{}
	dying := views.New("w", e, l, views.WithHooks(views.Hooks{AfterRepoint: func(views.Publish) { panic(crash{}) }}))
	func() {
		defer func() {
			if _, ok := recover().(crash); !ok {
				t.Fatal("the rollback did not reach its repoint")
			}
		}()
		dying.Rollback(ctx, views.RollbackRequest{Table: "orders", Actor: "bob", Reason: "numbers look off"})
	}()
	for _, table := range []string{"orders", "daily_revenue"} {
		if src := source(t, e, table); src != views.Physical(table, 1) {
			t.Fatalf("%s reads %s after the dead rollback's repoint, want v1", table, src)
		}
	}
	if h, _ := s.History(ctx, "orders", 0); len(h) != 1 {
		t.Fatalf("the ledger should know only the swap before recovery: %+v", h)
	}

	// Another ledger on the same warehouse: the notes are not its own.
	other := views.New("w", e, ledgertest.OpenAt(t, filepath.Join(dir, "other.duckdb")))
	if _, err := views.Recover(ctx, other); err != nil {
		t.Fatal(err)
	}
	if h, _ := other.History(ctx, "orders", 0); len(h) != 0 {
		t.Errorf("another ledger recorded this ledger's publishes: %+v", h)
	}

	repairs, err := views.Recover(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(repairs), "rollback") {
		t.Errorf("recovery did not report the rollback: %+v", repairs)
	}
	h, _ := s.History(ctx, "orders", 0)
	if len(h) != 2 {
		t.Fatalf("history after recovery: %+v", h)
	}
	rb := h[0]
	if rb.Kind != views.KindRollback || rb.State != views.PublishDone || rb.Actor != "bob" || rb.Reason != "numbers look off" ||
		rb.Undoes != swap.ID || !strings.Contains(rb.Detail, "recovered after a crash") || len(rb.Changes) != 2 {
		t.Errorf("recovered rollback: %+v", rb)
	}
	if h[1].ID != swap.ID || h[1].UndoneBy != rb.ID {
		t.Errorf("the swap is not marked as taken back by the recovered rollback: %+v", h[1])
	}
	want := map[string]string{"v1": views.StateLive, "v2": views.StatePrevious}
	for _, table := range []string{"orders", "daily_revenue"} {
		if diff := cmp.Diff(want, states(t, s, table)); diff != "" {
			t.Errorf("%s after recovery (-want +got):\n%s", table, diff)
		}
	}
	// Recovering again finds nothing new.
	if _, err := views.Recover(ctx, s); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.History(ctx, "orders", 0); len(h) != 2 {
		t.Errorf("a second recovery recorded the rollback again: %+v", h)
	}
	// And the tables are free: the swap can be made again.
	if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann", Reason: "again"}); err != nil {
		t.Errorf("swap after recovery: %v", err)
	}
}

// TestOutcomeLostKeepsTablesHeld: on DuckDB, when the views moved and the ledger cannot record it,
// the tables stay held — a second swap or rollback is refused, naming the first and asking for a
// restart — until recovery, at the next start-up, records the publish from the views' notes.
func TestOutcomeLostKeepsTablesHeld(t *testing.T) {
	ctx := context.Background()
	e := sqltest.Open(t, sqltest.DuckDBURL(t))
	warehouse(t, e, 100)
	makeVersion(t, e, "orders", 3, 100, 3)
	path := filepath.Join(t.TempDir(), "state.duckdb")
	l := ledgertest.OpenAt(t, path)
	s := views.New("w", e, l)
	validatedRun(t, s)
	record(t, s, "orders", 3, views.StateValidated, 0)
	// The ledger can still be read, but no outcome can be written: it has nowhere to audit.
	if _, err := l.DB().ExecContext(ctx, `ALTER TABLE audit_log RENAME TO audit_log_gone`); err != nil {
		t.Fatal(err)
	}
	_, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v2", Actor: "ann", Reason: "the fix"})
	if err == nil || !strings.Contains(err.Error(), "stay held") {
		t.Fatalf("swap whose outcome was lost: %v", err)
	}
	if src := source(t, e, "orders"); src != "orders__v2" {
		t.Fatalf("orders reads %s, want v2 (the views did move)", src)
	}
	if _, err := l.DB().ExecContext(ctx, `ALTER TABLE audit_log_gone RENAME TO audit_log`); err != nil {
		t.Fatal(err)
	}
	other := views.New("w", e, l) // any Service on this ledger
	_, err = other.Swap(ctx, views.SwapRequest{Table: "orders", To: "v3", Actor: "bob"})
	var ce *views.ConflictError
	if !errors.As(err, &ce) || ce.Holder != "ann" || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("second swap while the first is unrecorded: %v, want a conflict naming ann and a restart", err)
	}
	if _, err := other.Rollback(ctx, views.RollbackRequest{Table: "daily_revenue", Actor: "bob"}); err == nil {
		t.Fatal("rollback while the swap is unrecorded went through")
	}
	if src := source(t, e, "orders"); src != "orders__v2" {
		t.Fatalf("orders reads %s, want v2", src)
	}

	// Restart: a new process opens the ledger and recovers.
	l.Close()
	l = ledgertest.OpenAt(t, path)
	s = views.New("w", e, l)
	if _, err := views.Recover(ctx, s); err != nil {
		t.Fatal(err)
	}
	h, _ := s.History(ctx, "orders", 0)
	if len(h) != 1 || h[0].Actor != "ann" || h[0].State != views.PublishDone {
		t.Fatalf("history after recovery: %+v", h)
	}
	if got := states(t, s, "orders"); got["v2"] != views.StateLive || got["v1"] != views.StatePrevious {
		t.Errorf("orders states after recovery: %v", got)
	}
	if _, err := s.Swap(ctx, views.SwapRequest{Table: "orders", To: "v3", Actor: "bob"}); err != nil {
		t.Errorf("swap after recovery: %v", err)
	}
}
