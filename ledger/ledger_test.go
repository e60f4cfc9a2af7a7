package ledger_test

import (
	"context"
	dbsql "database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"trueup/ledger"
	"trueup/ledger/ledgertest"
	tsql "trueup/sql"
)

func TestMigrationsAndAudit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.duckdb")
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	l := ledgertest.OpenAt(t, path, ledger.WithClock(func() time.Time { return now }))
	v1, err := l.SchemaVersion(ctx)
	if err != nil || v1 < 1 {
		t.Fatalf("schema version %d, %v", v1, err)
	}
	for i, a := range []string{"backfill.run", "view.swap", "view.swap"} {
		if _, err := l.Audit(ctx, ledger.Entry{Actor: "ann", Action: a, Target: "orders",
			Params: map[string]any{"to": "v2", "n": i}, Outcome: ledger.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Audit(ctx, ledger.Entry{Action: "x"}); err == nil {
		t.Error("an entry without actor and outcome was accepted")
	}
	l.Close()

	// Reopening applies nothing twice and keeps every entry.
	l = ledgertest.OpenAt(t, path)
	if v2, _ := l.SchemaVersion(ctx); v2 != v1 {
		t.Errorf("schema version moved from %d to %d on reopen", v1, v2)
	}
	got, err := l.AuditLog(ctx, ledger.AuditFilter{Action: "view.swap"})
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.Entry{
		{ID: 3, At: now, Actor: "ann", Action: "view.swap", Target: "orders", Params: map[string]any{"to": "v2", "n": 2.0}, Outcome: "ok"},
		{ID: 2, At: now, Actor: "ann", Action: "view.swap", Target: "orders", Params: map[string]any{"to": "v2", "n": 1.0}, Outcome: "ok"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit log (-want +got):\n%s", diff)
	}
}

func TestAuditTxRollsBackWithTheAction(t *testing.T) {
	ctx := context.Background()
	l := ledgertest.Open(t)
	boom := errors.New("boom")
	err := l.Tx(ctx, func(tx *dbsql.Tx) error {
		if _, err := l.AuditTx(ctx, tx, ledger.Entry{Actor: "a", Action: "view.swap", Outcome: "ok"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if got, _ := l.AuditLog(ctx, ledger.AuditFilter{}); len(got) != 0 {
		t.Errorf("rolled-back entry is in the log: %v", got)
	}
}

// TestLockedFile opens the ledger from a second process while this one holds it.
func TestLockedFile(t *testing.T) {
	if os.Getenv("TRUEUP_LEDGER_CHILD") != "" {
		_, err := ledger.Open(context.Background(), os.Getenv("TRUEUP_LEDGER_CHILD"))
		if err == nil {
			os.Exit(0)
		}
		os.Stderr.WriteString(err.Error())
		if errors.Is(err, tsql.ErrLocked) {
			os.Exit(3)
		}
		os.Exit(4)
	}
	path := filepath.Join(t.TempDir(), "state.duckdb")
	ledgertest.OpenAt(t, path) // held until the test ends
	cmd := exec.Command(os.Args[0], "-test.run", "^TestLockedFile$")
	cmd.Env = append(os.Environ(), "TRUEUP_LEDGER_CHILD="+path)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("second open: %v: %s", err, out)
	}
	if !strings.Contains(string(out), path) || !strings.Contains(string(out), "held by process") {
		t.Errorf("message does not name the file and the holder: %s", out)
	}
}

// TestAuditLogLimit: a reader gets the window it asks for up to MaxAuditLimit+1 rows (one more
// than a full window, to tell whether more follow), and no more than that when it asks for more
// (a limit above 1000 was reset to 100).
func TestAuditLogLimit(t *testing.T) {
	ctx := t.Context()
	l := ledgertest.Open(t)
	if _, err := l.DB().ExecContext(ctx, `INSERT INTO audit_log (at_time, actor, action, target, params, outcome)
		SELECT now(), 'ann', 'view.swap', 't' || range, '{}', 'ok' FROM range(1010)`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		limit, want int
	}{
		{"default", 0, 100},
		{"max", ledger.MaxAuditLimit, ledger.MaxAuditLimit},
		{"max_and_one", ledger.MaxAuditLimit + 1, ledger.MaxAuditLimit + 1},
		{"above_is_clamped", 5000, ledger.MaxAuditLimit + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.AuditLog(ctx, ledger.AuditFilter{Limit: tc.limit})
			if err != nil || len(got) != tc.want {
				t.Errorf("limit %d: %d entries, %v; want %d", tc.limit, len(got), err, tc.want)
			}
		})
	}
}

// TestShared: the users of one open ledger get one value per key, made once; another key or
// another ledger gets its own.
func TestShared(t *testing.T) {
	type key struct{ name string }
	made := 0
	newCount := func() any { made++; return new(int) }
	a, b := ledgertest.Open(t), ledgertest.Open(t)
	first := a.Shared(key{"w"}, newCount)
	if again := a.Shared(key{"w"}, newCount); again != first || made != 1 {
		t.Errorf("the same key on the same ledger: a new value (made %d times)", made)
	}
	if a.Shared(key{"other"}, newCount) == first {
		t.Error("another key got the same value")
	}
	if b.Shared(key{"w"}, newCount) == first {
		t.Error("another ledger got the same value")
	}
	if made != 3 {
		t.Errorf("made %d values, want 3", made)
	}
}
