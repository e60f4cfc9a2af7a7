package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	flow "trueup/app"
	tsql "trueup/sql"
)

// Two commands need no project: a diff of two relations named by target URLs, and a check of a
// rules folder against a target URL (issue #17). Without a trueup.yaml they run over the URLs
// alone, with a ledger in memory whose records go when the command ends (said on stderr), or
// the state file of --state. Every other command without a project says which command makes
// one (config.NotFound).

// withoutProject reports whether the command runs without a project: it does not go through
// a server, no other config was named, and there is no trueup.yaml here.
func (g globals) withoutProject() bool {
	if g.server != "" || g.configOrDefault() != "trueup.yaml" {
		return false
	}
	_, err := os.Stat(g.configOrDefault())
	return errors.Is(err, os.ErrNotExist)
}

// openLocal opens the project, or without one (withoutProject) a project of the target URLs
// alone (app.OpenBare) whose state is the file state, or in memory when state is "". need says
// which flags the command takes instead of a project, for the message when a target is not a
// URL. With a project, --state is refused: the project names its own state file.
func openLocal(ctx context.Context, e *env, cmd, state, need string, urls ...string) (*app, error) {
	if !e.globals.withoutProject() {
		if state != "" {
			return nil, usagef("%s: --state is for running without a trueup.yaml; this project keeps its state where its state: says", cmd)
		}
		return openApp(ctx, e.globals)
	}
	for _, u := range urls {
		if !tsql.IsURL(u) {
			return nil, usagef("%s: there is no trueup.yaml here, so %s (or run trueup init to make a project)", cmd, need)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	a, err := flow.OpenBare(ctx, wd, state, urls...)
	if err != nil {
		return nil, err
	}
	if state == "" {
		fmt.Fprintf(e.stderr, "trueup: no trueup.yaml in %s: the %s is printed and not kept (--state FILE keeps it)\n", wd, cmd)
	} else {
		abs, _ := filepath.Abs(state)
		fmt.Fprintf(e.stderr, "trueup: no trueup.yaml in %s: the %s is kept in %s\n", wd, cmd, abs)
	}
	return a, nil
}
