package server

import "github.com/labstack/echo/v4"

// registerRoutes is the one list of what the server answers. Pages go at the top level, their
// JSON twins under /api/v1/.
func (s *Server) registerRoutes(e *echo.Echo) {
	e.GET("/", s.dashboardShow)
	e.GET("/api/v1/tables", s.apiTableList)
	e.GET("/tables", s.tableListRedirect)
	e.GET("/tables/:table", s.tableShow)
	e.POST("/tables/:table/swap", s.tableSwap)
	e.POST("/tables/:table/rollback", s.tableRollback)
	e.GET("/api/v1/tables/:table", s.apiTableShow)
	e.POST("/api/v1/tables/:table/swap", s.apiTableSwap)
	e.POST("/api/v1/tables/:table/rollback", s.apiTableRollback)
	e.GET("/rules", s.ruleList)
	e.GET("/rules/:rule", s.ruleShow)
	e.POST("/rules/:rule/run", s.ruleRun)
	e.GET("/api/v1/rules", s.apiRuleList)
	e.GET("/api/v1/rules/:rule", s.apiRuleShow)
	e.POST("/api/v1/rules/:rule/run", s.apiRuleRun)
	e.GET("/notices", s.noticeList)
	e.GET("/notices.atom", s.noticeFeed)
	e.GET("/notices/:id", s.noticeShow)
	e.POST("/notices/:id/announce", s.noticeAnnounce)
	e.POST("/notices/:id/withdraw", s.noticeWithdraw)
	e.POST("/notices/:id/edit", s.noticeEdit)
	e.GET("/notices/:id/ack/:token", s.noticeAckShow)
	e.POST("/notices/:id/ack/:token", s.noticeAck)
	e.GET("/api/v1/notices", s.apiNoticeList)
	e.GET("/api/v1/notices/:id", s.apiNoticeShow)
	e.POST("/api/v1/notices/:id/announce", s.apiNoticeAnnounce)
	e.POST("/api/v1/notices/:id/withdraw", s.apiNoticeWithdraw)
	e.POST("/api/v1/notices/:id/edit", s.apiNoticeEdit)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(s.metrics.handler()))
	e.GET("/static/*", s.staticServe)
}
