package config

import (
	"bytes"
	"embed"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"text/template"
)

// The files of a new project (trueup init). Each *.sql.tmpl is a valid rule, backfill or
// exposure file; the project gets it commented out (CommentOut), so it loads as nothing until
// someone edits it.
//
//go:embed template
var projectTemplate embed.FS

// StateFile is the ledger file a new project keeps its state in, beside trueup.yaml.
const StateFile = "trueup-state.duckdb"

// ProjectOptions say what a new project is made of.
type ProjectOptions struct {
	// TargetURL is the warehouse as trueup.yaml holds it (a DuckDB path relative to the
	// project's folder); "" writes an empty in-memory DuckDB for the user to replace.
	TargetURL string
}

// ProjectFile is one file of a new project: its path inside the project's folder, with /.
type ProjectFile struct {
	Path string
	Data []byte
}

// NewProject returns the files of a new project, trueup.yaml first: the config (loadable as
// it is, with its optional sections commented out), a .gitignore for the state file, and one
// commented-out example each in rules/, backfills/ and exposures/.
func NewProject(o ProjectOptions) ([]ProjectFile, error) {
	data := struct{ State, TargetURL string }{StateFile, o.TargetURL}
	funcs := template.FuncMap{"quote": strconv.Quote} // a Go-quoted string is a YAML double-quoted one
	var out []ProjectFile
	err := fs.WalkDir(projectTemplate, "template", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		text, err := fs.ReadFile(projectTemplate, p)
		if err != nil {
			return err
		}
		t, err := template.New(p).Funcs(funcs).Parse(string(text))
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(p, "template/"), ".tmpl")
		switch {
		case name == "gitignore":
			name = ".gitignore"
		case path.Ext(name) == ".sql":
			b = *bytes.NewBufferString(CommentOut(b.String()))
		}
		out = append(out, ProjectFile{Path: name, Data: b.Bytes()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// in the order a reader meets them: the config, what git leaves out, then the folders
	rank := func(p string) int {
		return strings.Index("trueup.yaml .gitignore rules/ backfills/ exposures/", strings.SplitAfter(p, "/")[0])
	}
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i].Path) < rank(out[j].Path) })
	return out, nil
}

// CommentOut puts "-- " before every line of an SQL file ("--" before a blank one), so that
// none is a header line or SQL any more: the loaders skip such a file (sqlfile.CommentedOut),
// and removing the first "-- " of each line gives text back.
func CommentOut(text string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		if l == "" {
			lines[i] = "--"
		} else {
			lines[i] = "-- " + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
