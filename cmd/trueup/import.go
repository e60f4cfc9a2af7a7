package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"trueup/fault"
	"trueup/rules"
)

// runImport brings another tool's checks over as rule files: today a dbt project's generic
// tests, from its target/manifest.json. It writes new files only, all of them or none, and
// lists every test it could not map with the reason.
func runImport(_ context.Context, e *env, flags *flag.FlagSet, args []string) error {
	out := flags.String("out", "rules", "the rules folder to write into")
	pos, err := parseMixed(flags, args)
	if err != nil {
		return err
	}
	if e.globals.server != "" {
		return usagef("import: it writes rule files here, and does not work with --server")
	}
	if len(pos) != 2 || pos[0] != "dbt" {
		return usagef("import: want trueup import dbt PATH/target/manifest.json [--out rules/]")
	}
	manifest, err := os.ReadFile(pos[1])
	if err != nil {
		return usagef("import: %v", err)
	}
	imp, err := rules.ImportDBT(pos[1], manifest)
	if err != nil {
		return fault.Mark(fault.Invalid, fmt.Errorf("import: %w", err))
	}
	for _, f := range imp.Files {
		p := filepath.Join(*out, filepath.FromSlash(f.Path))
		if _, err := os.Stat(p); err == nil {
			return usagef("import: %s exists: import writes new files only (move it away, or choose --out)", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return usagef("import: %v", err)
		}
	}
	var written []string
	for _, f := range imp.Files {
		p := filepath.Join(*out, filepath.FromSlash(f.Path))
		if err := writeNew(p, f.Text); err != nil {
			for _, w := range written { // all of them or none
				os.Remove(w)
			}
			return usagef("import: %v: nothing was written", err)
		}
		written = append(written, p)
	}
	for _, f := range imp.Files {
		fmt.Fprintf(e.stdout, "wrote %s: %d %s\n", filepath.Join(*out, filepath.FromSlash(f.Path)), len(f.Rules), pluralWord(len(f.Rules), "rule", "rules"))
	}
	for _, u := range imp.Unmapped {
		fmt.Fprintf(e.stdout, "not imported %s: %s\n", u.Test, u.Reason)
	}
	mapped := 0
	for _, f := range imp.Files {
		mapped += len(f.Rules)
	}
	fmt.Fprintf(e.stdout, "%d of %d tests imported\n", mapped, mapped+len(imp.Unmapped))
	return nil
}

// writeNew writes a file whole or not at all: into a temporary file beside it, then renamed.
func writeNew(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".import-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(text); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
