package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"trueup/fault"
)

// globals are the flags every command takes, before or after its name.
type globals struct {
	config string
	target string
	server string // a running trueup's URL: the command goes through its JSON API
	token  string // the API token for --server; TRUEUP_TOKEN when not given
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.config, "config", g.configOrDefault(), "project config file")
	fs.StringVar(&g.target, "target", g.target, "target name from the config, or a URL (duckdb:PATH, clickhouse://host:port/db)")
	fs.StringVar(&g.server, "server", g.server, "run the command through a running trueup at this URL (http://host:port)")
	fs.StringVar(&g.token, "token", g.token, "API token for --server (default: $TRUEUP_TOKEN)")
}

func (g *globals) configOrDefault() string {
	if g.config == "" {
		return "trueup.yaml"
	}
	return g.config
}

// parseLeading reads global flags that come before the command name.
func (g *globals) parseLeading(args []string) ([]string, error) {
	fs := flag.NewFlagSet("trueup", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return fs.Args(), nil
}

// flags is a command's flag set, carrying the global flags too.
func (e *env) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("trueup "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	e.globals.register(fs)
	return fs
}

// parse parses a command's flags; help is not an error, anything else bad is a usage error.
func parse(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(out, "usage of %s:\n", fs.Name())
		fs.PrintDefaults()
		return fault.New(fault.Invalid, "help requested")
	}
	if err != nil {
		return usagef("%s: %v", fs.Name(), err)
	}
	return nil
}

// verbFlags is the verb of a command that takes one first (trueup backfill run NAME), naming the
// command's flag set fs after both; without a verb it is bad usage, usage the line that says so.
func verbFlags(fs *flag.FlagSet, args []string, usage string) (string, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "", usagef("usage: trueup %s", usage)
	}
	fs.Init(fs.Name()+" "+args[0], flag.ContinueOnError)
	return args[0], nil
}

// formatFlag is a command's --format, text or json; oneTable, or checkFormat after parsing,
// refuses any other.
func formatFlag(fs *flag.FlagSet) *string { return fs.String("format", "text", "output: text or json") }

// checkFormat refuses a --format other than text or json, naming the command cmd.
func checkFormat(cmd, format string) error {
	if format != "text" && format != "json" {
		return usagef("%s: --format %q: want text or json", cmd, format)
	}
	return nil
}

// noArgs rejects positional arguments a command does not take.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), strings.Join(fs.Args(), " "))
	}
	return nil
}

// parseMixed parses flags that may come before or after a command's positional arguments
// (trueup backfill plan NAME --format json), and returns the positional ones.
func parseMixed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
