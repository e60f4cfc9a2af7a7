package server

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/server/page"
	tsql "trueup/sql"
	"trueup/views"
)

// dashboardShow answers GET /: every target, reachable or not, and every logical table.
func (s *Server) dashboardShow(c echo.Context) error {
	d := page.Dashboard{Chrome: s.chrome("Dashboard", "Dashboard")}
	var tables []views.Table
	for _, t := range s.survey(c.Request().Context()) {
		row := page.TargetRow{Name: t.Name, Tables: len(t.Tables)}
		if t.Engine != nil {
			info := t.Engine.Info()
			row.Kind, row.Version = info.Kind, info.Version.Text
			row.Cluster = clusterRow(c.Request().Context(), t.Engine)
		}
		if t.Err != nil {
			row.Error = oneLine(t.Err)
		}
		d.Targets = append(d.Targets, row)
		tables = append(tables, t.Tables...)
	}
	sortTables(tables)
	work, recent, err := s.dashboardWork(c.Request().Context(), tables)
	if err != nil {
		return err
	}
	d.Work, d.Recent = work, recent
	d.Tables = tableRows(tables)
	return render(c, http.StatusOK, page.DashboardPage(d))
}

// clusterRow is the topology of a cluster target, each node asked now; nil for one server.
func clusterRow(ctx context.Context, e tsql.Engine) *page.ClusterRow {
	c, ok := e.(tsql.Cluster)
	if !ok || e.Info().Cluster == nil {
		return nil
	}
	ci := c.Probe(ctx)
	row := &page.ClusterRow{Name: ci.Name, Shards: ci.Shards, Replicas: ci.Replicas}
	for _, n := range ci.Nodes {
		row.Nodes = append(row.Nodes, page.ClusterNode{Shard: n.Shard, Replica: n.Replica, Addr: n.Addr, Reachable: n.Reachable, Version: n.Version.Text, Error: n.Error})
	}
	return row
}
