// Package config reads trueup.yaml: the targets, the ledger file, the server and the project
// folders. Reading is strict: an unknown key, a missing target or a bad URL is an error that
// names the file and line, and nothing is opened or written.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"trueup/fault"
	tsql "trueup/sql"

	"trueup/sqlfile"
)

// A config that cannot be used is a fault.Invalid whose message names the file and line and
// says what is wrong there (callers ask errors.Is(err, fault.ErrInvalid)).

// Config is a parsed trueup.yaml. Paths in it are resolved against Dir.
type Config struct {
	// Path is the file this was read from; Dir its folder.
	Path string `yaml:"-"`
	Dir  string `yaml:"-"`

	// State is the ledger's DuckDB file (default trueup-state.duckdb beside the config).
	State string `yaml:"state"`
	// DefaultTarget names the target used when a command or file names none.
	DefaultTarget string            `yaml:"default_target"`
	Targets       map[string]Target `yaml:"targets"`
	Server        Server            `yaml:"server"`
	// Retention says how long old versions of logical tables are kept (views).
	Retention Retention `yaml:"retention"`
	// Notify configures notice delivery: channels and subscriptions (notices).
	Notify Notify `yaml:"notify"`
	// Auth configures API tokens and roles (server).
	Auth Auth `yaml:"auth"`
	// Backfill holds the settings of backfill runs (backfill).
	Backfill Backfill `yaml:"backfill"`
}

// Target is one engine connection.
type Target struct {
	// URL is duckdb:PATH, duckdb::memory: or clickhouse://host:port/db.
	URL string `yaml:"url"`
}

// Server holds the HTTP server's settings.
type Server struct {
	Addr string `yaml:"addr"`
}

// Load reads and validates path. A file over sqlfile.MaxSize is refused unread, as the other
// files a user writes are.
func Load(path string) (*Config, error) {
	text, err := sqlfile.ReadFile(path)
	var tooLarge sqlfile.Problems
	switch {
	case errors.As(err, &tooLarge):
		return nil, fault.Mark(fault.Invalid, err)
	case errors.Is(err, os.ErrNotExist):
		return nil, NotFound(path)
	case err != nil:
		return nil, fault.New(fault.Invalid, "%s: %v", path, err)
	}
	return Parse(path, []byte(text))
}

// NotFound is the error of a config file that does not exist: it names the folder it was looked
// for in and the command that makes a project there.
func NotFound(path string) error {
	dir := filepath.Dir(path)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return fault.New(fault.Invalid, "%s not found in %s: run trueup init to make a project (or pass --config)", filepath.Base(path), dir)
}

// Parse validates the YAML text of a config read from path.
func Parse(path string, data []byte) (*Config, error) {
	data = bytes.TrimPrefix(data, []byte(sqlfile.ByteOrderMark))
	if err := notText(path, data); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	c := &Config{Path: path, Dir: filepath.Dir(abs)}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fault.New(fault.Invalid, "%s", yamlError(path, err))
	}
	if err := c.validate(data); err != nil {
		return nil, err
	}
	return c, nil
}

// notText refuses bytes that are not YAML text, naming their line: yaml.v3 says only "control
// characters are not allowed" or "invalid leading UTF-8 octet", with no line, when it meets a NUL
// byte, a control character or bytes that are not UTF-8 (a binary or a Latin-1 file).
func notText(path string, data []byte) error {
	line := 1
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			return fault.New(fault.Invalid, "%s:%d: byte 0x%02x is not UTF-8: trueup.yaml must be UTF-8 text", path, line, data[i])
		case r == '\n':
			line++
		case r == '\t' || r == '\r':
		case r < 0x20 || r == 0x7f:
			return fault.New(fault.Invalid, "%s:%d: control character 0x%02x: trueup.yaml must be text, not a binary file", path, line, r)
		}
		i += n
	}
	return nil
}

// goType is the Go type yaml.v3 names in an unknown field's error.
var goType = regexp.MustCompile(` in type ([\w.*\[\]]+)$`)

// sectionKeys are the YAML keys of the section decoded into the config type named (as yaml.v3
// names it, "config.Target"), found among the types reachable from Config.
func sectionKeys(name string) []string {
	var keys []string
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		var own []string
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if tag != "" && tag != "-" {
				own = append(own, tag)
			}
			walk(f.Type)
		}
		if t.String() == name && keys == nil {
			keys = own
		}
	}
	walk(reflect.TypeFor[Config]())
	return keys
}

