package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"trueup/notices"
	"trueup/ops"
	"trueup/ops/client"
)

const queryUsage = "query SQL|--file F|--exposure NAME [--version T=vN,…] [--as-of TIME] [--compare-to-live] [--format table|json|csv] [--limit N]"

// runQuery reads logical tables as they were: one read-only SELECT, a file holding one, or an
// exposure by name, with tables at named versions or as of a time, and with --compare-to-live
// the live answer beside it and the numbers that differ.
func runQuery(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	file := fs.String("file", "", "read the SELECT from this file")
	exposure := fs.String("exposure", "", "run the exposure (exposures/NAME.sql) of this name")
	versions := fs.String("version", "", "read these logical tables at these versions: orders=v1,daily_revenue=v2")
	asOf := fs.String("as-of", "", "read every logical table the query names at the version live then: 2026-07-20T09:00:00Z, '2026-07-20 09:00' (UTC), 2026-07-20")
	compare := fs.Bool("compare-to-live", false, "run it on the live tables too and show both, with the change per number")
	format := fs.String("format", "table", "output: table, json or csv")
	limit := fs.Int("limit", ops.DefaultQueryLimit, fmt.Sprintf("at most this many rows (up to %d)", ops.MaxQueryLimit))
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	switch *format {
	case "table", "text", "json", "csv":
	default:
		return usagef("query: --format %q: want table, json or csv", *format)
	}
	req := ops.QueryRequest{Target: e.globals.target, Exposure: *exposure, AsOf: *asOf, CompareToLive: *compare, Limit: *limit}
	if *limit <= 0 {
		return usagef("query: --limit %d: want 1 to %d rows", *limit, ops.MaxQueryLimit)
	}
	switch {
	case len(pos) > 1:
		return usagef("query: give the SQL as one argument (quote it); usage: trueup %s", queryUsage)
	case len(pos) == 1 && *file != "":
		return usagef("query: give SQL or --file, not both")
	case len(pos) == 1:
		req.SQL = pos[0]
	case *file != "":
		raw, err := os.ReadFile(*file)
		if err != nil {
			return usagef("query: --file: %v", err)
		}
		req.SQL = string(raw)
	case *exposure == "":
		return usagef("usage: trueup %s", queryUsage)
	}
	if req.Versions, err = parseVersionPairs(*versions); err != nil {
		return err
	}
	if _, err := ops.ParseAsOf(*asOf); err != nil {
		return err
	}
	q, done, err := queryOps(ctx, e, *exposure != "")
	if err != nil {
		return err
	}
	defer done.close()
	res, err := q.Query(ctx, req)
	if err != nil {
		return err
	}
	switch *format {
	case "json":
		return writeJSON(e.stdout, res)
	case "csv":
		return writeQueryCSV(e.stdout, res)
	}
	writeQueryText(e.stdout, res)
	return nil
}

// parseVersionPairs reads "orders=v1,daily_revenue=v2".
func parseVersionPairs(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		t, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		t, v = strings.TrimSpace(t), strings.TrimSpace(v)
		if !ok || t == "" || v == "" {
			return nil, usagef("query: --version %q: want TABLE=VERSION pairs, e.g. orders=v1,daily_revenue=v2", pair)
		}
		if _, dup := out[t]; dup {
			return nil, usagef("query: --version names %s twice", t)
		}
		out[t] = v
	}
	return out, nil
}

// queryOps is the query operation: through the server with --server, else over the project's
// views services (recovered first, as `trueup versions` does) and, when asked, its exposures.
func queryOps(ctx context.Context, e *env, exposures bool) (ops.Queries, *opsDone, error) {
	return openOps(ctx, e, (*client.Client).Queries, func(a *app) (ops.Queries, *opsDone, error) {
		log := slog.New(slog.NewTextHandler(e.stderr, nil))
		var xs []*notices.Exposure
		if exposures {
			ntc, err := openNotices(ctx, e, a, log)
			if err != nil {
				return nil, nil, err
			}
			xs = ntc.Exposures()
		}
		services := recoveredViews(ctx, e, a, a.Names, nil, log)
		return ops.NewQueries(services, a.Config.DefaultTarget, xs), &opsDone{app: a}, nil
	})
}

// readLine says the versions each table was read at, e.g. "daily_revenue v1 (live since …, swap #3)".
func readLine(rs []ops.TableRead) string {
	if len(rs) == 0 {
		return "no logical table"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.Table + " " + r.Version
		var notes []string
		switch {
		case r.Publish != 0:
			notes = append(notes, fmt.Sprintf("live from %s, %s #%d", r.Since.UTC().Format("2006-01-02 15:04:05 UTC"), r.Kind, r.Publish))
		case !r.Since.IsZero():
			notes = append(notes, "live then: as trueup first knew it, "+r.Since.UTC().Format("2006-01-02 15:04:05 UTC"))
		}
		if r.Live {
			notes = append(notes, "live now")
		}
		if len(notes) > 0 {
			parts[i] += " (" + strings.Join(notes, "; ") + ")"
		}
	}
	return strings.Join(parts, ", ")
}

