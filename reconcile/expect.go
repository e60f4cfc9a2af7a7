package reconcile

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	tsql "trueup/sql"
)

// Expectations are the change an operator intends, parsed from text (see the package doc for
// the grammar). The zero of *Expectations (nil) expects every partition to be unchanged.
type Expectations struct {
	Text    string   `json:"text"`
	Clauses []Clause `json:"clauses"`
}

// Clause is one ";"-separated part: where it applies and what it allows there.
type Clause struct {
	Where  Where   `json:"where"`
	Same   bool    `json:"identical,omitempty"` // the partitions must be unchanged
	Any    bool    `json:"any,omitempty"`       // anything goes
	Bounds []Bound `json:"bounds,omitempty"`
}

// Where says which partitions a clause applies to.
type Where struct {
	Kind   string      `json:"kind"` // "everywhere", "inside" or "outside"
	Scope  bool        `json:"scope,omitempty"`
	Ranges []TextRange `json:"ranges,omitempty"`

	ranges [][2]any // Ranges read as the partition column's type
}

// TextRange is an inclusive range of partition values as written: 2026-07-10..2026-07-18.
type TextRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Bound limits one metric's change: Lo ≤ change ≤ Hi, in percent of the old value when Pct.
type Bound struct {
	Metric string  `json:"metric"` // rows, added, removed, changed or sum
	Column string  `json:"column,omitempty"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	Pct    bool    `json:"pct,omitempty"`
}

func (b Bound) String() string {
	f := func(v float64) string {
		if v == 0 {
			v = 0 // not -0
		}
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if v >= 0 {
			s = "+" + s
		}
		return s
	}
	name := b.Metric
	if b.Metric == "sum" {
		name = "sum(" + b.Column + ")"
	}
	unit := ""
	if b.Pct {
		unit = "%"
	}
	if b.Lo == b.Hi {
		return name + " " + f(b.Lo) + unit
	}
	return name + " " + f(b.Lo) + ".." + f(b.Hi) + unit
}

var (
	sumRe     = regexp.MustCompile(`(?i)\bsum\s*\(\s*([^()\s]+)\s*\)`)
	bodyWords = map[string]bool{"identical": true, "unchanged": true, "any": true, "rows": true, "added": true, "removed": true, "changed": true}
)

// ParseExpectations reads expectations like
//
//	inside 2026-07-10..2026-07-18 rows +0..6%, sum(amount) +0..6%; outside identical
//
// A leading "expect:" (as in a backfill header) and "#" comment lines are allowed; lines are
// joined, so a file may spread the clauses over several lines. An error is invalid (fault) and
// says what is wrong without naming where the text came from: the caller does.
func ParseExpectations(text string) (*Expectations, error) {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		l = strings.TrimSpace(strings.TrimPrefix(l, "--"))
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if low := strings.ToLower(l); strings.HasPrefix(low, "expect:") {
			l = strings.TrimSpace(l[len("expect:"):])
		}
		lines = append(lines, l)
	}
	src := strings.Join(lines, " ")
	e := &Expectations{Text: src}
	for i, part := range strings.Split(src, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		c, err := parseClause(part)
		if err != nil {
			return nil, badInput("clause %d %q: %v", i+1, strings.TrimSpace(part), err)
		}
		e.Clauses = append(e.Clauses, c)
	}
	if len(e.Clauses) == 0 {
		return nil, badInput("nothing expected (write e.g. \"inside 2026-07-10..2026-07-18 rows +0..6%%; outside identical\")")
	}
	return e, nil
}

func tokens(s string) []string {
	s = sumRe.ReplaceAllString(s, " sum($1) ")
	s = strings.ReplaceAll(s, ",", " , ")
	return strings.Fields(s)
}

func looksLikeChange(t string) bool {
	return strings.HasPrefix(t, "+") || strings.HasPrefix(t, "-") || strings.Contains(t, "%")
}

func isBodyWord(t string) bool {
	return bodyWords[strings.ToLower(t)] || strings.HasPrefix(strings.ToLower(t), "sum(")
}

func parseClause(s string) (Clause, error) {
	toks := tokens(s)
	var c Clause
	i := 0
	switch w := strings.ToLower(toks[0]); w {
	case "inside", "outside":
		c.Where.Kind = w
		i = 1
		for i < len(toks) && !isBodyWord(toks[i]) {
			t := toks[i]
			if looksLikeChange(t) && i > 1 && len(c.Where.Ranges) > 0 && toks[i-1] != "," {
				// "inside 2026-07-10 bytes +1%": the word before a change is a measure, not a range.
				c.Where.Ranges = c.Where.Ranges[:len(c.Where.Ranges)-1]
				i--
				break
			}
			i++
			switch {
			case t == ",":
			case strings.EqualFold(t, "scope"):
				c.Where.Scope = true
			default:
				from, to, ok := strings.Cut(t, "..")
				if !ok {
					to = from
				}
				if from == "" || to == "" {
					return c, fmt.Errorf("range %q: want FROM..TO", t)
				}
				c.Where.Ranges = append(c.Where.Ranges, TextRange{From: from, To: to})
			}
		}
		if c.Where.Scope && len(c.Where.Ranges) > 0 {
			return c, fmt.Errorf("say scope or ranges, not both")
		}
		if w == "inside" && !c.Where.Scope && len(c.Where.Ranges) == 0 {
			return c, fmt.Errorf("inside what? (a range like 2026-07-10..2026-07-18, or scope)")
		}
	case "everywhere", "all":
		c.Where.Kind = "everywhere"
		i = 1
	default:
		c.Where.Kind = "everywhere"
	}
	body := toks[i:]
	if len(body) == 0 {
		return c, fmt.Errorf("nothing expected: add identical, any, or bounds like rows +0..6%%")
	}
	switch strings.ToLower(body[0]) {
	case "identical", "unchanged":
		c.Same = true
	case "any":
		c.Any = true
	}
	if c.Same || c.Any {
		if len(body) > 1 {
			return c, fmt.Errorf("unexpected %q after %s", strings.Join(body[1:], " "), body[0])
		}
		return c, nil
	}
	for len(body) > 0 {
		j := 0
		for j < len(body) && body[j] != "," {
			j++
		}
		b, err := parseBound(body[:j])
		if err != nil {
			return c, err
		}
		c.Bounds = append(c.Bounds, b)
		if j < len(body) {
			j++
		}
		body = body[j:]
	}
	return c, nil
}

func parseBound(toks []string) (Bound, error) {
	if len(toks) == 0 {
		return Bound{}, fmt.Errorf("empty bound")
	}
	var b Bound
	m := strings.ToLower(toks[0])
	switch {
	case strings.HasPrefix(m, "sum("):
		b.Metric, b.Column = "sum", toks[0][4:len(toks[0])-1]
	case m == "rows" || m == "added" || m == "removed" || m == "changed":
		b.Metric = m
	default:
		return b, fmt.Errorf("unknown measure %q (want rows, added, removed, changed or sum(COLUMN))", toks[0])
	}
	change := strings.Join(toks[1:], "")
	if change == "" {
		return b, fmt.Errorf("%s: how much may it change? (e.g. +0..6%% or 0)", toks[0])
	}
	b.Pct = strings.Contains(change, "%")
	lo, hi, ok := strings.Cut(strings.ReplaceAll(change, "%", ""), "..")
	if !ok {
		hi = lo
	}
	var err1, err2 error
	b.Lo, err1 = strconv.ParseFloat(lo, 64)
	b.Hi, err2 = strconv.ParseFloat(hi, 64)
	if err1 != nil || err2 != nil || math.IsNaN(b.Lo) || math.IsNaN(b.Hi) {
		return b, fmt.Errorf("%s: change %q: want LO..HI like +0..6%% or -10..10", toks[0], change)
	}
	if b.Lo > b.Hi {
		return b, fmt.Errorf("%s: change %q: the low end is above the high end", toks[0], change)
	}
	return b, nil
}

// measures are the columns the expectations total with sum(…).
func (e *Expectations) measures() []string {
	var out []string
	for _, c := range e.Clauses {
		for _, b := range c.Bounds {
			if b.Metric == "sum" && !contains(out, b.Column) {
				out = append(out, b.Column)
			}
		}
	}
	return out
}

// resolve returns a copy of e with its ranges read as the partition column's type.
func (e *Expectations) resolve(p *plan) (*Expectations, error) {
	out := &Expectations{Text: e.Text, Clauses: append([]Clause(nil), e.Clauses...)}
	for i := range out.Clauses {
		w := &out.Clauses[i].Where
		if w.Kind == "everywhere" {
			continue
		}
		if p.part == nil {
			return nil, badInput("expectations: %q needs a partition column", w.Kind)
		}
		if w.Scope && len(p.spec.Scope) == 0 {
			return nil, badInput("expectations: %s scope, but no scope was given", w.Kind)
		}
		w.ranges = nil
		for _, r := range w.Ranges {
			from, err := parseValue(p.part.Old.Kind, r.From)
			if err != nil {
				return nil, badInput("expectations: %q: %v", r.From, err)
			}
			to, err := parseValue(p.part.Old.Kind, r.To)
			if err != nil {
				return nil, badInput("expectations: %q: %v", r.To, err)
			}
			if lessValue(to, from) {
				return nil, badInput("expectations: range %s..%s ends before it starts", r.From, r.To)
			}
			w.ranges = append(w.ranges, [2]any{from, to})
		}
	}
	return out, nil
}

func inRanges(v any, ranges [][2]any) bool {
	for _, r := range ranges {
		if !lessValue(v, r[0]) && !lessValue(r[1], v) {
			return true
		}
	}
	return false
}

func inWindows(v any, ws []tsql.Window) bool {
	t, ok := v.(time.Time)
	if !ok {
		return false
	}
	for _, w := range ws {
		if !t.Before(w.Start) && t.Before(w.End) {
			return true
		}
	}
	return false
}

// applies reports whether clause i covers partition value v.
func (e *Expectations) applies(p *plan, i int, v any) bool {
	w := e.Clauses[i].Where
	if w.Kind == "everywhere" {
		return true
	}
	if v == nil {
		return false
	}
	inside := false
	switch {
	case w.Scope:
		inside = p.inWindows(v, p.spec.Scope)
	case len(w.ranges) > 0:
		inside = p.inRanges(v, w.ranges)
	default: // a bare "outside": outside every inside clause
		for _, c := range e.Clauses {
			if c.Where.Kind != "inside" {
				continue
			}
			if (c.Where.Scope && p.inWindows(v, p.spec.Scope)) || p.inRanges(v, c.Where.ranges) {
				inside = true
			}
		}
	}
	return inside == (w.Kind == "inside")
}

// judge gives a partition its verdict and, when unexpected, the reasons. Partitions no clause
// covers must be unchanged.
func (e *Expectations) judge(p *plan, pt *Partition) (string, []string) {
	var reasons []string
	covered := false
	if e != nil {
		for i, c := range e.Clauses {
			if !e.applies(p, i, pt.value) {
				continue
			}
			covered = true
			reasons = append(reasons, c.check(pt)...)
		}
	}
	if !covered && !pt.Unchanged() {
		reasons = append(reasons, "not expected to change: "+describe(pt))
	}
	switch {
	case len(reasons) > 0:
		return VerdictUnexpected, reasons
	case pt.Unchanged():
		return VerdictUnchanged, nil
	}
	return VerdictExpected, nil
}

func (c Clause) check(pt *Partition) []string {
	if c.Any {
		return nil
	}
	if c.Same {
		if pt.Unchanged() {
			return nil
		}
		return []string{"expected identical: " + describe(pt)}
	}
	var out []string
	for _, b := range c.Bounds {
		if msg := b.check(pt); msg != "" {
			out = append(out, msg)
		}
	}
	return out
}

// check returns why the partition breaks the bound, or "". A total that went from or to NaN
// changed by no amount a bound allows.
func (b Bound) check(pt *Partition) string {
	var old, new, delta float64
	switch b.Metric {
	case "rows":
		old, new, delta = float64(pt.OldCount), float64(pt.NewCount), float64(pt.Delta)
	case "sum":
		m, ok := measure(pt, b.Column)
		if !ok {
			return fmt.Sprintf("%s: no total for %s", b, b.Column)
		}
		old, new, delta = float64(m.Old), float64(m.New), float64(m.Delta)
	default:
		var n int64
		switch {
		case pt.Unchanged():
		case pt.Rows == nil:
			return fmt.Sprintf("%s: rows were not compared", b)
		case b.Metric == "added":
			n = pt.Rows.Added
		case b.Metric == "removed":
			n = pt.Rows.Removed
		default:
			n = pt.Rows.Changed
		}
		old, delta = float64(pt.OldCount), float64(n)
		new = old + delta
	}
	got := delta
	if b.Pct {
		v := pct(old, new)
		if v == nil {
			return fmt.Sprintf("%s: was 0, is %s", b, strconv.FormatFloat(new, 'f', -1, 64))
		}
		got = *v
	}
	if math.IsNaN(got) {
		return fmt.Sprintf("%s: changed from %s to %s", b, strconv.FormatFloat(old, 'f', -1, 64), strconv.FormatFloat(new, 'f', -1, 64))
	}
	const eps = 1e-9
	if got < b.Lo-eps || got > b.Hi+eps {
		unit := ""
		if b.Pct {
			unit = "%"
		}
		return fmt.Sprintf("%s: changed by %+.*f%s", b, precision(b.Pct), got, unit)
	}
	return ""
}

func precision(pct bool) int {
	if pct {
		return 1
	}
	return 0
}

func measure(pt *Partition, name string) (Measure, bool) {
	if m, ok := pt.Measures[name]; ok {
		return m, true
	}
	for k, m := range pt.Measures {
		if strings.EqualFold(k, name) {
			return m, true
		}
	}
	return Measure{}, false
}

// describe says in a few words how a partition differs.
func describe(pt *Partition) string {
	switch pt.Presence {
	case PresenceNewOnly:
		return fmt.Sprintf("new partition with %d %s", pt.NewCount, plural(int(pt.NewCount), "row", "rows"))
	case PresenceOldOnly:
		return fmt.Sprintf("partition missing from new (%d %s in old)", pt.OldCount, plural(int(pt.OldCount), "row", "rows"))
	}
	parts := []string{fmt.Sprintf("rows %d → %d", pt.OldCount, pt.NewCount)}
	if r := pt.Rows; r != nil {
		for _, x := range []struct {
			n    int64
			what string
		}{{r.Added, "added"}, {r.Removed, "removed"}, {r.Changed, "changed"}, {r.DuplicateKeys, plural(int(r.DuplicateKeys), "duplicate key", "duplicate keys")}} {
			if x.n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", x.n, x.what))
			}
		}
	}
	if pt.OldNullKeys+pt.NewNullKeys > 0 {
		parts = append(parts, fmt.Sprintf("rows with a NULL key %d → %d", pt.OldNullKeys, pt.NewNullKeys))
	}
	if len(parts) == 1 && pt.OldCount == pt.NewCount {
		parts = append(parts, "checksums differ")
	}
	return strings.Join(parts, ", ")
}
