package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestServerModeNonASCIINames: a backfill and a rule named in another alphabet (исправить,
// umsätze) work through --server exactly as locally: the name is escaped once in the URL (it was
// escaped twice, and the server looked for "%D0%B8…"), and a rule's name may use the letters a
// backfill's may.
func TestServerModeNonASCIINames(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	local, served := demoDir(t), demoDir(t)
	for _, dir := range []string{local, served} {
		copyFile(t, filepath.Join(dir, "backfills", "fix_dedup_bug.sql"), filepath.Join(dir, "backfills", "исправить.sql"))
		copyFile(t, filepath.Join(dir, "rules", "orders", "unique_order_id.sql"), filepath.Join(dir, "rules", "orders", "umsätze.sql"))
	}
	srv := serveDemo(t, served)
	for _, tc := range []remoteCase{
		{"check_rule", []string{"check", "--rule", "umsätze", "--format", "json"}, exitOK, "json"},
		{"backfill_plan", []string{"backfill", "plan", "исправить", "--format", "json"}, exitOK, "json"},
		{"backfill_dry_run", []string{"backfill", "dry-run", "исправить", "--from", "2026-07-10", "--to", "2026-07-11", "--format", "json"}, exitOK, "json"},
		{"backfill_run", []string{"backfill", "run", "исправить", "--format", "json"}, exitOK, "json"},
		{"backfill_status", []string{"backfill", "status", "исправить"}, exitOK, "text"},
		{"backfill_unknown", []string{"backfill", "plan", "ошибка"}, exitUsage, "text"},
	} {
		t.Run(tc.name, func(t *testing.T) { compareModes(t, local, srv, tc) })
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
