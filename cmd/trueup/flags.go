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

// parseVerb parses a command that takes a verb first (trueup backfill run NAME), its flag set fs
// named after both: it returns the verb and the positional arguments after it, which flags may
// come before or after, and refuses a --format (formatFlag) other than text or json. Without a
// verb it is bad usage, usage the line that says so; it begins with the command's name.
func parseVerb(fs *flag.FlagSet, args []string, usage string) (string, []string, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "", nil, usagef("usage: trueup %s", usage)
	}
	fs.Init(fs.Name()+" "+args[0], flag.ContinueOnError)
	pos, err := parseMixed(fs, args[1:])
	if err != nil {
		return "", nil, err
	}
	if err := checkFormat(fs, usage); err != nil {
		return "", nil, err
	}
	return args[0], pos, nil
}

// formatFlag is a command's --format, text or json; oneTable and parseVerb refuse any other
// (checkFormat).
func formatFlag(fs *flag.FlagSet) *string { return fs.String("format", "text", "output: text or json") }

// checkFormat refuses a --format (formatFlag) other than text or json, when fs has one, naming
// the command usage begins with.
func checkFormat(fs *flag.FlagSet, usage string) error {
	f := fs.Lookup("format")
	if f == nil {
		return nil
	}
	if format := f.Value.String(); format != "text" && format != "json" {
		return usagef("%s: --format %q: want text or json", strings.Fields(usage)[0], format)
	}
	return nil
}

// parseFlagsOnly parses a command that takes flags and no positional arguments (parse), and
// rejects any it is given.
func parseFlagsOnly(fs *flag.FlagSet, args []string) error {
	if err := parse(fs, args); err != nil {
		return err
	}
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

// flagSet reports whether the command line gave fs's flag name (a default is not given).
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
