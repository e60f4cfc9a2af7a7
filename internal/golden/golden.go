// Package golden keeps tests' expected outputs (rendered SQL, notices, JSON) in files under
// testdata, and rewrites them from what the code now produces when the test binary runs with
// -update (go test ./sql/ -update). A test package gets the flag by importing this one.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata from the outputs")

// Check compares got with testdata/name. Under -update it writes got there instead (making
// testdata when needed) and does not compare.
func Check[T ~string | ~[]byte](t testing.TB, name string, got T) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}
