package rules

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"trueup/fault"
	"trueup/sqlfile"
)

// Problem is one thing wrong with a rule file, at a line.
type Problem = sqlfile.Problem

// LoadError lists every problem of a rule set, one a line: that is what the user reads. It is
// a fault.Invalid.
type LoadError struct{ Problems []Problem }

func (e *LoadError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func (e *LoadError) Is(target error) bool { return target == fault.ErrInvalid }

func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Path != ps[j].Path {
			return ps[i].Path < ps[j].Path
		}
		return ps[i].Line < ps[j].Line
	})
}

var commonKeys = []string{"kind", "rule", "description", "severity", "owner", "tags", "schedule", "target", "warn_if", "error_if"}

// kindKeys are the keys each kind takes besides the common ones; required ones come first
// in requiredKeys.
var kindKeys = map[Kind][]string{
	Completeness:   {"table", "partition", "grain", "expect", "reference", "reference_target", "reference_partition", "not_null", "min_rows", "where"},
	Uniqueness:     {"table", "columns", "partition", "grain", "nulls", "where"},
	Totals:         {"table", "partition", "grain", "measure", "reference", "reference_target", "reference_partition", "reference_measure", "tolerance", "where"},
	Distribution:   {"table", "partition", "grain", "dimension", "measure", "baseline", "threshold", "where"},
	Relationships:  {"table", "column", "parent", "parent_column", "partition", "grain", "where"},
	Freshness:      {"table", "column", "max_age", "where"},
	Schema:         {"table"},
	Custom:         {"partition"},
	AcceptedValues: {"table", "column", "values", "partition", "grain", "where"},
	AcceptedRange:  {"table", "column", "min", "max", "inclusive", "partition", "grain", "where"},
	Expression:     {"table", "expression", "partition", "grain", "where"},
	RowCount:       {"table", "min", "max", "partition", "grain", "where"},
	NotConstant:    {"table", "column", "partition", "grain", "where"},
	Pattern:        {"table", "column", "regex", "negate", "partition", "grain", "where"},
}

var requiredKeys = map[Kind][]string{
	Completeness:   {"table"},
	Uniqueness:     {"table", "columns"},
	Totals:         {"table", "partition", "measure"},
	Distribution:   {"table", "partition", "dimension"},
	Relationships:  {"table", "column", "parent"},
	Freshness:      {"table", "column", "max_age"},
	Schema:         {"table"},
	AcceptedValues: {"table", "column", "values"},
	AcceptedRange:  {"table", "column"},
	Expression:     {"table", "expression"},
	RowCount:       {"table"},
	NotConstant:    {"table", "column"},
	Pattern:        {"table", "column", "regex"},
}

var (
	tagRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)
)

type header struct {
	value string
	line  int
}

// ParseFS parses every rules file (*.sql, in any folder) of fsys. prefix is put before the
// paths in messages, e.g. "rules". The returned error is a *LoadError with every problem found.
func ParseFS(fsys fs.FS, prefix string) ([]*Rule, error) {
	var out []*Rule
	var parsed []Problem
	names := map[string]*Rule{}
	nameLine := map[*Rule]int{}
	tooLarge, err := sqlfile.ReadEach(fsys, prefix, func(shown, text string) {
		r, line, ps := parseFile(shown, text)
		parsed = append(parsed, ps...)
		if r == nil {
			return
		}
		if prev, dup := names[r.Name]; dup {
			parsed = append(parsed, Problem{Path: shown, Line: line, Msg: fmt.Sprintf("rule %s is already defined in %s:%d", r.Name, prev.Path, nameLine[prev])})
			return
		}
		names[r.Name] = r
		nameLine[r] = line
		out = append(out, r)
	})
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	problems := append([]Problem(tooLarge), parsed...)
	if len(problems) > 0 {
		sortProblems(problems)
		return out, &LoadError{problems}
	}
	return out, nil
}

// Parse parses one rule file's text; shown is its path in messages.
func Parse(shown, text string) (*Rule, error) {
	r, _, ps := parseFile(shown, text)
	if len(ps) > 0 {
		return r, &LoadError{ps}
	}
	return r, nil
}

// parseFile returns the rule (nil when it is unusable), the line naming it and the problems.
func parseFile(shown, text string) (*Rule, int, []Problem) {
	var problems []Problem
	bad := func(line int, format string, args ...any) {
		problems = append(problems, Problem{Path: shown, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
	f := sqlfile.Scan(shown, text)
	problems = append(problems, f.Problems()...)
	keys := map[string]header{}
	for k, v := range f.Keys {
		keys[k] = header{v.Value, v.Line}
	}
	body, bodyLine := f.Body, f.BodyLine

	r := &Rule{Path: shown, Severity: SeverityError, Grain: "day", Baseline: 7, Threshold: 0.10, lines: map[string]int{}}
	for k, h := range keys {
		r.lines[k] = h.line
	}
	name := strings.TrimSuffix(path.Base(shown), ".sql")
	nameLine := 1
	if h, ok := keys["rule"]; ok {
		name, nameLine = h.value, h.line
	}
	if !sqlfile.ValidName(name) {
		bad(nameLine, "rule name %q: %s (rename the file or set rule:)", name, sqlfile.NameChars)
	}
	r.Name = name

	kh, ok := keys["kind"]
	if !ok {
		bad(1, "missing kind: (one of %s)", kindList())
		return nil, nameLine, problems
	}
	r.Kind = Kind(kh.value)
	allowed, known := kindKeys[r.Kind]
	if !known {
		bad(kh.line, "kind %q: want one of %s", kh.value, kindList())
		return nil, nameLine, problems
	}
	ok2 := map[string]bool{}
	for _, k := range append(append([]string{}, commonKeys...), allowed...) {
		ok2[k] = true
	}
	for _, k := range sortedKeys(keys) {
		h := keys[k]
		if !ok2[k] {
			bad(h.line, "unknown key %s for kind %s (it takes %s)", k, r.Kind, strings.Join(allowed, ", "))
			continue
		}
		if h.value == "" {
			bad(h.line, "key %s has no value", k)
		}
	}
	for _, k := range requiredKeys[r.Kind] {
		if _, ok := keys[k]; !ok {
			bad(1, "kind %s needs %s:", r.Kind, k)
		}
	}
	p := &fieldParser{keys: keys, bad: bad}
	p.fill(r)
	p.body(r, body, bodyLine)
	p.crossCheck(r)
	r.broken = len(problems) > 0
	return r, nameLine, problems
}

func kindList() string {
	var s []string
	for _, k := range Kinds() {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

func sortedKeys(m map[string]header) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return m[out[i]].line < m[out[j]].line })
	return out
}