// yamlError turns yaml.v3's "yaml: line N: msg" into "path:N: msg".
func yamlError(path string, err error) string {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	// "field bogus not found in type config.Target": the Go type is ours, not the reader's;
	// the keys the section takes are.
	msg = goType.ReplaceAllStringFunc(msg, func(m string) string {
		if keys := sectionKeys(goType.FindStringSubmatch(m)[1]); len(keys) > 0 {
			return " (allowed: " + strings.Join(keys, ", ") + ")"
		}
		return ""
	})
	if strings.HasPrefix(msg, "line ") {
		if i := strings.Index(msg, ": "); i > 0 {
			return path + ":" + strings.TrimPrefix(msg[:i], "line ") + ": " + msg[i+2:]
		}
	}
	return path + ": " + msg
}

// lineOf finds the line that first mentions key, for errors found after decoding.
func lineOf(data []byte, key string) int {
	for i, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), key+":") {
			return i + 1
		}
	}
	return 1
}

func (c *Config) validate(data []byte) error {
	bad := func(key, format string, args ...any) error {
		return fault.New(fault.Invalid, "%s:%d: %s", c.Path, lineOf(data, key), fmt.Sprintf(format, args...))
	}
	if len(c.Targets) == 0 {
		return bad("targets", "no targets: name at least one, e.g. targets: {warehouse: {url: duckdb:warehouse.duckdb}}")
	}
	for _, name := range c.TargetNames() {
		t := c.Targets[name]
		switch {
		case t.URL == "":
			return bad(name, "target %s: missing url", name)
		case strings.HasPrefix(t.URL, "duckdb:"), strings.HasPrefix(t.URL, "clickhouse://"):
		default:
			return bad(name, "target %s: url %q: want duckdb:PATH, duckdb::memory: or clickhouse://host:port/db", name, t.URL)
		}
	}
	if c.DefaultTarget == "" {
		if len(c.Targets) > 1 {
			return bad("targets", "several targets and no default_target")
		}
		c.DefaultTarget = c.TargetNames()[0]
	}
	if _, ok := c.Targets[c.DefaultTarget]; !ok {
		return bad("default_target", "default_target %q is not one of the targets (%s)", c.DefaultTarget, strings.Join(c.TargetNames(), ", "))
	}
	if c.State == "" {
		c.State = "trueup-state.duckdb"
	}
	if c.Server.Addr == "" {
		c.Server.Addr = "127.0.0.1:8080"
	}
	for _, check := range []func(bad func(key, format string, args ...any) error) error{
		c.Retention.validate, c.Notify.validate, c.Auth.validate, c.Backfill.validate,
	} {
		if err := check(bad); err != nil {
			return err
		}
	}
	return nil
}

// TargetNames lists the targets in name order.
func (c *Config) TargetNames() []string {
	return slices.Sorted(maps.Keys(c.Targets))
}

// TargetURL returns the URL of a named target with relative DuckDB paths resolved against the
// config's folder. A name that is itself a URL is returned as it is.
func (c *Config) TargetURL(name string) (string, error) {
	if name == "" {
		name = c.DefaultTarget
	}
	if strings.HasPrefix(name, "duckdb:") || strings.HasPrefix(name, "clickhouse://") {
		return name, nil
	}
	t, ok := c.Targets[name]
	if !ok {
		return "", fault.New(fault.Invalid, "unknown target %q (have %s)", name, strings.Join(c.TargetNames(), ", "))
	}
	return c.resolveURL(t.URL), nil
}

func (c *Config) resolveURL(url string) string {
	p, rest, ok := tsql.DuckDBFile(url)
	if !ok || filepath.IsAbs(p) {
		return url
	}
	return "duckdb:" + filepath.Join(c.Dir, p) + rest
}

// StatePath is the ledger file's path.
func (c *Config) StatePath() string {
	if filepath.IsAbs(c.State) {
		return c.State
	}
	return filepath.Join(c.Dir, c.State)
}

// ProjectDir returns a folder of the project (rules, backfills, exposures) beside the config.
func (c *Config) ProjectDir(name string) string { return filepath.Join(c.Dir, name) }
