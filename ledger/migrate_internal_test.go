package ledger

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// TestMigrationsWrittenInParallel applies a migration numbered below one already applied: two
// branches can each add one, and the lower number must not be skipped on the older state file.
func TestMigrationsWrittenInParallel(t *testing.T) {
	ctx := context.Background()
	l, err := Open(ctx, filepath.Join(t.TempDir(), "state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	first := fstest.MapFS{
		"migrations/9001_a.sql": {Data: []byte("CREATE TABLE a (x INTEGER);")},
		"migrations/9003_c.sql": {Data: []byte("CREATE TABLE c (x INTEGER);")},
	}
	real, _ := fs.Glob(migrations, "migrations/*.sql")
	for _, name := range real {
		data, _ := fs.ReadFile(migrations, name)
		first[name] = &fstest.MapFile{Data: data}
	}
	if err := l.migrateFS(ctx, first); err != nil {
		t.Fatal(err)
	}
	first["migrations/9002_b.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE b (x INTEGER);")}
	if err := l.migrateFS(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DB().ExecContext(ctx, "INSERT INTO b VALUES (1)"); err != nil {
		t.Errorf("migration 9002 was skipped: %v", err)
	}
	delete(first, "migrations/9003_c.sql")
	if err := l.migrateFS(ctx, first); err == nil || !strings.Contains(err.Error(), "newer trueup") {
		t.Errorf("a state file with a migration this build lacks: %v", err)
	}
}
