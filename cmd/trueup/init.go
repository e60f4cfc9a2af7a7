package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	flow "trueup/app"
	"trueup/config"
	tsql "trueup/sql"
)

// maxAdoptShown is how many `trueup adopt` lines init prints; the rest are counted.
const maxAdoptShown = 10

// runInit makes a project in a folder: trueup.yaml, .gitignore, and rules/, backfills/ and
// exposures/ with a commented-out example each. It never overwrites a file: what exists is
// kept and said. With --target it first connects and lists what the target holds, so a target
// that cannot be opened leaves nothing written; a DuckDB file is made only with --create.
func runInit(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	dir := fs.String("dir", ".", "folder to make the project in (made when missing)")
	create := fs.Bool("create", false, "make the DuckDB file of --target duckdb:PATH when there is none (a new, empty warehouse)")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if e.globals.server != "" {
		return usagef("init: makes a project in a folder here; it does not go through --server")
	}
	if c := e.globals.configOrDefault(); c != "trueup.yaml" {
		return usagef("init: --config %s: init writes DIR/trueup.yaml; name the folder with --dir", c)
	}
	target := e.globals.target
	if target != "" && !tsql.IsURL(target) {
		return usagef("init: --target %q: want a URL (duckdb:PATH, clickhouse://host:port/db); there is no trueup.yaml to name targets in yet", target)
	}
	duckPath, _, isFile := tsql.DuckDBFile(target)
	if *create && !isFile {
		return usagef("init: --create makes a DuckDB file: use it with --target duckdb:PATH")
	}
	var survey *flow.Survey
	if target != "" {
		s, err := surveyTarget(ctx, target, duckPath, *dir, *create)
		if err != nil {
			return err
		}
		survey = s
	}
	files, err := config.NewProject(config.ProjectOptions{TargetURL: projectURL(target, *dir)})
	if err != nil {
		return err
	}
	wrote, kept, err := writeProject(*dir, files)
	if err != nil {
		return err
	}
	reportInit(e, *dir, target, wrote, kept, survey)
	return nil
}

// surveyTarget opens target (making its DuckDB file with create) and reads what it holds.
func surveyTarget(ctx context.Context, target, duckPath, dir string, create bool) (*flow.Survey, error) {
	open := tsql.Open
	if duckPath != "" {
		if _, err := os.Stat(duckPath); errors.Is(err, os.ErrNotExist) {
			if !create {
				return nil, usagef("init: --target %s: there is no DuckDB file at %s (pass --create to make a new, empty warehouse there)", target, duckPath)
			}
			// the warehouse may be meant inside the project's folder, which may not exist yet
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, usagef("init: %v", err)
			}
			open = tsql.Create
		}
	}
	en, err := open(ctx, target)
	if err != nil {
		return nil, badInput(fmt.Errorf("init: %w", err))
	}
	defer en.Close()
	return flow.SurveyTarget(ctx, "warehouse", en)
}

// projectURL is target as trueup.yaml in dir holds it: a DuckDB path relative to dir when the
// file is inside it (the config resolves paths beside itself, not where init ran), else
// absolute.
func projectURL(target, dir string) string {
	p, rest, ok := tsql.DuckDBFile(target)
	if !ok {
		return target
	}
	abs, err1 := filepath.Abs(p)
	absDir, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return target
	}
	if rel, err := filepath.Rel(absDir, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "duckdb:" + filepath.ToSlash(rel) + rest
	}
	return "duckdb:" + abs + rest
}

// writeProject writes each file that does not exist yet, making folders as needed, and never
// touches one that does: wrote and kept name them.
func writeProject(dir string, files []config.ProjectFile) (wrote, kept []string, err error) {
	for _, f := range files {
		path := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return wrote, kept, usagef("init: %v", err)
		}
		out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			kept = append(kept, f.Path)
			continue
		}
		if err != nil {
			return wrote, kept, usagef("init: %v", err)
		}
		_, err = out.Write(f.Data)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return wrote, kept, fmt.Errorf("init: %s: %w", path, err)
		}
		wrote = append(wrote, f.Path)
	}
	return wrote, kept, nil
}

