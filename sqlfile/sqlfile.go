// Package sqlfile reads the files users write: a header of `-- key: value` lines, then SQL.
// Rules, backfills and exposures share this grammar; each package checks its own keys. Every
// problem is reported as path:line: message, all of them at once.
package sqlfile

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Problem is one thing wrong with a file, at a line; Line 0 is the whole file (e.g. too large).
type Problem struct {
	Path string
	Line int
	Msg  string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return p.Path + ": " + p.Msg
	}
	return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Msg)
}

// Problems is every problem of a set of files; it is an error when not empty.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Sort orders problems by file and line.
func (ps Problems) Sort() {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Path != ps[j].Path {
			return ps[i].Path < ps[j].Path
		}
		return ps[i].Line < ps[j].Line
	})
}

// Err returns ps sorted as an error, or nil when there are none.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	ps.Sort()
	return ps
}

// Key is one header value and the line it is on.
type Key struct {
	Value string
	Line  int
}

// File is a scanned file.
type File struct {
	Path     string // as shown in messages
	Name     string // file name without .sql
	Keys     map[string]Key
	Body     string // the SQL after the header, trimmed
	BodyLine int    // line the body starts on (0 when there is none)
	problems Problems
}

// ByteOrderMark is the UTF-8 encoding of U+FEFF, which some editors put at the start of a file.
const ByteOrderMark = "\ufeff"

var keyRe = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*)\s*:(.*)$`)

// nameRe is what a rule or a backfill may be called: letters of any alphabet, digits, _, . and
// -, so a name is one word on a command line and one path segment of a URL (umsätze, исправить).
var nameRe = regexp.MustCompile(`^[\p{L}\p{N}_][\p{L}\p{N}_.-]*$`)

// NameChars says what ValidName accepts, for the messages that refuse a name.
const NameChars = "use letters, digits, _, . and -"

// ValidName reports whether name may name a rule or a backfill.
func ValidName(name string) bool { return nameRe.MatchString(name) }

// Scan reads a file's header and body. Header lines come before the first line that is neither
// blank nor a comment; a comment line indented by two or more spaces right after a key continues
// that key's value; other comment lines that are not `key: value` are plain comments. A UTF-8
// byte-order mark at the start (some Windows editors write one) is not part of the first line.
func Scan(shown, text string) *File {
	f := &File{Path: shown, Name: strings.TrimSuffix(path.Base(shown), ".sql"), Keys: map[string]Key{}}
	text = strings.TrimPrefix(text, ByteOrderMark)
	lines := strings.Split(text, "\n")
	last := ""
	for i, raw := range lines {
		l := strings.TrimSpace(raw)
		if l == "" {
			last = ""
			continue
		}
		if !strings.HasPrefix(l, "--") {
			f.Body, f.BodyLine = strings.TrimSpace(strings.Join(lines[i:], "\n")), i+1
			break
		}
		if rest := l[2:]; last != "" && strings.HasPrefix(rest, "  ") && strings.TrimSpace(rest) != "" {
			k := f.Keys[last]
			k.Value += " " + strings.TrimSpace(rest)
			f.Keys[last] = k
			continue
		}
		last = ""
		m := keyRe.FindStringSubmatch(strings.TrimSpace(l[2:]))
		if m == nil {
			continue
		}
		key, val := m[1], strings.TrimSpace(m[2])
		if prev, dup := f.Keys[key]; dup {
			f.Bad(i+1, "duplicate key %s (first on line %d)", key, prev.Line)
			continue
		}
		f.Keys[key] = Key{val, i + 1}
		last = key
	}
	return f
}

// Bad records a problem at a line.
func (f *File) Bad(line int, format string, args ...any) {
	f.problems = append(f.problems, Problem{f.Path, line, fmt.Sprintf(format, args...)})
}

// BadKey records a problem on a key's line (line 1 when the key is absent).
func (f *File) BadKey(key, format string, args ...any) { f.Bad(f.Line(key), format, args...) }

// Problems returns what was found wrong so far.
func (f *File) Problems() Problems { return f.problems }

// Line is the line of a key, or 1 when it is absent.
func (f *File) Line(key string) int {
	if k, ok := f.Keys[key]; ok {
		return k.Line
	}
	return 1
}

// Get returns a key's value ("" when absent).
func (f *File) Get(key string) string { return f.Keys[key].Value }

// Has reports whether a key is present.
func (f *File) Has(key string) bool { _, ok := f.Keys[key]; return ok }

// Allow reports every key that is not in allowed as unknown, and every key in required that
// is missing.
func (f *File) Allow(allowed, required []string) {
	ok := map[string]bool{}
	for _, k := range allowed {
		ok[k] = true
	}
	for _, k := range required {
		ok[k] = true
	}
	var unknown []string
	for k := range f.Keys {
		if !ok[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		f.BadKey(k, "unknown key %s (allowed: %s)", k, strings.Join(append(append([]string{}, required...), allowed...), ", "))
	}
	for _, k := range required {
		if !f.Has(k) {
			f.Bad(1, "missing key %s", k)
		}
	}
}

// List splits a comma-separated value, trimming blanks.
func List(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Files lists the *.sql files of fsys, in any folder, sorted.
func Files(fsys fs.FS) ([]string, error) {
	var paths []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".sql") {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	return paths, err
}
