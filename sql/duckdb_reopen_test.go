package sql_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	tsql "trueup/sql"
)

// TestReopenWhileAQueryRuns: a DuckDB engine closed while one of its queries still runs (a
// caller that gave up on it) leaves the file open for the next opener in the process. DuckDB
// keeps the database alive for the running query's connection; closed under it, the database
// was shutting down until that connection closed, and DuckDB's instance cache busy-spins while
// the file's database shuts down: the next open of the file spun at full CPU until the query
// ended (seen: a test hung 19 minutes).
func TestReopenWhileAQueryRuns(t *testing.T) {
	ctx := context.Background()
	url := "duckdb:" + filepath.Join(t.TempDir(), "w.duckdb")
	first, err := tsql.Create(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Exec(ctx, "CREATE TABLE t AS SELECT range AS i FROM range(10)"); err != nil {
		t.Fatal(err)
	}
	reading, release := make(chan struct{}), make(chan struct{})
	queryDone := make(chan error, 1)
	go func() {
		once := false
		queryDone <- first.Each(ctx, "SELECT i FROM t", nil, func([]any) error {
			if !once {
				once = true
				close(reading)
				<-release
			}
			return nil
		})
	}()
	<-reading
	first.Close()

	opened := make(chan error, 1)
	go func() {
		again, err := tsql.Open(ctx, url)
		if err == nil {
			_, err = again.Query(ctx, "SELECT count(*) FROM t")
			again.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Errorf("open again while the first engine's query runs: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("open again while the first engine's query runs: still opening after 20 s")
		defer func() { <-opened }() // once the query ends
	}
	close(release)
	<-queryDone
}
