package rules

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"trueup/cron"
	tsql "trueup/sql"
)

// fieldParser reads typed values out of header keys, reporting bad ones at their line.
type fieldParser struct {
	keys  map[string]header
	bad   func(line int, format string, args ...any)
	first int // the line the rule starts on, for problems of keys it lacks
}

func (p *fieldParser) get(key string) (string, int, bool) {
	h, ok := p.keys[key]
	if !ok || h.value == "" {
		return "", h.line, false
	}
	return h.value, h.line, true
}

func (p *fieldParser) ident(key string) string {
	if v, _, ok := p.get(key); ok {
		if name, quoted := unquoteName(v); quoted {
			return name
		}
	}
	return p.matching(key, identRe, "one column name (in double quotes when it holds spaces or other signs)")
}

// quoteName is name as a rule header takes it: as it is when it is a plain identifier, else in
// double quotes (a quote inside doubled), as unquoteName reads it.
func quoteName(name string) string {
	if name == "" || identRe.MatchString(name) {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// quoteNames is quoteName of each name, joined by ", ".
func quoteNames(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quoteName(n)
	}
	return strings.Join(out, ", ")
}

// unquoteName is v's name when v is one name in double quotes ("order id", a quote inside
// doubled), as a column whose name holds a space or a sign is written in SQL.
func unquoteName(v string) (string, bool) {
	if len(v) < 3 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	inner := v[1 : len(v)-1]
	if strings.ReplaceAll(inner, `""`, "") != strings.ReplaceAll(inner, `"`, "") {
		return "", false // a lone quote inside: not one name
	}
	name := strings.ReplaceAll(inner, `""`, `"`)
	return name, strings.TrimSpace(name) != ""
}

// splitNames splits a list of names at commas and blanks outside double quotes; a quoted
// name comes back quoted (unquoteName reads it).
func splitNames(v string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for _, c := range v {
		switch {
		case c == '"':
			quoted = !quoted
			cur.WriteRune(c)
		case !quoted && (c == ',' || c == ' ' || c == '\t'):
			flush()
		default:
			cur.WriteRune(c)
		}
	}
	flush()
	return out
}

func (p *fieldParser) relation(key string) string {
	return p.matching(key, relationRe, "a table or view name (name or schema.name)")
}

// matching reads key, saying `key "value": want what` (and giving "") where re refuses it.
func (p *fieldParser) matching(key string, re *regexp.Regexp, what string) string {
	v, line, ok := p.get(key)
	if ok && !re.MatchString(v) {
		p.bad(line, "%s %q: want %s", key, v, what)
		return ""
	}
	return v
}

// parsed reads key with parse, saying `key "value": why` where parse refuses it; the zero T
// when the key is not given. A refused value is still returned, as parse left it.
func parsed[T any](p *fieldParser, key string, parse func(string) (T, error)) T {
	v, line, ok := p.get(key)
	if !ok {
		var zero T
		return zero
	}
	x, err := parse(v)
	if err != nil {
		p.bad(line, "%s %q: %v", key, v, err)
	}
	return x
}

// checkedExpression is a measure as written, checked to be one SQL expression.
func checkedExpression(v string) (string, error) {
	return v, expression(v)
}

func (p *fieldParser) list(key string, re *regexp.Regexp, what string) []string {
	v, line, ok := p.get(key)
	if !ok {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range splitNames(v) {
		name, quoted := unquoteName(f)
		quoted = quoted && re == identRe // a column name may be quoted; a tag may not
		if !quoted {
			name = f
		}
		switch {
		case !quoted && !re.MatchString(f):
			p.bad(line, "%s: %q is not a %s", key, f, what)
		case seen[name]:
			p.bad(line, "%s: %s is listed twice", key, name)
		default:
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

func (p *fieldParser) fill(r *Rule) {
	r.Description, _, _ = p.get("description")
	r.Owner, _, _ = p.get("owner")
	r.Target, _, _ = p.get("target")
	if v, line, ok := p.get("severity"); ok {
		switch Severity(v) {
		case SeverityError, SeverityWarn:
			r.Severity = Severity(v)
		default:
			p.bad(line, "severity %q: want error or warn", v)
		}
	}
	r.Tags = p.list("tags", tagRe, "tag")
	if v, line, ok := p.get("schedule"); ok {
		s, err := cron.Parse(v)
		if err != nil {
			p.bad(line, "schedule: %v", err)
		}
		r.Schedule = s
	}
	r.Table = p.relation("table")
	r.Partition = p.ident("partition")
	if v, line, ok := p.get("grain"); ok {
		if tsql.ValidGrain(v) {
			r.Grain = v
		} else {
			p.bad(line, "grain %q: want day, hour or month", v)
		}
	}
	if r.Kind == Schema {
		r.Declared = parsed(p, "columns", parseDeclared)
		r.Ordered = parsed(p, "ordered", parseBool)
	} else {
		r.Columns = p.list("columns", identRe, "column name")
	}
	r.NotNull = p.list("not_null", identRe, "column name")
	if v, line, ok := p.get("min_rows"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			p.bad(line, "min_rows %q: want a whole number, 0 or more", v)
		}
		r.MinRows = n
	}
	r.Expect = parsed(p, "expect", parseExpect)
	r.Column = p.ident("column")
	r.Parent = p.relation("parent")
	r.ParentCol = p.ident("parent_column")
	if r.ParentCol == "" {
		r.ParentCol = r.Column
	}
	r.Dimension = p.ident("dimension")
	r.Measure = parsed(p, "measure", checkedExpression)
	if r.Kind == Distribution && r.Measure == "" {
		r.Measure = "count(*)"
	}
	p.reference(r)
	r.Tolerance = parsed(p, "tolerance", parseTolerance)
	if v, line, ok := p.get("baseline"); ok {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSuffix(v, " partitions"), " days"))
		if err != nil || n < 1 || n > 366 {
			p.bad(line, "baseline %q: want the number of trailing partitions, 1 to 366", v)
		}
		r.Baseline = n
	}
	if v, line, ok := p.get("threshold"); ok {
		f, err := parseFraction(v)
		if err != nil || f <= 0 || f >= 1 {
			p.bad(line, "threshold %q: want a share change between 0%% and 100%%, e.g. 5%%", v)
		}
		r.Threshold = f
	}
	r.MaxAge = parsed(p, "max_age", parseAge)
	p.checks(r)
}

// checks reads the keys of the row-by-row kinds and the keys every kind that reads a table
// takes (where:, warn_if:, error_if:).
func (p *fieldParser) checks(r *Rule) {
	r.Where = parsed(p, "where", checkedExpression)
	r.WarnIf = parsed(p, "warn_if", parseThreshold)
	r.ErrorIf = parsed(p, "error_if", parseThreshold)
	for _, k := range []string{"warn_if", "error_if"} {
		t := r.WarnIf
		if k == "error_if" {
			t = r.ErrorIf
		}
		if t != nil && t.Share && (r.Kind == Custom || r.Kind == Schema) {
			p.bad(p.keys[k].line, "%s %s: a share needs the rows of a table, and kind %s reads none: give a count", k, t.Text, r.Kind)
		}
	}
	if v, line, ok := p.get("nulls"); ok {
		switch v {
		case "ignore":
		case "equal":
			r.NullsEqual = true
		default:
			p.bad(line, "nulls %q: want ignore (rows with a NULL in the key are not checked) or equal (NULLs group together)", v)
		}
	}
	r.Values = parsed(p, "values", parseValues)
	r.Expr = parsed(p, "expression", checkedExpression)
	if v, line, ok := p.get("regex"); ok {
		if _, err := regexp.Compile(v); err != nil {
			p.bad(line, "regex %q: %v", v, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
		r.Regex = v
	}
	r.Negate = parsed(p, "negate", parseBool)
	r.GroupBy = p.list("group_by", identRe, "column name")
	if _, ok := p.keys["allow_future"]; ok {
		r.NoFuture = !parsed(p, "allow_future", parseBool)
	}
	if _, ok := p.keys["inclusive"]; ok {
		r.Exclusive = !parsed(p, "inclusive", parseBool)
	}
	switch r.Kind {
	case AcceptedRange:
		r.Min = parsed(p, "min", checkedExpression)
		r.Max = parsed(p, "max", checkedExpression)
		if _, ok := p.keys["min"]; !ok {
			if _, ok := p.keys["max"]; !ok {
				p.bad(p.keys["kind"].line, "kind accepted_range needs min:, max: or both")
			}
		}
	case RowCount:
		p.rowCount(r)
	case Equality:
		p.compareTo(r)
	}
}

// rowCount reads row_count's bounds: numbers of rows, or compare_to (the other relation's
// count, as dbt-utils' fewer_rows_than is max: compare_to); with compare_to and neither, the
// counts must be equal (equal_rowcount), within tolerance.
func (p *fieldParser) rowCount(r *Rule) {
	p.compareTo(r)
	count := func(key string) (*int64, bool) {
		v, line, ok := p.get(key)
		if !ok {
			return nil, false
		}
		if v == "compare_to" {
			if r.Reference.Relation == "" {
				p.bad(line, "%s: compare_to needs compare_to: naming the relation", key)
			}
			return nil, true
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			p.bad(line, "%s %q: want a whole number of rows, 0 or more, or compare_to", key, v)
			return nil, false
		}
		return &n, false
	}
	r.MinCount, r.MinCompare = count("min")
	r.MaxCount, r.MaxCompare = count("max")
	_, hasMin := p.keys["min"]
	_, hasMax := p.keys["max"]
	if !hasMin && !hasMax && r.Reference.Relation == "" {
		if _, ok := p.keys["compare_to"]; !ok {
			p.bad(p.keys["kind"].line, "kind row_count needs min:, max: or compare_to:")
		}
	}
	if h, ok := p.keys["inclusive"]; ok && !hasMin && !hasMax {
		p.bad(h.line, "inclusive applies to the bounds min: and max:")
	}
	if r.MinCount != nil && r.MaxCount != nil && *r.MaxCount < *r.MinCount {
		p.bad(p.keys["max"].line, "max %d is below min %d", *r.MaxCount, *r.MinCount)
	}
	if h, ok := p.keys["tolerance"]; ok && r.Reference.Relation == "" {
		p.bad(h.line, "tolerance applies to a count compared with compare_to:")
	}
}

// compareTo reads compare_to (the other relation) and compare_to_target (its target).
func (p *fieldParser) compareTo(r *Rule) {
	if v, line, ok := p.get("compare_to"); ok {
		if !relationRe.MatchString(v) {
			p.bad(line, "compare_to %q: want a table or view name (name or schema.name)", v)
		}
		r.Reference.Relation, r.Reference.Line = v, line
	}
	r.Reference.Target, _, _ = p.get("compare_to_target")
}

// parseDeclared reads a schema rule's columns: `name TYPE, …`, the type optional (a type may
// hold commas in parentheses, DECIMAL(18,2)).
func parseDeclared(v string) ([]tsql.Column, error) {
	var out []tsql.Column
	seen := map[string]bool{}
	depth, start := 0, 0
	add := func(item string) error {
		item = strings.TrimSpace(item)
		name, typ, _ := strings.Cut(item, " ")
		typ = strings.TrimSpace(typ)
		switch {
		case !identRe.MatchString(name):
			return fmt.Errorf("%q is not a column name (want name TYPE, the type optional)", name)
		case seen[name]:
			return fmt.Errorf("%s is listed twice", name)
		}
		seen[name] = true
		out = append(out, tsql.Column{Name: name, Type: typ})
		return nil
	}
	for i, ch := range v {
		switch ch {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				if err := add(v[start:i]); err != nil {
					return nil, err
				}
				start = i + 1
			}
		}
	}
	if err := add(v[start:]); err != nil {
		return nil, err
	}
	return out, nil
}

func parseBool(v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("want true or false")
}

var thresholdRe = regexp.MustCompile(`^(>=|<=|!=|<>|>|<|=)\s*([0-9]+(?:\.[0-9]+)?)\s*(%?)$`)

// parseThreshold reads a warn_if or error_if: a comparison and a count or a share, `> 10`, `>= 1%`.
func parseThreshold(v string) (*Threshold, error) {
	m := thresholdRe.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return nil, fmt.Errorf("want a comparison with a number of violations or a share of the rows checked, such as > 10 or >= 1%%")
	}
	t := &Threshold{Op: m[1], Text: v}
	if t.Op == "<>" {
		t.Op = "!="
	}
	t.Value, _ = strconv.ParseFloat(m[2], 64)
	if m[3] == "%" {
		t.Share, t.Value = true, t.Value/100
	}
	return t, nil
}

// closedString reports whether a string literal the lexer read ends with its closing quote
// (a doubled quote inside it is one quote, not the end).
func closedString(lit string) bool {
	for i := 1; i < len(lit); i++ {
		if lit[i] == '\'' {
			if i+1 < len(lit) && lit[i+1] == '\'' {
				i++
				continue
			}
			return i == len(lit)-1
		}
	}
	return false
}

// parseValues reads accepted values: SQL literals (strings, numbers, true, false), comma-separated.
func parseValues(v string) ([]string, error) {
	var out []string
	var cur []tsql.Token
	flush := func() error {
		defer func() { cur = nil }()
		if len(cur) == 1 && strings.HasPrefix(cur[0].Text, "'") && cur[0].Literal() {
			if !closedString(cur[0].Text) {
				return fmt.Errorf("%s has no closing quote", cur[0].Text)
			}
			out = append(out, cur[0].Text)
			return nil
		}
		var b strings.Builder
		for _, t := range cur {
			if t.Literal() || t.Quoted() {
				return fmt.Errorf("%s is not a literal: want SQL literals separated by commas, such as 'placed', 'shipped', 2", t.Text)
			}
			b.WriteString(t.Text)
		}
		lit := b.String()
		if !numberRe.MatchString(lit) && !isBoolWord(lit) {
			if lit == "" {
				return fmt.Errorf("an empty value: want SQL literals separated by commas, such as 'placed', 'shipped', 2")
			}
			return fmt.Errorf("%s is not a literal: want SQL literals separated by commas, such as 'placed', 'shipped', 2", lit)
		}
		out = append(out, lit)
		return nil
	}
	for _, t := range tsql.Lex(v) {
		if t.Text == "," {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		cur = append(cur, t)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

var numberRe = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

func isBoolWord(s string) bool {
	s = strings.ToLower(s)
	return s == "true" || s == "false"
}

func (p *fieldParser) reference(r *Rule) {
	if v, line, ok := p.get("reference"); ok {
		r.Reference.Line = line
		if selectRe.MatchString(v) {
			sel, err := readOnlySelect(v)
			if err != nil {
				p.bad(line, "reference: %v", err)
			}
			r.Reference.Select = sel
		} else if relationRe.MatchString(v) {
			r.Reference.Relation = v
		} else {
			p.bad(line, "reference %q: want a table or view name, or a SELECT", v)
		}
	}
	r.Reference.Target, _, _ = p.get("reference_target")
	r.Reference.Partition = p.ident("reference_partition")
	r.Reference.Measure = parsed(p, "reference_measure", checkedExpression)
	if r.Reference.Select != "" {
		for _, k := range []string{"reference_partition", "reference_measure"} {
			if h, ok := p.keys[k]; ok {
				p.bad(h.line, "%s applies to a reference relation, not a reference SELECT", k)
			}
		}
	}
}

// body attaches the SQL after the header: the query of a custom rule, or the reference SELECT
// of a completeness or totals rule written over several lines.
func (p *fieldParser) body(r *Rule, body string, line int) {
	if body == "" {
		if r.Kind == Custom {
			p.bad(p.first, "kind custom needs a SELECT after the header returning the violating rows")
		}
		if _, given := p.keys["reference"]; r.Kind == Totals && !given {
			p.bad(p.first, "kind totals needs reference: (a relation or SELECT) or a SELECT after the header")
		}
		return
	}
	sel, err := readOnlySelect(body)
	if err != nil {
		p.bad(line+tsql.LineOf(err), "%v", err)
	}
	switch r.Kind {
	case Custom:
		r.Body, r.BodyLine = sel, line
	case Completeness, Totals:
		if r.Reference.IsSet() {
			p.bad(line, "the reference is given twice: by reference: on line %d and by this SELECT", r.Reference.Line)
			return
		}
		r.Reference.Select, r.Reference.Line = sel, line
	default:
		p.bad(line, "kind %s takes no SQL after the header (for your own SQL use kind: custom)", r.Kind)
	}
}

// crossCheck reports keys that only make sense together.
func (p *fieldParser) crossCheck(r *Rule) {
	if r.Kind != Completeness {
		return
	}
	_, expect := p.keys["expect"]
	_, ref := p.keys["reference"]
	ref = ref || r.Reference.IsSet()
	if !expect && !ref && len(r.NotNull) == 0 && r.MinRows == 0 {
		if _, ok := p.keys["min_rows"]; !ok {
			p.bad(p.keys["kind"].line, "kind completeness needs at least one of expect:, reference: (or a SELECT), not_null:, min_rows:")
		}
	}
	if (expect || ref) && r.Partition == "" {
		if _, ok := p.keys["partition"]; !ok {
			p.bad(p.keys["kind"].line, "completeness with expected partitions (expect: or a reference) needs partition:")
		}
	}
}

func parseExpect(v string) (*Expect, error) {
	if v == "continuous" {
		return &Expect{Continuous: true}, nil
	}
	from, to, ok := strings.Cut(v, "..")
	if !ok {
		return nil, fmt.Errorf("want FROM..TO (dates, TO may be today or yesterday) or continuous")
	}
	e := &Expect{}
	var err error
	if e.From, err = time.Parse("2006-01-02", strings.TrimSpace(from)); err != nil {
		return nil, fmt.Errorf("from %q is not a date like 2026-06-01", strings.TrimSpace(from))
	}
	switch to = strings.TrimSpace(to); to {
	case "today", "yesterday":
		e.ToRelative = to
	default:
		if e.To, err = time.Parse("2006-01-02", to); err != nil {
			return nil, fmt.Errorf("to %q is not a date like 2026-08-31, today or yesterday", to)
		}
		if e.To.Before(e.From) {
			return nil, fmt.Errorf("ends before it starts")
		}
	}
	return e, nil
}

func parseTolerance(v string) (Tolerance, error) {
	if s, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || f < 0 {
			return Tolerance{}, fmt.Errorf("want a number 0 or more, absolute (5) or relative (0.1%%)")
		}
		return Tolerance{Value: f / 100, Relative: true}, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return Tolerance{}, fmt.Errorf("want a number 0 or more, absolute (5) or relative (0.1%%)")
	}
	return Tolerance{Value: f}, nil
}

func parseFraction(v string) (float64, error) {
	if s, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		return f / 100, err
	}
	return strconv.ParseFloat(v, 64)
}

var ageRe = regexp.MustCompile(`^(\d+)d(.*)$`)

// parseAge reads a Go duration that may start with whole days: 36h, 2d, 1d12h, 90m.
func parseAge(v string) (time.Duration, error) {
	var days time.Duration
	rest := v
	if m := ageRe.FindStringSubmatch(v); m != nil {
		n, _ := strconv.Atoi(m[1])
		days, rest = time.Duration(n)*24*time.Hour, m[2]
	}
	var d time.Duration
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil {
			return 0, fmt.Errorf("want a duration such as 36h, 2d or 1d12h")
		}
	}
	if days+d <= 0 {
		return 0, fmt.Errorf("want a duration above zero, such as 36h, 2d or 1d12h")
	}
	return days + d, nil
}
