package sql

import (
	"fmt"
	"strconv"
	"strings"
)

// Token is a bare word, a quoted identifier or literal, or a punctuation byte of SQL text.
// Comments and whitespace are dropped.
type Token struct {
	Text string // as written, quotes included
	Pos  int    // byte offset in the text
}

// Quoted reports whether the token is a quoted identifier ("x" or `x`).
func (t Token) Quoted() bool { return len(t.Text) > 1 && (t.Text[0] == '"' || t.Text[0] == '`') }

// Literal reports whether the token is a string literal: '…', or dollar-quoted $$…$$ or
// $tag$…$tag$ (DuckDB, and ClickHouse's heredocs).
func (t Token) Literal() bool {
	if len(t.Text) > 0 && t.Text[0] == '\'' {
		return true
	}
	return len(t.Text) > 1 && t.Text[0] == '$' && dollarEnd(t.Text, 0) == len(t.Text)
}

// dollarEnd returns the end of the dollar-quoted string starting at text[i] ($$…$$ or
// $tag$…$tag$, the tag a name that does not start with a digit), or -1 when there is none
// there: $start and $1 are parameters, not quotes.
func dollarEnd(text string, i int) int {
	j := i + 1
	for j < len(text) && text[j] != '$' {
		c := text[j]
		if !(c == '_' || c >= 0x80 || (c|0x20 >= 'a' && c|0x20 <= 'z') || (j > i+1 && c >= '0' && c <= '9')) {
			return -1
		}
		j++
	}
	if j >= len(text) {
		return -1
	}
	tag := text[i : j+1]
	k := strings.Index(text[j+1:], tag)
	if k < 0 {
		return -1
	}
	return j + 1 + k + len(tag)
}

