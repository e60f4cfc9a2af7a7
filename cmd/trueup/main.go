// Command trueup is the CLI and server. This package only wires: config → targets → services →
// CLI or HTTP server. It is the one place that knows every package.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"trueup/fault"
)

// Exit codes (DESIGN.md): 0 success, 1 a check or validation failed, 2 bad usage, config or input.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// usagef is bad usage or bad input: exit 2 with a one-line cause.
func usagef(format string, args ...any) error { return fault.New(fault.Invalid, format, args...) }

// failedf is a check or validation that ran and failed: exit 1.
func failedf(format string, args ...any) error { return fault.New(fault.Failed, format, args...) }

// badInput marks err, whose text says what is wrong, as bad input: exit 2.
func badInput(err error) error { return fault.Mark(fault.Invalid, err) }

// command is one of trueup's commands. run gets the command's flag set, named after it and
// carrying the global flags (env.flags), to declare its own flags on and parse args with.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, fs *flag.FlagSet, args []string) error
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
		{"init", "make a project here: trueup.yaml, rules/, backfills/, exposures/; --target lists what it holds", runInit},
		{"check", "run the project's rules once and report (text, json or junit)", runCheck},
		{"import", "write rule files from another tool's tests: import dbt PATH/target/manifest.json [--out rules/]", runImport},
		{"backfill", "plan, dry-run, run, resume, cancel and verify backfills", runBackfill},
		{"run", "run a backfill's transform as the pipeline: its latest (or given) windows into the live version", runPipeline},
		{"notice", "list, show, announce, withdraw and complete change notices; deliver the outbox", runNotice},
		{"diff", "compare two relations per partition and per row, judged against expectations", runDiff},
		{"adopt", "turn a plain table into a logical table (its rows become v1 under a view of its name)", runAdopt},
		{"versions", "list a logical table's versions; --retire an old one", runVersions},
		{"swap", "make a validated version live, with its downstream tables, atomically", runSwap},
		{"rollback", "take back the swap in effect on a table, atomically", runRollback},
		{"catch-up", "carry into the live version what was written to an old one after it stopped being live", runCatchUp},
		{"query", "read logical tables as they were: at versions, as of a time, or beside live", runQuery},
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
			return exitCode(stderr, c.run(ctx, e, e.flags(c.name), rest[1:]))
		}
	}
	fmt.Fprintf(stderr, "trueup: unknown command %q\n", rest[0])
	usage(stderr)
	return exitUsage
}

// exitCode is the one place an error becomes an exit code, by its kind (fault): 2 for bad input
// (a file, a flag, a name that does not exist), 1 for a check or validation that failed, a
// conflict, a refusal, or trueup's own failure. Every error is printed as the one line it says:
// its message (fault.Message), the sentence the server answers too, without the operation
// prefixes wrapped around it for a log.
func exitCode(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	k := fault.Of(err)
	if k == fault.None && errors.Is(err, context.Canceled) {
		return exitFailed // interrupted: the user knows
	}
	fmt.Fprintf(stderr, "trueup: %v\n", flatten(fault.Message(err)))
	switch k {
	case fault.NotFound, fault.Invalid:
		return exitUsage
	}
	return exitFailed
}

func oneLine(err error) string { return fault.OneLine(err) }

// flatten is s on one line, its runs of spaces and newlines one space each.
func flatten(s string) string { return strings.Join(strings.Fields(s), " ") }

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

func runVersion(_ context.Context, e *env, fs *flag.FlagSet, args []string) error {
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "trueup", version)
	return nil
}
