package server

import (
	"net/url"

	"github.com/labstack/echo/v4"
)

// registerRoutes is the one list of what the server answers. Pages go at the top level, their
// JSON twins under /api/v1/. Who may use each route is in authz.go: every POST needs an entry
// in writeRoles. Every GET route answers HEAD too, with the same status and headers and no body
// (net/http drops what a handler writes for HEAD): probes and link checkers use it.
func (s *Server) registerRoutes(e *echo.Echo) {
	get := func(path string, h echo.HandlerFunc) {
		e.GET(path, h)
		e.HEAD(path, h)
	}
	get("/", s.dashboardShow)
	get("/api/v1/tables", s.apiTableList)
	get("/tables", s.tableList)
	get("/tables/:table", s.tableShow)
	get("/tables/:table/calendar", s.tableCalendar)
	e.POST("/tables/:table/swap", s.tableSwap)
	e.POST("/tables/:table/rollback", s.tableRollback)
	e.POST("/tables/:table/adopt", s.tableAdopt)
	e.POST("/tables/:table/catch-up", s.tableCatchUp)
	get("/api/v1/tables/:table", s.apiTableShow)
	get("/api/v1/tables/:table/publishes/:id", s.apiTablePublishShow)
	get("/api/v1/tables/:table/write-target", s.apiTableWriteTarget)
	e.POST("/api/v1/tables/:table/swap", s.apiTableSwap)
	e.POST("/api/v1/tables/:table/rollback", s.apiTableRollback)
	e.POST("/api/v1/tables/:table/retire", s.apiTableRetire)
	e.POST("/api/v1/tables/:table/adopt", s.apiTableAdopt)
	get("/api/v1/tables/:table/stale", s.apiTableStale)
	e.POST("/api/v1/tables/:table/catch-up", s.apiTableCatchUp)
	get("/query", s.queryShow)
	e.POST("/api/v1/query", s.apiQuery)
	get("/rules", s.ruleList)
	get("/rules/:rule", s.ruleShow)
	e.POST("/rules/:rule/run", s.ruleRun)
	get("/api/v1/rules", s.apiRuleList)
	get("/api/v1/rules/:rule", s.apiRuleShow)
	e.POST("/api/v1/rules/:rule/run", s.apiRuleRun)
	e.POST("/api/v1/check", s.apiCheckRun)
	get("/api/v1/alerts", s.apiAlertList)
	get("/backfills", s.backfillList)
	get("/backfills/:name", s.backfillShow)
	get("/backfills/:name/progress", s.backfillProgress)
	get("/backfills/:name/dry-run", s.backfillDryRunShow)
	e.POST("/backfills/:name/dry-run", s.backfillDryRun)
	e.POST("/backfills/:name/run", s.backfillRun)
	e.POST("/backfills/:name/resume", s.backfillResume)
	e.POST("/backfills/:name/cancel", s.backfillCancel)
	get("/api/v1/backfills", s.apiBackfillList)
	get("/api/v1/backfills/history", s.apiBackfillHistory)
	get("/api/v1/backfills/:name", s.apiBackfillShow)
	get("/api/v1/backfills/:name/status", s.apiBackfillStatus)
	e.POST("/api/v1/backfills/:name/:action", s.apiBackfillAction)
	get("/notices", s.noticeList)
	get("/notices.atom", s.noticeFeed)
	get("/notices/:id", s.noticeShow)
	e.POST("/notices/:id/announce", s.noticeAnnounce)
	e.POST("/notices/:id/withdraw", s.noticeWithdraw)
	e.POST("/notices/:id/edit", s.noticeEdit)
	get("/notices/:id/ack/:token", s.noticeAckShow)
	e.POST("/notices/:id/ack/:token", s.noticeAck)
	s.subscriptionRoutes(e, get)
	get("/api/v1/notices", s.apiNoticeList)
	get("/api/v1/notices/:id", s.apiNoticeShow)
	e.POST("/api/v1/notices/:id/announce", s.apiNoticeAnnounce)
	e.POST("/api/v1/notices/:id/withdraw", s.apiNoticeWithdraw)
	e.POST("/api/v1/notices/:id/edit", s.apiNoticeEdit)
	e.POST("/api/v1/notices/:id/complete", s.apiNoticeComplete)
	e.POST("/api/v1/notices/deliver", s.apiNoticeDeliver)
	get("/diffs", s.diffListShow)
	get("/diffs/:id", s.diffShow)
	get("/diffs/:id/partitions/:partition", s.diffPartitionShow)
	get("/api/v1/diffs", s.apiDiffList)
	e.POST("/api/v1/diffs", s.apiDiffRun)
	get("/api/v1/diffs/:id", s.apiDiffShow)
	get("/api/v1/diffs/:id/partitions/:partition", s.apiDiffPartitionShow)

	get("/audit", s.auditList)
	get("/api/v1/audit", s.apiAuditList)
	get("/login", s.loginShow)
	e.POST("/login", s.loginSubmit)
	e.POST("/logout", s.logout)

	get("/healthz", s.healthz)
	get("/readyz", s.readyz)
	get("/metrics", echo.WrapHandler(s.metrics.handler()))
	get("/static/*", s.staticServe)
}

// unescapeParams gives handlers a path's names as the user wrote them. The router matches on the
// path as sent when the client escaped it otherwise than Go would (%6F for o, lower-case hex),
// and then leaves the escapes in the parameters; a name means the same however it was escaped.
func unescapeParams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().URL.RawPath != "" {
			vs := c.ParamValues()
			for i, v := range vs {
				if u, err := url.PathUnescape(v); err == nil {
					vs[i] = u
				}
			}
			c.SetParamValues(vs...)
		}
		return next(c)
	}
}
