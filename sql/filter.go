package sql

import "strings"

// notInFilter are words that give a SELECT a shape other than "these columns of the rows of one
// relation that meet a condition".
var notInFilter = map[string]bool{
	"WITH": true, "JOIN": true, "GROUP": true, "HAVING": true, "ORDER": true, "LIMIT": true,
	"OFFSET": true, "FETCH": true, "UNION": true, "EXCEPT": true, "INTERSECT": true,
	"DISTINCT": true, "OVER": true, "QUALIFY": true, "WINDOW": true, "SAMPLE": true,
	"FINAL": true, "PREWHERE": true, "ARRAY": true, "SETTINGS": true, "FORMAT": true,
	"TOP": true, "USING": true, "INTO": true, "SELECT": true, "FROM": true, "WHERE": true,
}

// SimpleFilter recognises `SELECT col, … FROM relation WHERE condition`: a list of plain
// column names (or *), one unqualified relation without an alias, a condition without a
// subquery, and nothing else. It returns the relation and the condition's text; ok is false
// for any other shape. Such a SELECT returns exactly the rows for which the condition holds,
// so counting them can ride on any scan of the relation.
func SimpleFilter(text string) (relation, condition string, ok bool) {
	text, err := ReadOnlySelect(text)
	if err != nil {
		return "", "", false
	}
	toks := Lex(text)
	word := func(i int) string {
		if i >= len(toks) || toks[i].Quoted() || toks[i].Literal() {
			return ""
		}
		return strings.ToUpper(toks[i].Text)
	}
	if word(0) != "SELECT" {
		return "", "", false
	}
	i := 1
	for { // col [, col]… or *
		if i >= len(toks) {
			return "", "", false
		}
		if toks[i].Text != "*" && (toks[i].Ident() == "" || notInFilter[word(i)] || word(i) == "AS") {
			return "", "", false
		}
		i++
		if i < len(toks) && toks[i].Text == "," {
			i++
			continue
		}
		break
	}
	if word(i) != "FROM" || i+2 >= len(toks) || word(i+2) != "WHERE" {
		return "", "", false
	}
	rel := toks[i+1]
	if rel.Ident() == "" || notInFilter[word(i+1)] {
		return "", "", false
	}
	cond := toks[i+3:]
	if len(cond) == 0 {
		return "", "", false
	}
	for j := range cond {
		if notInFilter[word(i+3+j)] {
			return "", "", false
		}
	}
	last := cond[len(cond)-1]
	// up to the last token: a trailing comment would swallow what is written after it
	return rel.Ident(), text[cond[0].Pos : last.Pos+len(last.Text)], true
}