func writeQueryText(w io.Writer, res ops.QueryResult) {
	head := "target " + res.Target
	if res.Exposure != "" {
		head = fmt.Sprintf("exposure %s (%s), %s", res.Exposure, res.Title, head)
	}
	if !res.AsOf.IsZero() {
		// the version live then, read as it is now: trueup keeps versions, not their past rows
		head += ", as of " + res.AsOf.Format("2006-01-02 15:04:05 UTC") + " (the versions live then, with the rows they hold now)"
	}
	fmt.Fprintln(w, head)
	asked := answerLines(res.Answer)
	if res.Live == nil {
		fmt.Fprintln(w, "read at: "+readLine(res.Read))
		fmt.Fprintln(w)
		for _, l := range asked {
			fmt.Fprintln(w, l)
		}
		fmt.Fprintln(w, rowCount(res.Answer))
		return
	}
	fmt.Fprintln(w, "as asked: "+readLine(res.Read))
	fmt.Fprintln(w, "live now: "+readLine(res.Live.Read))
	fmt.Fprintln(w)
	live := answerLines(res.Live.Answer)
	for _, l := range sideBySide(append([]string{"As asked", ""}, asked...), append([]string{"Live now", ""}, live...)) {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "%s as asked, %s live\n\n", rowCount(res.Answer), rowCount(res.Live.Answer))
	c := res.Live.Comparison
	if len(c.Rows) == 0 {
		fmt.Fprintf(w, "No number differs (%d the same).\n", c.Unchanged)
		return
	}
	fmt.Fprintf(w, "Numbers that differ: %d (%d the same)\n\n", len(c.Rows), c.Unchanged)
	fmt.Fprint(w, notices.NumberTable([]string{"row", "number", "as asked", "live now", "change"}, notices.NumberRows("", c.ExposureChange)))
}

func rowCount(a ops.Answer) string {
	s := strconv.Itoa(len(a.Rows)) + " rows"
	if len(a.Rows) == 1 {
		s = "1 row"
	}
	if a.Truncated {
		s += " (more left out: raise --limit)"
	}
	return "(" + s + ")"
}

// answerLines lays out an answer as an aligned table, numbers right-aligned.
func answerLines(a ops.Answer) []string {
	cells := make([][]string, len(a.Rows))
	numeric := make([]bool, len(a.Columns))
	for i := range numeric {
		numeric[i] = len(a.Rows) > 0
	}
	for r, row := range a.Rows {
		cells[r] = make([]string, len(row))
		for i, v := range row {
			cells[r][i] = ops.CellText(v)
			if s := string(v); s != "null" && (s == "" || s[0] == '"' || s == "true" || s == "false") {
				numeric[i] = false
			}
		}
	}
	width := make([]int, len(a.Columns))
	for i, c := range a.Columns {
		width[i] = utf8.RuneCountInString(c)
	}
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	line := func(row []string) string {
		parts := make([]string, len(row))
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if numeric[i] {
				parts[i] = pad + c
			} else {
				parts[i] = c + pad
			}
		}
		return strings.TrimRight(strings.Join(parts, "  "), " ")
	}
	out := []string{line(a.Columns)}
	sep := make([]string, len(a.Columns))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	out = append(out, line(sep))
	for _, row := range cells {
		out = append(out, line(row))
	}
	return out
}

// sideBySide sets two blocks of lines beside each other.
func sideBySide(left, right []string) []string {
	w := 0
	for _, l := range left {
		w = max(w, utf8.RuneCountInString(l))
	}
	var out []string
	for i := 0; i < max(len(left), len(right)); i++ {
		l, r := "", ""
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		out = append(out, strings.TrimRight(l+strings.Repeat(" ", w-utf8.RuneCountInString(l))+"  |  "+r, " "))
	}
	return out
}

// writeQueryCSV writes the answer as CSV; with --compare-to-live, the numbers that differ.
func writeQueryCSV(w io.Writer, res ops.QueryResult) error {
	cw := csv.NewWriter(w)
	if res.Live != nil {
		cw.Write([]string{"row", "number", "as_asked", "live", "change"})
		for _, r := range notices.NumberRows("", res.Live.Comparison.ExposureChange) {
			cw.Write([]string{r.Row, r.Number, r.Before, r.After, r.Change})
		}
	} else {
		cw.Write(res.Answer.Columns)
		for _, row := range res.Answer.Rows {
			rec := make([]string, len(row))
			for i, v := range row {
				if string(v) != "null" {
					rec[i] = ops.CellText(v)
				}
			}
			cw.Write(rec)
		}
	}
	cw.Flush()
	return cw.Error()
}
