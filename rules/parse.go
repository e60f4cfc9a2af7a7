package rules

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
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
	Totals:         {"table", "partition", "grain", "measure", "reference", "reference_target", "reference_partition", "reference_measure", "tolerance", "group_by", "where"},
	Distribution:   {"table", "partition", "grain", "dimension", "measure", "baseline", "threshold", "min_rows", "where"},
	Relationships:  {"table", "column", "parent", "parent_column", "partition", "grain", "where"},
	Freshness:      {"table", "column", "max_age", "group_by", "allow_future", "where"},
	Schema:         {"table", "columns", "ordered"},
	Custom:         {"partition"},
	AcceptedValues: {"table", "column", "values", "partition", "grain", "where"},
	AcceptedRange:  {"table", "column", "min", "max", "inclusive", "partition", "grain", "where"},
	Expression:     {"table", "expression", "partition", "grain", "where"},
	RowCount:       {"table", "min", "max", "inclusive", "compare_to", "compare_to_target", "tolerance", "partition", "grain", "where"},
	NotConstant:    {"table", "column", "partition", "grain", "where"},
	Pattern:        {"table", "column", "regex", "negate", "partition", "grain", "where"},
	Equality:       {"table", "compare_to", "compare_to_target", "columns", "where"},
}

var requiredKeys = map[Kind][]string{
	Completeness:   {"table"},
	Uniqueness:     {"table", "columns"},
	Totals:         {"table", "measure"},
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
	Equality:       {"table", "compare_to"},
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
		rules, lines, ps := parseText(shown, text)
		parsed = append(parsed, ps...)
		for i, r := range rules {
			if prev, dup := names[r.Name]; dup {
				parsed = append(parsed, Problem{Path: shown, Line: lines[i], Msg: fmt.Sprintf("rule %s is already defined in %s:%d", r.Name, prev.Path, nameLine[prev])})
				continue
			}
			names[r.Name] = r
			nameLine[r] = lines[i]
			out = append(out, r)
		}
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

// Parse parses one rule file's text; shown is its path in messages. It returns the file's
// first rule (see ParseAll for a file of several).
func Parse(shown, text string) (*Rule, error) {
	rules, err := ParseAll(shown, text)
	if len(rules) == 0 {
		return nil, err
	}
	return rules[0], err
}

// ParseAll parses one rule file's text, which may hold several rules.
func ParseAll(shown, text string) ([]*Rule, error) {
	rules, _, ps := parseText(shown, text)
	if len(ps) > 0 {
		return rules, &LoadError{ps}
	}
	return rules, nil
}

// Separator is the line between the rules of a file of several.
const Separator = "-- ---"

// blocks splits a file at its separator lines. Each block keeps the file's line numbers: the
// lines before it are blank (which a header may start after), so a problem found in it is at
// the file's line.
func blocks(text string) (texts []string, firsts []int) {
	lines := strings.Split(strings.TrimPrefix(text, sqlfile.ByteOrderMark), "\n")
	start := 0
	for i := 0; i <= len(lines); i++ {
		if i < len(lines) && strings.TrimSpace(lines[i]) != Separator {
			continue
		}
		texts = append(texts, strings.Repeat("\n", start)+strings.Join(lines[start:i], "\n"))
		firsts = append(firsts, start+1)
		start = i + 1
	}
	return texts, firsts
}

// parseText returns the usable rules of a file, the lines naming them and the problems. The
// rules of a file of several each need rule:; those after the first take its table: unless
// they set their own.
func parseText(shown, text string) ([]*Rule, []int, []Problem) {
	all, allFirsts := blocks(text)
	// a block of blank lines and plain comments only (a trailing separator, a commented-out
	// rule) holds no rule
	var texts []string
	var firsts []int
	for i, t := range all {
		if f := sqlfile.Scan(shown, t); len(f.Keys) > 0 || f.Body != "" || len(all) == 1 {
			texts, firsts = append(texts, t), append(firsts, allFirsts[i])
		}
	}
	var rules []*Rule
	var lines []int
	var problems []Problem
	var table *header
	for i, t := range texts {
		if i == 0 {
			if k, ok := sqlfile.Scan(shown, t).Keys["table"]; ok {
				table = &header{k.Value, k.Line}
			}
		}
		r, line, ps := parseFile(shown, t, block{first: firsts[i], several: len(texts) > 1, table: table})
		problems = append(problems, ps...)
		if r != nil {
			rules = append(rules, r)
			lines = append(lines, line)
		}
	}
	return rules, lines, problems
}

// block is where a rule stands in its file.
type block struct {
	first   int     // the line it starts on
	several bool    // the file holds several rules
	table   *header // the first rule's table:, inherited
}

// parseFile returns the rule of one block (nil when it is unusable), the line naming it and
// the problems.
func parseFile(shown, text string, b block) (*Rule, int, []Problem) {
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
	first := b.first
	if first == 0 {
		first = 1
	}
	body, bodyLine := f.Body, f.BodyLine

	r := &Rule{Path: shown, Severity: SeverityError, Grain: "day", Baseline: 7, Threshold: 0.10, lines: map[string]int{}, first: first}
	name := strings.TrimSuffix(path.Base(shown), ".sql")
	nameLine := first
	if h, ok := keys["rule"]; ok {
		name, nameLine = h.value, h.line
	} else if b.several {
		bad(first, "a file of several rules needs rule: in each of them")
	}
	if !sqlfile.ValidName(name) {
		bad(nameLine, "rule name %q: %s (rename the file or set rule:)", name, sqlfile.NameChars)
	}
	r.Name = name

	kh, ok := keys["kind"]
	if !ok {
		bad(first, "missing kind: (one of %s)", kindList())
		return nil, nameLine, problems
	}
	r.Kind = Kind(kh.value)
	allowed, known := kindKeys[r.Kind]
	if !known {
		bad(kh.line, "kind %q: want one of %s", kh.value, kindList())
		return nil, nameLine, problems
	}
	if _, ok := keys["table"]; !ok && b.table != nil && slices.Contains(allowed, "table") {
		keys["table"] = *b.table
	}
	for k, h := range keys {
		r.lines[k] = h.line
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
			bad(first, "kind %s needs %s:", r.Kind, k)
		}
	}
	p := &fieldParser{keys: keys, bad: bad, first: first}
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
