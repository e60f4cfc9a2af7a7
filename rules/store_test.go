package rules

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
)

func openStore(t *testing.T) *Store {
	t.Helper()
	l := ledgertest.Open(t)
	return NewStore(l)
}

// saveHourly saves one run of the given statuses an hour apart from t0.
func saveHourly(t *testing.T, s *Store, t0 time.Time, runs []map[string]Status) {
	t.Helper()
	for i, st := range runs {
		if _, err := s.SaveRun(t.Context(), runOf(t0.Add(time.Duration(i)*time.Hour), st), ""); err != nil {
			t.Fatal(err)
		}
	}
}

func runOf(at time.Time, statuses map[string]Status) *Run {
	run := &Run{Trigger: "schedule", Started: at, Finished: at, Queries: 2}
	for _, name := range []string{"a", "b"} {
		st, ok := statuses[name]
		if !ok {
			continue
		}
		res := Result{Rule: name, Kind: Totals, Severity: SeverityError, Status: st, At: at,
			FailingPartitions: []string{}, Sample: []Row{}, SQL: "SELECT 1"}
		if st == StatusFail {
			res.Violations, res.FailingPartitions = 2, []string{"2026-07-10", "2026-07-11"}
			res.Sample = []Row{{{Name: "partition", Value: "2026-07-10"}, {Name: "value", Value: 40.5}, {Name: "reference", Value: int64(42)}}}
			res.Message = "2 partitions differ"
		}
		run.Results = append(run.Results, res)
	}
	return run
}