// reportInit says what was written and kept, what the target holds, and what to run next.
func reportInit(e *env, dir, target string, wrote, kept []string, s *flow.Survey) {
	w := e.stdout
	where := dir
	if abs, err := filepath.Abs(dir); err == nil {
		where = abs
	}
	if len(wrote) == 0 {
		fmt.Fprintf(w, "A project exists in %s: nothing written, every file kept as it is:\n", where)
	} else {
		fmt.Fprintf(w, "Made a project in %s:\n", where)
		for _, p := range wrote {
			fmt.Fprintf(w, "  wrote %s%s\n", p, fileNote(p))
		}
	}
	for _, p := range kept {
		fmt.Fprintf(w, "  kept  %s (exists)\n", p)
	}
	if !ignoresState(filepath.Join(dir, ".gitignore")) {
		fmt.Fprintf(w, "  note  .gitignore does not leave out %s (trueup's state): add a line /%s\n", config.StateFile, config.StateFile)
	}
	if target != "" && slices.Contains(kept, "trueup.yaml") {
		fmt.Fprintf(w, "  note  trueup.yaml was kept: its targets are its own, %s is not written into it\n", tsql.Redact(target))
	}
	if tsql.Redact(target) != target && slices.Contains(wrote, "trueup.yaml") {
		fmt.Fprintln(e.stderr, "init: trueup.yaml holds the target URL's credentials: keep it out of version control others can read")
	}
	if s != nil {
		writeSurvey(w, s)
	}
	fmt.Fprintln(w, "\nNext:")
	if dir != "." {
		fmt.Fprintf(w, "  cd %s\n", dir)
	}
	if target == "" {
		fmt.Fprintln(w, "  (edit trueup.yaml: name your warehouse under targets.warehouse.url, or run trueup init --target URL)")
	}
	if s != nil {
		for i, t := range s.Adoptable {
			if i == maxAdoptShown {
				fmt.Fprintf(w, "  … and %d more tables to adopt\n", len(s.Adoptable)-maxAdoptShown)
				break
			}
			fmt.Fprintf(w, "  trueup adopt %-20s # make it a logical table: a view %s over %s__v1\n", t, t, t)
		}
	}
	fmt.Fprintln(w, "  trueup check                     # run the rules (switch on rules/example/orders_every_day.sql, or write your own)")
}

func fileNote(p string) string {
	if strings.HasSuffix(p, ".sql") {
		return " (an example, commented out)"
	}
	return ""
}

// ignoresState reports whether the .gitignore at path names the state file; true when there
// is none to read (init wrote one, or could not, and said so).
func ignoresState(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return true
	}
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == config.StateFile || l == "/"+config.StateFile || l == "*.duckdb" {
			return true
		}
	}
	return false
}

func writeSurvey(w io.Writer, s *flow.Survey) {
	fmt.Fprintf(w, "\n%s (%s %s): %d logical %s, %d %s, %d other %s\n", s.Info.Target, s.Info.Kind, s.Info.Version,
		len(s.Logical), pluralWord(len(s.Logical), "table", "tables"), len(s.Tables), pluralWord(len(s.Tables), "table", "tables"),
		len(s.Views), pluralWord(len(s.Views), "view", "views"))
	if len(s.Logical) > 0 {
		fmt.Fprintln(w, "  logical tables (a view over NAME__vN: trueup can rebuild, swap and roll them back):")
		for _, t := range s.Logical {
			fmt.Fprintf(w, "    %-24s live %s, versions %s, %d rows\n", t.Name, t.Live, strings.Join(t.Versions, " "), t.Rows)
		}
	}
	if len(s.Tables) > 0 {
		fmt.Fprintln(w, "  tables:")
		for _, t := range s.Tables {
			fmt.Fprintf(w, "    %s\n", t)
		}
	}
	if len(s.Views) > 0 {
		fmt.Fprintln(w, "  views:")
		for _, v := range s.Views {
			fmt.Fprintf(w, "    %s\n", v)
		}
	}
}
