// Package ledgertest opens ledgers for tests: a state file of the test's own, closed when the
// test ends.
package ledgertest

import (
	"context"
	"path/filepath"
	"testing"

	"trueup/ledger"
)

// Open opens a new, empty ledger in a temp dir of t.
func Open(t testing.TB, opts ...ledger.Option) *ledger.Ledger {
	t.Helper()
	return OpenAt(t, filepath.Join(t.TempDir(), "state.duckdb"), opts...)
}

// OpenAt opens (creating it if needed) the ledger at path, and closes it when the test ends. A
// test may close it sooner, to open the file again.
func OpenAt(t testing.TB, path string, opts ...ledger.Option) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
