package reconcile

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	tsql "trueup/sql"
)

// TextOptions tune WriteText.
type TextOptions struct {
	// All lists every partition; by default only the ones that differ.
	All bool
	// Samples is how many sample rows of each kind to print (default 5).
	Samples int
}

// WriteText prints a result for people: an aligned per-partition table like the seeds' dry-run
// table (partition old_count new_count delta pct_change), then the row-level summary.
func (r *Result) WriteText(w io.Writer, opt TextOptions) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "old  %s\n", sideText(r.Old))
	fmt.Fprintf(b, "new  %s\n", sideText(r.New))
	fmt.Fprintf(b, "key  %s", strings.Join(r.Key, ", "))
	if r.PartitionColumn != "" {
		fmt.Fprintf(b, "   partition  %s", r.PartitionColumn)
	}
	if len(r.Renamed) > 0 {
		fmt.Fprintf(b, "\nrenamed  %s", columnPairs(r.Renamed, " → "))
	}
	if r.Where != "" {
		fmt.Fprintf(b, "\nwhere  %s", r.Where)
	}
	if len(r.Precision) > 0 {
		fmt.Fprintf(b, "\nprecision  %s", columnPairs(r.Precision, " "))
	}
	b.WriteString("\n\n")

	head := []string{"partition", "old_count", "new_count", "delta", "pct_change"}
	for _, m := range r.Measures {
		head = append(head, m+"_pct")
	}
	head = append(head, "checksum", "verdict")
	// On a cluster diffed shard by shard, the shards each partition differs on.
	sharded := slices.ContainsFunc(r.Partitions, func(p *Partition) bool { return len(p.Shards) > 0 })
	if sharded {
		head = append(head, "shards")
	}
	rows := [][]string{head}
	shown := 0
	for _, p := range r.Partitions {
		if !opt.All && p.Verdict == VerdictUnchanged {
			continue
		}
		shown++
		row := []string{p.Partition, itoa(p.OldCount), itoa(p.NewCount), signed(p.Delta), pctText(p.PctChange)}
		for _, m := range r.Measures {
			row = append(row, pctText((*float64)(p.Measures[m].PctChange)))
		}
		check := "match"
		switch {
		case p.Presence == PresenceNewOnly:
			check = "new"
		case p.Presence == PresenceOldOnly:
			check = "missing"
		case !p.ChecksumMatch:
			check = "differs"
		}
		row = append(row, check, p.Verdict)
		if sharded {
			var on []string
			for _, n := range p.Shards {
				on = append(on, strconv.Itoa(n))
			}
			row = append(row, strings.Join(on, ","))
		}
		rows = append(rows, row)
	}
	if shown > 0 {
		writeTable(b, rows)
	}
	counts := r.Counts()
	fmt.Fprintf(b, "%d %s: %d unchanged, %d expected, %d unexpected\n", len(r.Partitions), plural(len(r.Partitions), "partition", "partitions"),
		counts[VerdictUnchanged], counts[VerdictExpected], counts[VerdictUnexpected])

	var reasons []string
	for _, p := range r.Partitions {
		for _, why := range p.Reasons {
			reasons = append(reasons, fmt.Sprintf("  %s  %s", p.Partition, why))
		}
	}
	if len(reasons) > 0 {
		b.WriteString("\nunexpected:\n" + strings.Join(reasons, "\n") + "\n")
	}

	fmt.Fprintf(b, "\nrows: %d added, %d removed, %d changed, %d duplicate %s", r.Rows.Added, r.Rows.Removed,
		r.Rows.Changed, r.Rows.DuplicateKeys, plural(int(r.Rows.DuplicateKeys), "key", "keys"))
	if r.Rows.NullKeyAdded+r.Rows.NullKeyRemoved > 0 {
		fmt.Fprintf(b, "; with a NULL key, matched whole: %d added, %d removed", r.Rows.NullKeyAdded, r.Rows.NullKeyRemoved)
	}
	b.WriteByte('\n')
	if len(r.ChangedColumns) > 0 {
		var parts []string
		for _, c := range slices.Sorted(maps.Keys(r.ChangedColumns)) {
			parts = append(parts, fmt.Sprintf("%s %d", c, r.ChangedColumns[c]))
		}
		fmt.Fprintf(b, "changed columns: %s\n", strings.Join(parts, ", "))
	}
	writeSamples(b, r.Samples, opt.Samples)
	if s := schemaText(r.Schema); s != "" {
		fmt.Fprintf(b, "schema: %s\n", s)
	}
	switch {
	case r.Expectations != "" && r.ExpectationsMet:
		fmt.Fprintf(b, "expectations: met (%s)\n", r.Expectations)
	case r.Expectations != "":
		fmt.Fprintf(b, "expectations: NOT met (%s)\n", r.Expectations)
	case r.Differs:
		b.WriteString("expectations: none given, so every difference is unexpected\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
	fmt.Fprintf(b, "rows transferred: %d", r.RowsTransferred)
	if r.CrossEngine {
		b.WriteString(" (across engines)")
	}
	fmt.Fprintf(b, "   took %.2fs", float64(r.ElapsedMS)/1000)
	if r.ID > 0 {
		fmt.Fprintf(b, "   saved as diff %d", r.ID)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// columnPairs lists m's columns in name order, each with sep and its value: "a → b, c → d".
func columnPairs(m map[string]string, sep string) string {
	var cols []string
	for _, c := range slices.Sorted(maps.Keys(m)) {
		cols = append(cols, c+sep+m[c])
	}
	return strings.Join(cols, ", ")
}

func sideText(s SideInfo) string {
	return fmt.Sprintf("%s  (%s %s)", s.Relation, s.Engine, s.Target)
}

func writeSamples(b *strings.Builder, s Samples, n int) {
	if n <= 0 {
		n = 5
	}
	var lines []string
	for i, c := range s.Changed {
		if i == n {
			break
		}
		var cols []string
		for _, x := range c.Columns {
			cols = append(cols, fmt.Sprintf("%s %v → %v", x.Column, ValueText(x.Old), ValueText(x.New)))
		}
		lines = append(lines, fmt.Sprintf("  changed  %s  %s: %s", c.Partition, KeyText(c.Key), strings.Join(cols, ", ")))
	}
	for i, a := range s.Added {
		if i == n {
			break
		}
		lines = append(lines, fmt.Sprintf("  added    %s  %s", a.Partition, KeyText(a.Key)))
	}
	for i, a := range s.Removed {
		if i == n {
			break
		}
		lines = append(lines, fmt.Sprintf("  removed  %s  %s", a.Partition, KeyText(a.Key)))
	}
	for i, d := range s.Duplicates {
		if i == n {
			break
		}
		lines = append(lines, fmt.Sprintf("  duplicate %s  %s: %d old rows, %d new rows", d.Partition, KeyText(d.Key), d.OldRows, d.NewRows))
		for _, x := range d.Surplus {
			lines = append(lines, fmt.Sprintf("    surplus in %s ×%d: %s", x.Side, x.Times, x.Values.Text()))
		}
	}
	if len(lines) > 0 {
		b.WriteString("samples:\n" + strings.Join(lines, "\n") + "\n")
	}
}

// ValueText shows a sample value: NULL for nil, numbers and text as they are, but quoted where
// the text would read as something else (an empty string beside NULL, "NULL" itself, spaces at
// either end or control characters that would not show). The text and the pages show samples
// alike.
func ValueText(v any) string {
	if v == nil {
		return "NULL"
	}
	if s, ok := v.(string); ok && (s == "" || s == "NULL" || strings.TrimSpace(s) != s || !shows(s)) {
		return strconv.Quote(s)
	}
	if tsql.Composite(v) { // a list or struct as JSON: ["a b"] and ["a","b"] read apart
		if b, err := json.Marshal(v); err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(v)
}

// shows reports whether every character of s shows as itself: valid UTF-8, no control character
// (a NUL, \x1f, a tab), nothing else unprintable.
func shows(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// KeyText shows a sample row's key as column=value pairs in --key order.
func KeyText(k Fields) string { return k.Text() }

func schemaText(s Schema) string {
	var parts []string
	for _, c := range s.Added {
		parts = append(parts, "+"+c.Name+" "+c.Type+ignoredText(c.Ignored))
	}
	for _, c := range s.Removed {
		parts = append(parts, "-"+c.Name+" "+c.Type+ignoredText(c.Ignored))
	}
	for _, c := range s.Changed {
		parts = append(parts, c.Name+" "+c.OldType+" → "+c.NewType)
	}
	return strings.Join(parts, "; ")
}

func ignoredText(ignored bool) string {
	if ignored {
		return " (ignored)"
	}
	return ""
}

// writeTable aligns columns: the first left, the rest right, two spaces apart.
func writeTable(b *strings.Builder, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			switch {
			case i == 0:
				line.WriteString(c + pad)
			case i >= len(r)-2: // checksum and verdict read better left-aligned
				line.WriteString("  " + c + pad)
			default:
				line.WriteString("  " + pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func signed(n int64) string {
	if n > 0 {
		return "+" + itoa(n)
	}
	return itoa(n)
}

func pctText(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*p, 'f', 1, 64)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