// TestStoreAlertsOnChange: results land in the ledger; an alert is raised only when a rule's
// status changes, and a rule whose first result passes raises none.
func TestStoreAlertsOnChange(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	t0 := time.Date(2026, 7, 10, 6, 0, 0, 0, time.UTC)
	steps := []map[string]Status{
		{"a": StatusPass, "b": StatusFail},  // b's first result fails: alert
		{"a": StatusPass, "b": StatusFail},  // nothing changed
		{"a": StatusFail, "b": StatusFail},  // a: pass → fail
		{"a": StatusFail},                   // a still failing
		{"a": StatusPass, "b": StatusError}, // a recovers, b errors
	}
	var got []string
	for i, st := range steps {
		run := runOf(t0.Add(time.Duration(i)*time.Hour), st)
		alerts, err := s.SaveRun(ctx, run, "")
		if err != nil {
			t.Fatal(err)
		}
		if run.ID != int64(i+1) || run.Results[0].RunID != run.ID {
			t.Errorf("run id %d, result run id %d", run.ID, run.Results[0].RunID)
		}
		for _, a := range alerts {
			got = append(got, a.Rule+": "+string(a.From)+" → "+string(a.To))
		}
	}
	want := []string{"b:  → fail", "a: pass → fail", "a: fail → pass", "b: fail → error"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("alerts (-want +got):\n%s", diff)
	}
	stored, err := s.Alerts(ctx, "", 0)
	if err != nil || len(stored) != 4 || stored[0].Rule != "b" || stored[0].To != StatusError {
		t.Errorf("stored alerts %+v, %v", stored, err)
	}

	hist, err := s.History(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	var statuses []Status
	for _, h := range hist {
		statuses = append(statuses, h.Status)
	}
	if diff := cmp.Diff([]Status{StatusPass, StatusFail, StatusFail, StatusPass, StatusPass}, statuses); diff != "" {
		t.Errorf("history of a, newest first (-want +got):\n%s", diff)
	}
	failed := hist[1]
	wantSample := []Row{{{Name: "partition", Value: "2026-07-10"}, {Name: "value", Value: 40.5}, {Name: "reference", Value: int64(42)}}}
	if diff := cmp.Diff(wantSample, failed.Sample); diff != "" {
		t.Errorf("sample round trip (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"2026-07-10", "2026-07-11"}, failed.FailingPartitions); diff != "" {
		t.Errorf("failing partitions (-want +got):\n%s", diff)
	}
	states, err := s.States(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a := states["a"]; a.Status != StatusPass || !a.Since.Equal(t0.Add(4*time.Hour)) || a.LastRunID != 5 {
		t.Errorf("state of a: %+v", a)
	}
	if b := states["b"]; b.Status != StatusError || b.LastRunID != 5 {
		t.Errorf("state of b: %+v", b)
	}
	var queries, failures int
	if err := s.l.DB().QueryRowContext(ctx, "SELECT queries, failed FROM rule_runs WHERE id = 3").Scan(&queries, &failures); err != nil || queries != 2 || failures != 2 {
		t.Errorf("run 3 recorded %d queries and %d failures (%v), want 2 and 2", queries, failures, err)
	}
	latest, err := s.Latest(ctx)
	if err != nil || latest["b"].Status != StatusError || latest["a"].RunID != 5 {
		t.Errorf("latest: %+v, %v", latest, err)
	}
}

func TestStoreSchemaSnapshot(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	if _, ok, err := s.SchemaSnapshot(ctx, "x", "warehouse", "orders"); ok || err != nil {
		t.Fatalf("empty store: ok %v err %v", ok, err)
	}
	cols := []tsql.Column{{Name: "id", Type: "BIGINT", Kind: tsql.TypeInt}, {Name: "d", Type: "DATE", Kind: tsql.TypeDate, Nullable: true}}
	for i := 0; i < 2; i++ { // recording twice replaces
		if err := s.RecordSchema(ctx, "x", "warehouse", "orders", cols[:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := s.SchemaSnapshot(ctx, "x", "warehouse", "orders")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if diff := cmp.Diff(cols, got); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	// another target or table has a snapshot of its own
	for _, other := range [][2]string{{"staging", "orders"}, {"warehouse", "orders_v2"}} {
		if _, ok, _ := s.SchemaSnapshot(ctx, "x", other[0], other[1]); ok {
			t.Errorf("%s.%s read the snapshot of warehouse.orders", other[0], other[1])
		}
	}
	if err := s.RecordSchema(ctx, "x", "staging", "orders", cols[:1]); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.SchemaSnapshot(ctx, "x", "warehouse", "orders"); len(got) != 2 {
		t.Errorf("recording staging's snapshot replaced warehouse's: %v", got)
	}
}

// TestStoreSendAlerts: every recorded alert is handed on once, oldest first, and marked
// delivered; one whose send failed waits for the next call; nothing is handed on twice.
func TestStoreSendAlerts(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	t0 := time.Date(2026, 7, 10, 6, 0, 0, 0, time.UTC)
	saveHourly(t, s, t0, []map[string]Status{
		{"a": StatusPass, "b": StatusFail}, // b: → fail
		{"a": StatusFail, "b": StatusFail}, // a: pass → fail
	})
	var handed []string
	send := func(fail string) func(context.Context, Alert) error {
		return func(_ context.Context, a Alert) error {
			if a.Rule == fail {
				return errors.New("outbox unavailable")
			}
			handed = append(handed, a.Rule+" → "+string(a.To))
			return nil
		}
	}
	steps := []struct {
		name   string
		fail   string
		sent   int
		err    bool
		handed []string
	}{
		{"a_send_fails", "a", 1, true, []string{"b → fail"}},
		{"the_failed_one_goes_next_time", "", 1, false, []string{"a → fail"}},
		{"nothing_left", "", 0, false, nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			handed = nil
			n, err := s.SendAlerts(ctx, send(st.fail))
			if n != st.sent || (err != nil) != st.err {
				t.Errorf("sent %d, err %v; want %d, error %v", n, err, st.sent, st.err)
			}
			if diff := cmp.Diff(st.handed, handed); diff != "" {
				t.Errorf("handed on (-want +got):\n%s", diff)
			}
		})
	}
	stored, err := s.Alerts(ctx, "", 0)
	if err != nil || len(stored) != 2 {
		t.Fatalf("stored alerts %+v, %v", stored, err)
	}
	for _, a := range stored {
		if a.DeliveredAt.IsZero() {
			t.Errorf("alert %d of %s has no delivered_at", a.ID, a.Rule)
		}
	}
	// a new change after the sweep is the only one the next sweep hands on
	if _, err := s.SaveRun(ctx, runOf(t0.Add(2*time.Hour), map[string]Status{"a": StatusPass}), ""); err != nil {
		t.Fatal(err)
	}
	handed = nil
	if n, err := s.SendAlerts(ctx, send("")); n != 1 || err != nil || cmp.Diff([]string{"a → pass"}, handed) != "" {
		t.Errorf("after a recovery: sent %d (%v), handed %v", n, err, handed)
	}
}

// TestOlderAlertsMigration: alerts recorded before delivered_at was written are history, not
// sent at the upgrade; those raised after it are.
func TestOlderAlertsMigration(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	t0 := time.Date(2026, 7, 10, 6, 0, 0, 0, time.UTC)
	saveHourly(t, s, t0, []map[string]Status{
		{"a": StatusPass, "b": StatusFail}, // b: → fail
		{"a": StatusFail, "b": StatusFail}, // a: pass → fail
		{"a": StatusPass, "b": StatusFail}, // a: fail → pass
	})
	migration, err := os.ReadFile(filepath.Join("..", "ledger", "migrations", "0010_rule_alerts_sent.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.l.DB().ExecContext(ctx, string(migration)); err != nil {
		t.Fatal(err)
	}
	var handed []string
	if _, err := s.SendAlerts(ctx, func(_ context.Context, a Alert) error {
		handed = append(handed, a.Rule+": "+string(a.From)+" → "+string(a.To))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(handed) != 0 {
		t.Errorf("alerts from before the upgrade handed on: %v", handed)
	}
	// what is raised after it is handed on
	if _, err := s.SaveRun(ctx, runOf(t0.Add(3*time.Hour), map[string]Status{"a": StatusFail, "b": StatusFail}), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendAlerts(ctx, func(_ context.Context, a Alert) error {
		handed = append(handed, a.Rule+": "+string(a.From)+" → "+string(a.To))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a: pass → fail"}, handed); diff != "" {
		t.Errorf("handed on after the upgrade (-want +got):\n%s", diff)
	}
}
