package sql

import (
	"fmt"
	"iter"
	"strings"
)

// Partitioning is how a table's rows are split into the units its engine replaces atomically,
// seen along one date or timestamp column (a backfill's partition column).
type Partitioning struct {
	// Key is the engine's partition key as the table declares it ("" when it has none).
	Key string
	// Grain is the span of one partition along the column: "hour", "day", "week" (from Monday)
	// or "month". It is "" when any window of rows is replaced on its own: the engine has no
	// partitions (DuckDB), or they are no coarser than an hour (a ClickHouse table partitioned
	// by a DateTime column itself).
	Grain string
	// Whole is a table with no partition key: one partition holds every row, so replacing any
	// window of it rewrites the whole table.
	Whole bool
	// Rows and Bytes are the table's size on disk, as the engine counts its active parts (Whole only).
	Rows, Bytes int64
}

// grainRank orders the grains from the finest: a grain of higher rank holds whole partitions of
// any lower one.
func grainRank(g string) int {
	switch g {
	case "hour":
		return 1
	case "day":
		return 2
	case "week":
		return 3
	case "month":
		return 4
	}
	return 0
}

// CoarserGrain reports whether grain a spans more than b (month over week over day over hour).
func CoarserGrain(a, b string) bool { return grainRank(a) > grainRank(b) }

// Coarser reports whether replacing one window of grain g rewrites a partition that also holds
// rows outside it, which the engine then carries over from the table itself.
func (p Partitioning) Coarser(g string) bool {
	return p.Whole || grainRank(p.Grain) > grainRank(g)
}

// Nests reports whether partitions and windows of grain g line up: each partition lies inside
// one window or holds whole windows, so two windows never share a partition unless they are
// one unit of it. Weeks and months do not: a week holds days of two months.
func (p Partitioning) Nests(g string) bool {
	return p.Whole || !(p.Grain == "week" && g == "month")
}

// partitionGrains are the functions of a date or timestamp column a ClickHouse partition key may
// apply and the span of one partition each gives.
var partitionGrains = map[string]string{
	"toYYYYMM":       "month",
	"toStartOfMonth": "month",
	"toMonday":       "week",
	"toDate":         "day",
	"toYYYYMMDD":     "day",
	"toStartOfDay":   "day",
	"toStartOfHour":  "hour",
}

// chPartitioning reads a ClickHouse partition key (system.tables.partition_key, or what
// chPartitionKey finds in engine_full) along column col of type typ. A key is rebuilt safely when
// one element of it (the key, or an element of the tuple it is) is the column or one of the
// partitionGrains of it, and no other element reads the column: then a window of the column's
// days falls in a known set of partitions. Anything else — a hash, a key on another column — is
// refused, naming the key.
func chPartitioning(table, key, col string, typ Type) (Partitioning, error) {
	key = strings.TrimSpace(key)
	if key == "" || key == "tuple()" {
		return Partitioning{Whole: true}, nil
	}
	p := Partitioning{Key: key}
	found := false
	grain := ""
	for _, el := range tupleElements(key) {
		g, ok, reads := elementGrain(el, col, typ)
		if !reads {
			continue // another dimension (a region): it splits each span further
		}
		if !ok {
			return p, refusedKey(table, key, col)
		}
		if !found || grainRank(g) < grainRank(grain) {
			grain = g
		}
		found = true
	}
	if !found {
		return p, refusedKey(table, key, col)
	}
	p.Grain = grain
	return p, nil
}

func refusedKey(table, key, col string) error {
	return fmt.Errorf("table %s is partitioned by %s, which is not %s or toYYYYMM, toStartOfMonth, toMonday or toDate of it (alone or in a tuple): a backfill cannot tell which partitions a window of %s falls in, so it does not rebuild them",
		table, key, col, col)
}

