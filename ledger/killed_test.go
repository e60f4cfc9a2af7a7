package ledger_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"trueup/ledger"
)

// TestLedgerChild is the process TestKilledAfterFirstOpen kills: it makes a new ledger, records
// one audit entry, and is killed before it closes anything.
func TestLedgerChild(t *testing.T) {
	path := os.Getenv("TRUEUP_LEDGER_CHILD")
	if path == "" {
		t.Skip("run by TestKilledAfterFirstOpen")
	}
	l, err := ledger.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Audit(context.Background(), ledger.Entry{Actor: "ann", Action: "test.first", Target: "t", Outcome: ledger.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// TestKilledAfterFirstOpen: a process killed right after it made the ledger (a project's first
// command, killed -9) leaves a ledger the next one opens, with what it recorded.
func TestKilledAfterFirstOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.duckdb")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestLedgerChild$")
	cmd.Env = append(os.Environ(), "TRUEUP_LEDGER_CHILD="+path)
	out, _ := cmd.CombinedOutput()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("the child was not killed:\n%s", out)
	}
	l, err := ledger.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("the ledger a killed process made does not open: %v", err)
	}
	defer l.Close()
	var n int
	if err := l.DB().QueryRow("SELECT count(*) FROM audit_log WHERE action = 'test.first'").Scan(&n); err != nil || n != 1 {
		t.Errorf("the entry recorded before the kill: %d, %v", n, err)
	}
}
