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
	// An action's address opened again (Back after a confirmation, a reload, a shared link)
	// leads to the page the action is taken from, not to a 405: the action itself takes a POST.
	for _, p := range []string{"/tables/:table/swap", "/tables/:table/rollback", "/tables/:table/adopt", "/tables/:table/catch-up",
		"/notices/:id/announce", "/notices/:id/withdraw", "/notices/:id/edit",
		"/backfills/:name/run", "/backfills/:name/resume", "/backfills/:name/cancel"} {
		get(p, backToPage)
	}
	get("/", s.dashboardShow)
	get("/api/v1/tables", s.apiTableList)
	get("/tables", s.tableList)
	get("/tables/:table", with(s.tables, s.tableShow))
	get("/tables/:table/calendar", s.tableCalendar)
	e.POST("/tables/:table/swap", with(s.tables, s.tableSwap))
	e.POST("/tables/:table/rollback", with(s.tables, s.tableRollback))
	e.POST("/tables/:table/adopt", with(s.tables, s.tableAdopt))
	e.POST("/tables/:table/catch-up", with(s.tables, s.tableCatchUp))
	e.POST("/tables/:table/retire", with(s.tables, s.tableRetire))
	get("/api/v1/tables/:table", with(s.tables, s.apiTableShow))
	get("/api/v1/tables/:table/publishes/:id", with(s.tables, s.apiTablePublishShow))
	get("/api/v1/tables/:table/write-target", with(s.tables, s.apiTableWriteTarget))
	e.POST("/api/v1/tables/:table/swap", with(s.tables, s.apiTableSwap))
	e.POST("/api/v1/tables/:table/rollback", with(s.tables, s.apiTableRollback))
	e.POST("/api/v1/tables/:table/retire", with(s.tables, s.apiTableRetire))
	e.POST("/api/v1/tables/:table/adopt", with(s.tables, s.apiTableAdopt))
	get("/api/v1/tables/:table/stale", with(s.tables, s.apiTableStale))
	get("/api/v1/tables/:table/days", with(s.tables, s.apiTableDays))
	e.POST("/api/v1/tables/:table/catch-up", with(s.tables, s.apiTableCatchUp))
	get("/query", with(s.queries, s.queryShow))
	e.POST("/api/v1/query", s.apiQuery)
	get("/rules", s.ruleList)
	get("/rules/:rule", s.ruleShow)
	e.POST("/rules/:rule/run", s.ruleRun)
	get("/api/v1/rules", s.apiRuleList)
	get("/api/v1/rules/:rule", s.apiRuleShow)
	e.POST("/api/v1/rules/:rule/run", noBody(s.apiRuleRun))
	e.POST("/api/v1/check", s.apiCheckRun)
	get("/api/v1/alerts", s.apiAlertList)
	get("/backfills", with(s.backfills, s.backfillList))
	get("/backfills/:name", with(s.backfills, s.backfillShow))
	get("/backfills/:name/progress", with(s.backfills, s.backfillProgress))
	get("/backfills/:name/dry-run", s.backfillDryRunShow)
	e.POST("/backfills/:name/dry-run", with(s.backfills, s.backfillDryRun))
	e.POST("/backfills/:name/run", s.backfillRun)
	e.POST("/backfills/:name/resume", s.backfillResume)
	e.POST("/backfills/:name/cancel", s.backfillCancel)
	get("/api/v1/backfills", with(s.backfills, s.apiBackfillList))
	get("/api/v1/backfills/history", with(s.backfills, s.apiBackfillHistory))
	get("/api/v1/backfills/:name", with(s.backfills, s.apiBackfillShow))
	get("/api/v1/backfills/:name/status", with(s.backfills, s.apiBackfillStatus))
	e.POST("/api/v1/backfills/:name/:action", noBody(with(s.backfills, s.apiBackfillAction)))
	get("/notices", with(s.noticeReads, s.noticeList))
	get("/notices.atom", with(s.noticeReads, s.noticeFeed))
	get("/notices/:id", s.noticeShow)
	e.POST("/notices/:id/announce", s.noticeAnnounce)
	e.POST("/notices/:id/withdraw", s.noticeWithdraw)
	e.POST("/notices/:id/edit", s.noticeEdit)
	get("/notices/:id/ack/:token", s.noticeAckShow)
	e.POST("/notices/:id/ack/:token", s.noticeAck)
	s.subscriptionRoutes(e, get)
	get("/api/v1/notices", with(s.notices, s.apiNoticeList))
	get("/api/v1/notices/:id", s.apiNoticeShow)
	e.POST("/api/v1/notices/:id/announce", noBody(s.apiNoticeAnnounce))
	e.POST("/api/v1/notices/:id/withdraw", s.apiNoticeWithdraw)
	e.POST("/api/v1/notices/:id/edit", s.apiNoticeEdit)
	e.POST("/api/v1/notices/:id/complete", s.apiNoticeComplete)
	e.POST("/api/v1/notices/deliver", noBody(with(s.notices, s.apiNoticeDeliver)))
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
	get("/favicon.ico", s.faviconServe)
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

// with is a handler given the operations of its noun (s.tables, s.backfills, …), or a 404 when
// the server has none of them.
func with[T any](ops func() (T, error), h func(echo.Context, T) error) echo.HandlerFunc {
	return func(c echo.Context) error {
		svc, err := ops()
		if err != nil {
			return err
		}
		return h(c, svc)
	}
}
