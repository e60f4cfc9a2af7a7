// Command trueup is the CLI and server. This package only wires: config → targets → services →
// CLI or HTTP server. It is the one place that knows every package.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// Exit codes (DESIGN.md): 0 success, 1 a check or validation failed, 2 bad usage, config or input.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// usageError is bad usage or bad input: exit 2 with a one-line cause.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// failedError is a check that ran and failed: exit 1.
type failedError struct{ msg string }

func (e failedError) Error() string { return e.msg }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what a command gets: its streams and the global flags.
type env struct {
	stdout, stderr io.Writer
	globals        globals
}

func commands() []command {
	return []command{
		{"serve", "run the server: pages, JSON API, scheduled rules", runServe},
		{"demo", "write the demo project and warehouse, then serve it", runDemo},
		{"check", "run the project's rules once and report (text, json or junit)", runCheck},
		{"backfill", "plan, dry-run, run, resume, cancel and verify backfills", runBackfill},
		{"notice", "list, show, announce, withdraw and complete change notices; deliver the outbox", runNotice},
		{"diff", "compare two relations per partition and per row, judged against expectations", runDiff},
		{"versions", "list a logical table's versions; --retire an old one", runVersions},
		{"swap", "make a validated version live, with its downstream tables, atomically", runSwap},
		{"rollback", "take back the swap in effect on a table, atomically", runRollback},
		{"token", "make an API token and the trueup.yaml line that holds its hash", runToken},
		{"version", "print the version", runVersion},
	}
}

var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr}
	rest, err := e.globals.parseLeading(args)
	if err != nil {
		fmt.Fprintf(stderr, "trueup: %v\n", err)
		usage(stderr)
		return exitUsage
	}
	if len(rest) == 0 || rest[0] == "help" || rest[0] == "-h" || rest[0] == "--help" {
		usage(stderr)
		if len(rest) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == rest[0] {
			return exitCode(stderr, c.run(ctx, e, rest[1:]))
		}
	}
	fmt.Fprintf(stderr, "trueup: unknown command %q\n", rest[0])
	usage(stderr)
	return exitUsage
}

func exitCode(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var ue usageError
	var fe failedError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "trueup: %v\n", oneLine(err))
		return exitUsage
	case errors.As(err, &fe):
		fmt.Fprintf(stderr, "trueup: %v\n", oneLine(err))
		return exitFailed
	case errors.Is(err, context.Canceled):
		return exitFailed
	}
	fmt.Fprintf(stderr, "trueup: %v\n", oneLine(err))
	return exitFailed
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: trueup [--config FILE] [--target NAME|URL] [--server URL [--token TOKEN]] COMMAND [flags]")
	fmt.Fprintln(w, "\ncommands:")
	cs := commands()
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'trueup COMMAND --help' for a command's flags.")
}

func runVersion(_ context.Context, e *env, args []string) error {
	fs := e.flags("version")
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "trueup", version)
	return nil
}
