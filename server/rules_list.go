package server

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"trueup/monitor"
	"trueup/rules"
	"trueup/server/page"
)

// ruleJSON is one rule and its last result in the API.
type ruleJSON struct {
	Rule              string     `json:"rule"`
	Kind              string     `json:"kind"`
	Severity          string     `json:"severity"`
	Table             string     `json:"table,omitempty"`
	Description       string     `json:"description,omitempty"`
	Owner             string     `json:"owner,omitempty"`
	Tags              []string   `json:"tags"`
	Schedule          string     `json:"schedule,omitempty"`
	NextRun           *time.Time `json:"next_run,omitempty"`
	Status            string     `json:"status"` // pass, fail, error, running, never run
	LastRunID         int64      `json:"last_run_id,omitempty"`
	LastAt            *time.Time `json:"last_at,omitempty"`
	Violations        int64      `json:"violations"`
	FailingPartitions []string   `json:"failing_partitions"`
	Message           string     `json:"message,omitempty"`
}

func ruleInfo(st monitor.Status) ruleJSON {
	r := st.Rule
	out := ruleJSON{
		Rule: r.Name, Kind: string(r.Kind), Severity: string(r.Severity), Table: r.Table,
		Description: r.Description, Owner: r.Owner, Tags: append([]string{}, r.Tags...),
		Status: ruleStatus(st), FailingPartitions: []string{},
	}
	if r.Schedule != nil {
		out.Schedule = r.Schedule.String()
		if !st.Next.IsZero() {
			next := st.Next
			out.NextRun = &next
		}
	}
	if last := st.Last; last != nil {
		at := last.At
		out.LastRunID, out.LastAt, out.Violations, out.Message = last.RunID, &at, last.Violations, last.Message
		out.FailingPartitions = append(out.FailingPartitions, last.FailingPartitions...)
	}
	return out
}

func (s *Server) ruleStatuses() []monitor.Status {
	if s.opt.Rules == nil {
		return nil
	}
	return s.opt.Rules.Statuses()
}

// apiRuleList answers GET /api/v1/rules: every rule with its status and last result.
func (s *Server) apiRuleList(c echo.Context) error {
	w, err := pageWindow(c, 100, 1000)
	if err != nil {
		return err
	}
	all := s.ruleStatuses()
	nextLink(c, w, len(all) > w.Offset+w.Limit)
	out := []ruleJSON{}
	for _, st := range slice(all, w) {
		out = append(out, ruleInfo(st))
	}
	return c.JSON(http.StatusOK, out)
}

// rulesPerPage is how many rules a page of the list shows.
const rulesPerPage = 50

// ruleList answers GET /rules: every rule with its status and last run, and recent alerts.
func (s *Server) ruleList(c echo.Context) error {
	w, err := pageWindow(c, rulesPerPage, rulesPerPage)
	if err != nil {
		return err
	}
	all := s.ruleStatuses()
	d := page.RuleList{Chrome: s.chrome("Rules", "Rules"), Pager: pager(c, w, len(all) > w.Offset+w.Limit)}
	for _, st := range slice(all, w) {
		info := ruleInfo(st)
		row := page.RuleRow{
			Name: info.Rule, Href: ruleHref(info.Rule), Kind: info.Kind, Table: info.Table,
			Severity: info.Severity, Status: info.Status, Message: info.Message, Schedule: info.Schedule,
			Owner: info.Owner, Violations: info.Violations, Partitions: len(info.FailingPartitions),
		}
		if info.LastAt != nil {
			row.LastRun = formatTime(*info.LastAt)
		}
		if info.NextRun != nil {
			row.NextRun = formatTime(*info.NextRun)
		}
		d.Rules = append(d.Rules, row)
	}
	if s.opt.Rules != nil {
		alerts, err := s.opt.Rules.Alerts(c.Request().Context(), "", 20)
		if err != nil {
			return err
		}
		d.Alerts = alertRows(alerts)
	}
	return render(c, http.StatusOK, page.RuleListPage(d))
}

func alertRows(alerts []rules.Alert) []page.AlertRow {
	out := make([]page.AlertRow, len(alerts))
	for i, a := range alerts {
		out[i] = page.AlertRow{At: formatTime(a.At), Rule: a.Rule, Href: ruleHref(a.Rule), From: string(a.From), To: string(a.To), Message: a.Message}
	}
	return out
}