// tupleElements splits a key written (a, b) or tuple(a, b) into its elements; any other key is
// one element.
func tupleElements(key string) []string {
	inner := ""
	switch {
	case strings.HasPrefix(key, "tuple(") && closes(key, len("tuple")):
		inner = key[len("tuple(") : len(key)-1]
	case strings.HasPrefix(key, "(") && closes(key, 0):
		inner = key[1 : len(key)-1]
	default:
		return []string{key}
	}
	var out []string
	for _, el := range splitTopLevel(inner, ',') {
		out = append(out, strings.TrimSpace(el))
	}
	return out
}

// closes reports whether the parenthesis at open closes at the end of s.
func closes(s string, open int) bool {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i == len(s)-1
			}
		case '\'', '`', '"':
			i = skipQuoted(s, i) - 1
		}
	}
	return false
}

// topLevel yields the index of each byte of s outside parentheses and quotes (parentheses and
// quotes themselves aside).
func topLevel(s string) iter.Seq[int] {
	return func(yield func(int) bool) {
		depth := 0
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '(':
				depth++
			case c == ')':
				depth--
			case c == '\'' || c == '`' || c == '"':
				i = skipQuoted(s, i) - 1
			case depth == 0:
				if !yield(i) {
					return
				}
			}
		}
	}
}

// splitTopLevel splits s at sep outside parentheses and quotes.
func splitTopLevel(s string, sep byte) []string {
	var out []string
	start := 0
	for i := range topLevel(s) {
		if s[i] == sep {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// elementGrain reads one element of a partition key: the grain it gives along col (ok), and
// whether it reads col at all.
func elementGrain(el, col string, typ Type) (grain string, ok, reads bool) {
	if isColumn(el, col) {
		if typ == TypeDate {
			return "day", true, true
		}
		return "", true, true // a partition per second: finer than any window
	}
	if i := strings.IndexByte(el, '('); i > 0 && closes(el, i) {
		if g, known := partitionGrains[el[:i]]; known && isColumn(strings.TrimSpace(el[i+1:len(el)-1]), col) {
			return g, true, true
		}
	}
	return "", false, readsColumn(el, col)
}

// isColumn reports whether text is col itself, bare or quoted.
func isColumn(text, col string) bool {
	toks := Lex(text)
	return len(toks) == 1 && !toks[0].Literal() && toks[0].Ident() == col
}

// readsColumn reports whether an expression names col anywhere: as a bare or quoted identifier.
func readsColumn(expr, col string) bool {
	for _, t := range Lex(expr) {
		if t.Ident() == col {
			return true
		}
	}
	return false
}

// chPartitionKey finds the partition key in a table's engine_full, for servers whose
// system.tables has no partition_key: the expression after PARTITION BY, or toYYYYMM of the date
// column the old syntax names first (MergeTree(d, x, 8192)); "" when there is none.
func chPartitionKey(engineFull string) string {
	if i := strings.Index(engineFull, " PARTITION BY "); i >= 0 {
		rest := engineFull[i+len(" PARTITION BY "):]
		end := len(rest)
		for _, kw := range []string{" ORDER BY ", " PRIMARY KEY ", " SAMPLE BY ", " TTL ", " SETTINGS "} {
			if j := topLevelIndex(rest, kw); j >= 0 && j < end {
				end = j
			}
		}
		return strings.TrimSpace(rest[:end])
	}
	open := strings.IndexByte(engineFull, '(')
	if open < 0 || !strings.HasSuffix(engineFull[:open], "MergeTree") || !closes(engineFull, open) {
		return ""
	}
	args := splitTopLevel(engineFull[open+1:len(engineFull)-1], ',')
	for len(args) > 0 && strings.HasPrefix(strings.TrimSpace(args[0]), "'") {
		args = args[1:] // Replicated…MergeTree('zookeeper path', 'replica', d, …)
	}
	if len(args) < 3 || strings.TrimSpace(args[0]) == "" {
		return ""
	}
	return "toYYYYMM(" + strings.TrimSpace(args[0]) + ")"
}

// topLevelIndex is strings.Index of sub in s outside parentheses and quotes.
func topLevelIndex(s, sub string) int {
	for i := range topLevel(s) {
		if strings.HasPrefix(s[i:], sub) {
			return i
		}
	}
	return -1
}
