package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/ops"
	"trueup/rules"
	"trueup/server/page"
)

// apiRuleList answers GET /api/v1/rules: every rule with its status and last result.
func (s *Server) apiRuleList(c echo.Context) error {
	w, err := pageWindow(c, 100, 1000)
	if err != nil {
		return err
	}
	all, err := s.rules.List(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiWindow(c, w, all))
}

// recentAlerts is how many alerts the rule list shows, and the API answers by default.
const recentAlerts = 20

// apiAlertList answers GET /api/v1/alerts?rule=&limit=: the newest alerts of a rule, or of
// every rule (20 by default, at most 1000).
func (s *Server) apiAlertList(c echo.Context) error {
	w, err := pageWindow(c, recentAlerts, 1000)
	if err != nil {
		return err
	}
	alerts, err := s.rules.Alerts(c.Request().Context(), ops.AlertsRequest{Rule: c.QueryParam("rule"), Limit: w.Offset + w.Limit + 1})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiWindow(c, w, alerts))
}

// rulesPerPage is how many rules a page of the list shows.
const rulesPerPage = 50

// ruleList answers GET /rules: every rule with its status and last run, and recent alerts.
func (s *Server) ruleList(c echo.Context) error {
	w, err := pageWindow(c, rulesPerPage, rulesPerPage)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	all, err := s.rules.List(ctx)
	if err != nil {
		return err
	}
	d := page.RuleList{Chrome: s.chrome("Rules", "Rules"), Pager: pager(c, w, len(all) > w.Offset+w.Limit)}
	for _, info := range slice(all, w) {
		row := page.RuleRow{
			Name: info.Rule, Href: ruleHref(info.Rule), Kind: info.Kind, Table: info.Table,
			Severity: info.Severity, Status: info.Status, Message: info.Message, Schedule: info.Schedule,
			Owner: info.Owner, Violations: info.Violations, Partitions: len(info.FailingPartitions),
		}
		if info.LastAt != nil {
			row.LastRun = minuteTime(*info.LastAt)
		}
		if info.NextRun != nil {
			row.NextRun = minuteTime(*info.NextRun)
		}
		d.Rules = append(d.Rules, row)
	}
	if s.opt.Rules != nil {
		alerts, err := s.rules.Alerts(ctx, ops.AlertsRequest{Limit: recentAlerts})
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
