package rules

import (
	"fmt"
	"regexp"
	"strings"

	tsql "trueup/sql"
)

// readOnlySelect checks that text is one read-only SELECT or WITH statement.
func readOnlySelect(text string) (string, error) { return tsql.ReadOnlySelect(text) }

// expression checks that text is one SQL expression (for a measure): no statement separator,
// no top-level comma, balanced parentheses, no subquery and nothing that writes.
func expression(text string) error {
	toks := tsql.Lex(text)
	if len(toks) == 0 {
		return fmt.Errorf("empty expression")
	}
	depth := 0
	for _, t := range toks {
		w := strings.ToUpper(t.Text)
		if t.Quoted() || t.Literal() {
			continue
		}
		switch {
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
			if depth < 0 {
				return fmt.Errorf("unbalanced parentheses")
			}
		case t.Text == ";":
			return fmt.Errorf("a semicolon: want one expression")
		case t.Text == "," && depth == 0:
			return fmt.Errorf("a comma outside parentheses: want one expression")
		case w == "SELECT" || w == "FROM":
			return fmt.Errorf("%s in an expression: want one over the table's own columns, such as sum(amount) or status = 'paid', no subquery", w)
		}
	}
	if depth != 0 {
		return fmt.Errorf("unbalanced parentheses")
	}
	return tsql.Inside(text)
}

var aggRe = regexp.MustCompile(`(?i)^\s*(sum|count|min|max)\s*\(`)

// rollupOf says how partial results of an aggregate expression combine, when they do: the
// engine can then compute it at a finer grouping and trueup adds the groups up. It is "" for
// anything else (count(DISTINCT …), ratios, arbitrary expressions).
func rollupOf(expr string) string {
	m := aggRe.FindStringSubmatch(expr)
	if m == nil {
		return ""
	}
	toks := tsql.Lex(expr)
	// the aggregate's own parentheses must close at the very end
	depth := 0
	for i, t := range toks {
		switch strings.ToUpper(t.Text) {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 && i != len(toks)-1 {
				return ""
			}
		case "DISTINCT":
			return ""
		}
	}
	switch strings.ToLower(m[1]) {
	case "sum", "count":
		return "sum"
	case "min":
		return "min"
	}
	return "max"
}

var (
	identRe    = regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_$]*$`)
	relationRe = regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_$]*(\.[\p{L}_][\p{L}\p{N}_$]*)?$`)
	selectRe   = regexp.MustCompile(`(?i)^\s*\(*\s*(select|with)\b`)
)
