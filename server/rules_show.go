package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/ops"
	"trueup/rules"
	"trueup/server/page"
	tsql "trueup/sql"
)

// historyLimit is how many past results a rule page shows (the strip) and lists (the table, a
// page at a time); maxHistory is how far back the pages and the API reach.
const (
	historyLimit = 60
	historyRows  = 20
	maxHistory   = 10_000
)

// ruleDetail reads the rule named in the path with the newest n results of its history.
func (s *Server) ruleDetail(c echo.Context, n int) (ops.RuleDetail, error) {
	return s.rules.Rule(c.Request().Context(), ops.RuleRequest{Rule: c.Param("rule"), History: n})
}

// apiRuleShow answers GET /api/v1/rules/{rule}: the rule, its last result and its history,
// ?limit= results from ?offset= (60 by default, at most 1000; a Link header names the next).
func (s *Server) apiRuleShow(c echo.Context) error {
	w, err := pageWindow(c, historyLimit, 1000)
	if err != nil {
		return err
	}
	if w.Offset+w.Limit > maxHistory {
		return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("The API reaches the newest %d results of a rule.", maxHistory))
	}
	d, err := s.ruleDetail(c, w.Offset+w.Limit+1)
	if err != nil {
		return err
	}
	d.History = apiWindow(c, w, d.History)
	return c.JSON(http.StatusOK, d)
}

// ruleShow answers GET /rules/{rule}: what the rule checks, its last result (failing
// partitions, sample rows, the SQL it ran) or, before its first run, the SQL it compiles to,
// and its history as a strip and a table.
func (s *Server) ruleShow(c echo.Context) error {
	w, err := pageWindow(c, historyRows, historyRows)
	if err != nil {
		return err
	}
	if w.Offset+w.Limit > maxHistory {
		return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("The history pages reach the newest %d results.", maxHistory))
	}
	d, err := s.ruleDetail(c, max(historyLimit, w.Offset+w.Limit+1))
	if err != nil {
		return err
	}
	p := page.RuleDetail{
		Chrome: s.chrome(d.Rule, "Rules"), Name: d.Rule, Description: d.Description, Path: d.Path,
		Kind: d.Kind, Table: d.Table, Severity: d.Severity, Owner: d.Owner, Tags: strings.Join(d.Tags, ", "),
		Schedule: d.Schedule, Explain: d.Checks, Status: d.Status, RunURL: ruleHref(d.Rule) + "/run",
		Alerts: alertRows(d.Alerts), SQL: d.SQL, SQLError: d.SQLError,
	}
	if d.NextRun != nil {
		p.NextRun = formatTime(*d.NextRun)
	}
	p.JustRan, _ = strconv.ParseInt(c.QueryParam("run"), 10, 64)
	if p.Backfills, err = s.backfillsFromRule(c.Request().Context(), d.Rule); err != nil {
		return err
	}
	if d.Latest != nil {
		p.Latest = resultView(*d.Latest)
	}
	for i := min(len(d.History), historyLimit) - 1; i >= 0; i-- {
		h := d.History[i]
		p.Strip = append(p.Strip, page.StripCell{Status: string(h.Status),
			Title:      fmt.Sprintf("run %d, %s: %s", h.RunID, formatTime(h.At), h.Status),
			Violations: h.Violations, Partitions: len(h.FailingPartitions)})
	}
	p.Pager = pager(c, w, len(d.History) > w.Offset+w.Limit)
	for _, h := range slice(d.History, w) {
		p.History = append(p.History, page.HistoryRow{RunID: h.RunID, At: formatTime(h.At), Status: string(h.Status),
			Violations: h.Violations, Partitions: len(h.FailingPartitions), Duration: formatMS(h.DurationMS), Message: h.Message})
	}
	return render(c, http.StatusOK, page.RuleDetailPage(p))
}

func formatMS(ms float64) string {
	if ms < 1000 {
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.2f s", ms/1000)
}

// cellValue is a value read from an engine as a table cell shows it: a number with thousands
// separators (to the digits it has), anything else as text.
func cellValue(v any) page.Value {
	switch x := v.(type) {
	case nil:
		return page.Value{Text: "NULL"}
	case int64, int32, int16, int8, int, uint64, uint32, uint16, uint8:
		n, err := strconv.ParseInt(fmt.Sprint(x), 10, 64)
		if err != nil { // beyond int64
			return page.Value{Text: fmt.Sprint(x), Number: true}
		}
		return page.Value{Text: page.Thousands(n), Number: true}
	case float64, float32, tsql.Decimal:
		s := tsql.AsText(x)
		whole, frac, found := strings.Cut(strings.TrimPrefix(s, "-"), ".")
		n, err := strconv.ParseInt(whole, 10, 64)
		if err != nil { // 1e+21 and the like
			return page.Value{Text: s, Number: true}
		}
		out := page.Thousands(n)
		if strings.HasPrefix(s, "-") {
			out = "-" + out
		}
		if found {
			out += "." + frac
		}
		return page.Value{Text: out, Number: true}
	}
	return page.Value{Text: tsql.AsText(v)}
}

// resultView lays a result out for the page: sample rows as a table whose columns are every
// field any row has, in first-seen order.
func resultView(r rules.Result) *page.ResultView {
	v := &page.ResultView{RunID: r.RunID, At: formatTime(r.At), Status: string(r.Status), Message: r.Message,
		Violations: r.Violations, Duration: formatMS(r.DurationMS), Partitions: r.FailingPartitions, SQL: r.SQL}
	index := map[string]int{}
	for _, row := range r.Sample {
		for _, f := range row {
			if _, ok := index[f.Name]; !ok {
				index[f.Name] = len(v.SampleCols)
				v.SampleCols = append(v.SampleCols, f.Name)
			}
		}
	}
	for _, row := range r.Sample {
		cells := make([]page.Value, len(v.SampleCols))
		for _, f := range row {
			cells[index[f.Name]] = cellValue(f.Value)
		}
		v.SampleRows = append(v.SampleRows, cells)
	}
	return v
}
