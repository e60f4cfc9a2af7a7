package reconcile

import (
	"context"
	"strings"

	tsql "trueup/sql"
)

// checkWhere checks Spec.Where before anything runs: user SQL, it must pass the sandbox for
// user SQL that rules and reports pass (one read-only expression of the warehouse: no write,
// no file or network function, no second statement), and each engine, describing
// `SELECT (where) FROM relation`, must find it a condition over that side's columns.
func (p *plan) checkWhere(ctx context.Context) error {
	w := p.spec.Where
	if strings.TrimSpace(w) == "" {
		return nil
	}
	depth := 0
	for _, t := range tsql.Lex(w) {
		switch {
		case t.Literal() || t.Quoted():
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		case strings.HasPrefix(t.Text, "$"):
			return badInput("--where %q: %s is a parameter, and a diff binds none: write the value", w, t.Text)
		}
		if depth < 0 {
			return badInput("--where %q: a ) closes what the condition did not open: want one condition", w)
		}
	}
	if depth != 0 {
		return badInput("--where %q: unbalanced parentheses: want one condition", w)
	}
	for _, new := range []bool{false, true} {
		side, which := p.side(new), "old"
		if new {
			which = "new"
		}
		d := side.Engine.Dialect()
		q := "SELECT " + p.filter() + " AS " + d.Quote("__where") + " FROM " + d.QuoteRelation(side.Relation)
		if _, err := tsql.ReadOnlySelect(q); err != nil {
			return badInput("--where %q: %v", w, err)
		}
		cols, err := side.Engine.Describe(ctx, q)
		if err != nil {
			return badInput("--where %q on the %s relation %s: %v", w, which, side.Relation, err)
		}
		if len(cols) != 1 || !cols[0].Condition() {
			typ := "several columns"
			if len(cols) == 1 {
				typ = cols[0].Type
			}
			return badInput("--where %q is %s on the %s relation %s, not a condition: want an expression that is true or false for a row, e.g. amount > 0", w, typ, which, side.Relation)
		}
	}
	return nil
}

// filter is Spec.Where as a condition to AND into each side's WHERE ("" without one). It is on
// lines of its own: a comment ending it must not swallow what follows.
func (p *plan) filter() string {
	if strings.TrimSpace(p.spec.Where) == "" {
		return ""
	}
	return "(\n" + p.spec.Where + "\n)"
}