// Ident returns the identifier the token names, unquoted ("" for literals and punctuation). A
// doubled quote stands for one; inside backquotes (ClickHouse) so does a backslash escape (\`,
// \\, \n, …), as skipQuoted reads them.
func (t Token) Ident() string {
	if t.Quoted() {
		q := t.Text[:1]
		inner := strings.TrimSuffix(t.Text[1:], q)
		if q == "`" && strings.Contains(inner, `\`) {
			return unescapeBackslashes(inner, q)
		}
		return strings.ReplaceAll(inner, q+q, q)
	}
	if len(t.Text) > 0 && isWordByte(t.Text[0]) {
		return t.Text
	}
	return ""
}

// unescapeBackslashes reads the inside of a quoted name with backslash escapes (and doubled
// quotes q) as ClickHouse writes them.
func unescapeBackslashes(inner, q string) string {
	var b strings.Builder
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		switch {
		case c == '\\' && i+1 < len(inner):
			i++
			switch e := inner[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'a':
				b.WriteByte('\a')
			case 'v':
				b.WriteByte('\v')
			case 'x':
				if i+2 < len(inner) {
					if v, err := strconv.ParseUint(inner[i+1:i+3], 16, 8); err == nil {
						b.WriteByte(byte(v))
						i += 2
						continue
					}
				}
				b.WriteByte(e)
			default:
				b.WriteByte(e)
			}
		case c == q[0] && i+1 < len(inner) && inner[i+1] == q[0]:
			b.WriteByte(c)
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Lex splits SQL text into tokens, skipping comments.
func Lex(text string) []Token {
	var out []Token
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := skipQuoted(text, i)
			out = append(out, Token{text[i:j], i})
			i = j
		case c == '$' && dollarEnd(text, i) > 0:
			j := dollarEnd(text, i)
			out = append(out, Token{text[i:j], i})
			i = j
		case commentEnd(text, i) > i:
			i = commentEnd(text, i)
		case isWordByte(c):
			j := i
			for j < len(text) && isWordByte(text[j]) {
				j++
			}
			out = append(out, Token{text[i:j], i})
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		default:
			out = append(out, Token{string(c), i})
			i++
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || (c|0x20 >= 'a' && c|0x20 <= 'z') || (c >= '0' && c <= '9')
}

// writeWords are statement verbs that have no place in read-only SQL.
var writeWords = map[string]bool{
	"INSERT": true, "UPDATE": true, "DELETE": true, "MERGE": true, "DROP": true, "CREATE": true,
	"ALTER": true, "TRUNCATE": true, "ATTACH": true, "DETACH": true, "COPY": true, "GRANT": true,
	"REVOKE": true, "PRAGMA": true, "INSTALL": true, "LOAD": true, "CALL": true, "EXPORT": true,
	"IMPORT": true, "OPTIMIZE": true, "RENAME": true, "SYSTEM": true, "KILL": true, "VACUUM": true,
	"CHECKPOINT": true, "EXCHANGE": true, "SET": true, "USE": true,
}

// ReadOnlySelect checks that text is one read-only SELECT or WITH statement and returns it
// without a trailing semicolon.
func ReadOnlySelect(text string) (string, error) {
	toks := Lex(text)
	if len(toks) == 0 {
		return "", fmt.Errorf("empty SQL: want a SELECT")
	}
	for i, t := range toks {
		if t.Text == ";" {
			if i != len(toks)-1 {
				return "", posError(text, t.Pos, nil, "more than one statement: want a single SELECT")
			}
			toks = toks[:i]
		}
	}
	if len(toks) == 0 {
		return "", fmt.Errorf("empty SQL: want a SELECT")
	}
	// up to the last token: a trailing comment would swallow what trueup writes after the
	// statement when it wraps it (… FROM (statement) AS q LIMIT 0)
	last := toks[len(toks)-1]
	text = text[:last.Pos+len(last.Text)]
	first := ""
	for _, t := range toks {
		if t.Text != "(" {
			first = strings.ToUpper(t.Text)
			break
		}
	}
	if first != "SELECT" && first != "WITH" {
		return "", fmt.Errorf("SQL starts with %s: want a single read-only SELECT or WITH", first)
	}
	for _, t := range toks {
		if w := strings.ToUpper(t.Text); !t.Quoted() && !t.Literal() && writeWords[w] {
			return "", posError(text, t.Pos, nil, "SQL contains %s: want a read-only SELECT", w)
		}
	}
	if err := outside(text, toks); err != nil {
		return "", err
	}
	return strings.TrimSpace(text), nil
}

// TableRefs lists the relations named right after FROM or JOIN (and after commas in a FROM
// list), unquoted, in order of first mention. Names defined by WITH are left out.
func TableRefs(text string) []string {
	toks := Lex(text)
	ctes := map[string]bool{}
	for i := 0; i+2 < len(toks); i++ {
		// name AS ( … ) at the top of a WITH
		if strings.EqualFold(toks[i+1].Text, "AS") && toks[i+2].Text == "(" && i > 0 &&
			(strings.EqualFold(toks[i-1].Text, "WITH") || toks[i-1].Text == ",") {
			ctes[strings.ToLower(toks[i].Ident())] = true
		}
	}
	seen := map[string]bool{}
	var out []string
	forEachRef(toks, func(i int, name string) {
		if !ctes[strings.ToLower(name)] && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	})
	return out
}

// forEachRef calls fn for each relation name token after FROM/JOIN (qualified names give the
// index of their last part).
func forEachRef(toks []Token, fn func(i int, name string)) {
	inFrom := false
	depth, fromDepth := 0, 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		w := strings.ToUpper(t.Text)
		switch {
		case t.Text == "(":
			depth++
			continue
		case t.Text == ")":
			depth--
			if depth < fromDepth {
				inFrom = false
			}
			continue
		case w == "WHERE" || w == "GROUP" || w == "ORDER" || w == "HAVING" || w == "LIMIT" || w == "ON" || w == "USING" || w == "UNION" || w == "SELECT":
			if depth == fromDepth {
				inFrom = false
			}
			continue
		}
		start := w == "FROM" || w == "JOIN"
		if !start && !(inFrom && t.Text == "," && depth == fromDepth) {
			continue
		}
		if w == "FROM" {
			inFrom, fromDepth = true, depth
		}
		j := i + 1
		if j >= len(toks) || toks[j].Ident() == "" || strings.EqualFold(toks[j].Text, "SELECT") {
			continue
		}
		// a function call such as range(10) or numbers(10) is not a relation
		if j+1 < len(toks) && toks[j+1].Text == "(" {
			continue
		}
		if j+2 < len(toks) && toks[j+1].Text == "." && toks[j+2].Ident() != "" {
			fn(j+2, toks[j].Ident()+"."+toks[j+2].Ident())
			continue
		}
		fn(j, toks[j].Ident())
	}
}

// RewriteTables replaces the relation names after FROM/JOIN that to maps by other relations,
// rendered by the dialect: how a transform, rule or report written against logical tables is
// pointed at versions (orders → orders__v2). A name qualified by the schema or database it would
// be read from unqualified — current, as CurrentQualifiers gives it (main.orders on DuckDB,
// db.orders on ClickHouse) — is the same table and is pointed too; names not in to, and names
// qualified otherwise (raw.orders is another table), are left as written.
func RewriteTables(d Dialect, text string, to map[string]string, current []string) string {
	toks := Lex(text)
	type edit struct {
		from, to int
		with     string
	}
	var edits []edit
	same := func(t Token, want string) bool {
		return t.Ident() == want || !t.Quoted() && strings.EqualFold(t.Ident(), want)
	}
	forEachRef(toks, func(i int, name string) {
		first, last := i, i
		if strings.Contains(name, ".") {
			first = i - 2
			if i+2 < len(toks) && toks[i+1].Text == "." && toks[i+2].Ident() != "" {
				last = i + 2 // database.schema.name
			}
		}
		for logical, physical := range to {
			if !same(toks[last], logical) {
				continue
			}
			if first != last {
				var parts []Token
				for k := first; k < last; k += 2 {
					parts = append(parts, toks[k])
				}
				if !isCurrent(parts, current) {
					return
				}
			}
			with := d.QuoteRelation(physical)
			// keep the written name usable as a qualifier (orders.order_date)
			if last+1 >= len(toks) || !isAlias(toks[last+1]) {
				with += " AS " + d.Quote(toks[last].Ident())
			}
			edits = append(edits, edit{toks[first].Pos, toks[last].Pos + len(toks[last].Text), with})
			return
		}
	})
	var b strings.Builder
	pos := 0
	for _, e := range edits {
		b.WriteString(text[pos:e.from])
		b.WriteString(e.with)
		pos = e.to
	}
	b.WriteString(text[pos:])
	return b.String()
}

// isCurrent reports whether the qualifier parts (schema, or database and schema) name one of
// current, written as CurrentQualifiers gives them ("main", "warehouse.main").
func isCurrent(parts []Token, current []string) bool {
	for _, c := range current {
		want := strings.Split(c, ".")
		if len(want) != len(parts) {
			continue
		}
		match := true
		for k, p := range parts {
			if p.Ident() != want[k] && (p.Quoted() || !strings.EqualFold(p.Ident(), want[k])) {
				match = false
			}
		}
		if match {
			return true
		}
	}
	return false
}

// notAlias are words that may follow a relation name without being its alias.
var notAlias = map[string]bool{
	"WHERE": true, "GROUP": true, "ORDER": true, "HAVING": true, "LIMIT": true, "JOIN": true, "LEFT": true,
	"RIGHT": true, "INNER": true, "FULL": true, "CROSS": true, "OUTER": true, "ON": true, "USING": true,
	"UNION": true, "ALL": true, "ANY": true, "GLOBAL": true, "ARRAY": true, "FINAL": true, "SAMPLE": true,
	"PREWHERE": true, "SETTINGS": true, "FORMAT": true, "WINDOW": true, "QUALIFY": true, "EXCEPT": true,
	"INTERSECT": true, "ASOF": true, "SEMI": true, "ANTI": true, "NATURAL": true, "POSITIONAL": true, "OFFSET": true,
}

func isAlias(t Token) bool {
	return t.Ident() != "" && (t.Quoted() || !notAlias[strings.ToUpper(t.Text)])
}

// clockWords read the wall clock or the current state of the session.
var clockWords = map[string]bool{
	"NOW": true, "CURRENT_DATE": true, "CURRENT_TIMESTAMP": true, "CURRENT_TIME": true,
	"LOCALTIMESTAMP": true, "LOCALTIME": true, "TODAY": true, "YESTERDAY": true, "GET_CURRENT_TIMESTAMP": true,
	"TRANSACTION_TIMESTAMP": true, "GETDATE": true, "SYSDATE": true, "RANDOM": true, "RAND": true, "UUID": true,
	"GEN_RANDOM_UUID": true, "GENERATEUUIDV4": true, "NOW64": true,
}

// ClockCalls lists the words of text that read the clock or other state a rerun would not see
// again (now(), current_date, today(), random()): a transform using them is not reproducible.
func ClockCalls(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range Lex(text) {
		if t.Quoted() || t.Literal() {
			continue
		}
		if w := strings.ToUpper(t.Text); clockWords[w] && !seen[w] {
			seen[w] = true
			out = append(out, strings.ToLower(t.Text))
		}
	}
	return out
}
