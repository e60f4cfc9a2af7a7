package config_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/config"
)

// newConfig is the trueup.yaml NewProject writes for o.
func newConfig(t *testing.T, o config.ProjectOptions) string {
	t.Helper()
	files, err := config.NewProject(o)
	if err != nil {
		t.Fatal(err)
	}
	if files[0].Path != "trueup.yaml" {
		t.Fatalf("first file is %s, want trueup.yaml", files[0].Path)
	}
	return string(files[0].Data)
}

// uncomment switches on the commented-out sections whose top-level key is one of keys (every
// one for none): the "# " lines from "# key:" to the next blank line lose their "# ".
func uncomment(text string, keys ...string) string {
	lines := strings.Split(text, "\n")
	on := false
	top := regexp.MustCompile(`^# ([a-z_]+):`)
	for i, l := range lines {
		if m := top.FindStringSubmatch(l); m != nil {
			on = len(keys) == 0 || strings.Contains(" "+strings.Join(keys, " ")+" ", " "+m[1]+" ")
		}
		if l == "" {
			on = false
		}
		if on {
			lines[i] = strings.TrimPrefix(l, "# ")
		}
	}
	return strings.Join(lines, "\n")
}

// The config of a new project loads as it is, and with each commented section switched on,
// alone or all together; switched on, each says what it says.
func TestNewProjectConfigLoads(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		target string
		want   string // the target URL the loaded config resolves
	}{
		{"no_target", "", "duckdb::memory:"},
		{"duckdb_relative", "duckdb:wh.duckdb", "duckdb:" + filepath.Join(dir, "wh.duckdb")},
		{"clickhouse", "clickhouse://u:p%22w@127.0.0.1:9000/db", "clickhouse://u:p%22w@127.0.0.1:9000/db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := newConfig(t, config.ProjectOptions{TargetURL: tc.target})
			path := filepath.Join(dir, "trueup.yaml")
			c, err := config.Parse(path, []byte(text))
			if err != nil {
				t.Fatalf("as written: %v\n%s", err, text)
			}
			url, _ := c.TargetURL("")
			if url != tc.want || c.StatePath() != filepath.Join(dir, config.StateFile) {
				t.Errorf("target %s, state %s; want %s beside the config", url, c.StatePath(), tc.want)
			}
			if len(c.Auth.Tokens) != 0 || c.Notify.PublicURL != "" || c.Retention.KeepVersions != 0 {
				t.Errorf("a commented section is on as written: %+v %+v %+v", c.Auth, c.Notify, c.Retention)
			}
			for _, keys := range [][]string{{"server"}, {"retention"}, {"auth"}, {"notify"}, nil} {
				on := uncomment(text, keys...)
				if on == text {
					t.Fatalf("uncommenting %v changed nothing", keys)
				}
				c, err := config.Parse(path, []byte(on))
				if err != nil {
					t.Fatalf("with %v switched on: %v\n%s", keys, err, on)
				}
				if keys == nil {
					got := []any{c.Server.Addr, c.Retention.KeepVersions, c.Retention.Auto, len(c.Auth.Tokens), c.Notify.PublicURL, len(c.Notify.Subscriptions), c.Notify.Email.SMTP}
					want := []any{"127.0.0.1:8080", 3, true, 1, "https://trueup.example.com", 2, "smtp.example.com:587"}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("all switched on (-want +got):\n%s", diff)
					}
				}
			}
		})
	}
}

// Every example is commented out line by line; removing the first "-- " of each line gives
// the example back (the rules, backfill and notices packages parse it: cmd/trueup's init tests).
func TestNewProjectExamplesCommentedOut(t *testing.T) {
	files, err := config.NewProject(config.ProjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
		if !strings.HasSuffix(f.Path, ".sql") {
			continue
		}
		for i, l := range strings.Split(strings.TrimSuffix(string(f.Data), "\n"), "\n") {
			if l != "--" && !strings.HasPrefix(l, "-- ") {
				t.Errorf("%s:%d is not commented out: %q", f.Path, i+1, l)
			}
		}
	}
	want := []string{"trueup.yaml", ".gitignore", "rules/example/orders_every_day.sql", "backfills/example.sql", "exposures/example.sql"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	for _, f := range files {
		if f.Path == ".gitignore" && !strings.Contains(string(f.Data), "\n/"+config.StateFile+"\n") {
			t.Errorf(".gitignore does not leave out the state file:\n%s", f.Data)
		}
	}
}
