package rules

import (
	"fmt"
	"regexp"
	"strings"
)

// writeWords are statement verbs that have no place in a read-only rule. Engine.Check then
// prepares the SQL as a subquery, which no DML or DDL survives either.
var writeWords = map[string]bool{
	"INSERT": true, "UPDATE": true, "DELETE": true, "MERGE": true, "DROP": true, "CREATE": true,
	"ALTER": true, "TRUNCATE": true, "ATTACH": true, "DETACH": true, "COPY": true, "GRANT": true,
	"REVOKE": true, "PRAGMA": true, "INSTALL": true, "LOAD": true, "CALL": true, "EXPORT": true,
	"IMPORT": true, "OPTIMIZE": true, "RENAME": true, "SYSTEM": true, "KILL": true, "VACUUM": true,
	"CHECKPOINT": true, "EXCHANGE": true,
}

// token is a bare word or a punctuation byte of SQL text, outside literals and comments.
type token struct {
	text string
	pos  int
}

// lex splits SQL into bare words and punctuation, skipping string literals, quoted identifiers
// and comments. Quoted parts appear as the single token "'" or `"` so structure stays visible.
func lex(text string) []token {
	var out []token
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := skipQuoted(text, i)
			out = append(out, token{string(c), i})
			i = j
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			j := strings.IndexByte(text[i:], '\n')
			if j < 0 {
				return out
			}
			i += j
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			j := strings.Index(text[i+2:], "*/")
			if j < 0 {
				return out
			}
			i += j + 4
		case isWordByte(c):
			j := i
			for j < len(text) && isWordByte(text[j]) {
				j++
			}
			out = append(out, token{text[i:j], i})
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		default:
			out = append(out, token{string(c), i})
			i++
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || (c|0x20 >= 'a' && c|0x20 <= 'z') || (c >= '0' && c <= '9')
}

func skipQuoted(text string, i int) int {
	q := text[i]
	j := i + 1
	for j < len(text) {
		if text[j] == '\\' && q != '"' {
			j += 2
			continue
		}
		if text[j] == q {
			if j+1 < len(text) && text[j+1] == q {
				j += 2
				continue
			}
			return j + 1
		}
		j++
	}
	return len(text)
}

// readOnlySelect checks that text is one read-only SELECT or WITH statement and returns it
// without a trailing semicolon.
func readOnlySelect(text string) (string, error) {
	toks := lex(text)
	if len(toks) == 0 {
		return "", fmt.Errorf("empty SQL: want a SELECT")
	}
	for i, t := range toks {
		if t.text == ";" {
			if i != len(toks)-1 {
				return "", fmt.Errorf("more than one statement: want a single SELECT")
			}
			text = strings.TrimSpace(text[:t.pos])
		}
	}
	first := ""
	for _, t := range toks {
		if t.text != "(" {
			first = strings.ToUpper(t.text)
			break
		}
	}
	if first != "SELECT" && first != "WITH" {
		return "", fmt.Errorf("SQL starts with %s: want a single read-only SELECT or WITH", first)
	}
	for _, t := range toks {
		if w := strings.ToUpper(t.text); writeWords[w] {
			return "", fmt.Errorf("SQL contains %s: rule SQL must be a read-only SELECT", w)
		}
	}
	return strings.TrimSpace(text), nil
}

// expression checks that text is one SQL expression (for a measure): no statement separator,
// no top-level comma, balanced parentheses, no subquery and nothing that writes.
func expression(text string) error {
	toks := lex(text)
	if len(toks) == 0 {
		return fmt.Errorf("empty expression")
	}
	depth := 0
	for _, t := range toks {
		w := strings.ToUpper(t.text)
		switch {
		case t.text == "(":
			depth++
		case t.text == ")":
			depth--
			if depth < 0 {
				return fmt.Errorf("unbalanced parentheses")
			}
		case t.text == ";":
			return fmt.Errorf("a semicolon: want one expression")
		case t.text == "," && depth == 0:
			return fmt.Errorf("a comma outside parentheses: want one expression")
		case w == "SELECT" || w == "FROM":
			return fmt.Errorf("%s in an expression: want an aggregate such as sum(amount), no subquery", w)
		case writeWords[w]:
			return fmt.Errorf("%s in an expression", w)
		}
	}
	if depth != 0 {
		return fmt.Errorf("unbalanced parentheses")
	}
	return nil
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
	toks := lex(expr)
	// the aggregate's own parentheses must close at the very end
	depth := 0
	for i, t := range toks {
		switch strings.ToUpper(t.text) {
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
