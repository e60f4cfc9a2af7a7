package server

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"trueup/ops"
	"trueup/server/page"
	"trueup/views"
)

// actorHeader names who a swap or rollback acts as. With tokens configured, authenticate sets
// it to the proven name; without them every visitor is the local operator and a client (a
// script, the CLI) may name itself for the audit log.
const actorHeader = "X-Trueup-Actor"

func (s *Server) tableActor(c echo.Context) string {
	if a := strings.TrimSpace(c.Request().Header.Get(actorHeader)); a != "" {
		return a
	}
	return s.actor(c)
}

// tableWrite is what a POST to /api/v1/tables/{table}/… or /tables/{table}/… takes besides its
// body: the target of ?target= when given (else bodyTarget, the body's or the form's), the table
// of the path and the caller.
func (s *Server) tableWrite(c echo.Context, bodyTarget string) ops.Subject {
	return ops.Subject{Target: cmp.Or(c.QueryParam("target"), bodyTarget), Table: c.Param("table"), Actor: s.tableActor(c)}
}

func tableHref(table, target string) string {
	return "/tables/" + url.PathEscape(table) + "?target=" + url.QueryEscape(target)
}

// tables is the table operations, or a 404 on a server without them.
func (s *Server) tables() (ops.Tables, error) {
	if s.opt.Tables == nil {
		return nil, echo.NewHTTPError(http.StatusNotFound, "Versions are not set up on this server.")
	}
	return s.opt.Tables, nil
}

// requestTarget is the target a table request names: ?target=, else the form's target field.
func requestTarget(c echo.Context) string {
	if t := c.QueryParam("target"); t != "" {
		return t
	}
	return c.FormValue("target")
}

func shortTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// minuteTime is a time to the minute, UTC (the column says so): short enough for a table cell.
func minuteTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04")
}

// versionsView builds the versions page's view model; busy says who holds the table, if anyone.
func (s *Server) versionsView(l views.Listing, busy string) page.TableVersions {
	d := page.TableVersions{
		Chrome: s.chrome(l.Table, "Tables"), Table: l.Table, Target: l.Target,
		Live: views.VersionName(l.Live), RollbackTarget: views.VersionName(l.RollbackTarget),
		SwapURL:     "/tables/" + url.PathEscape(l.Table) + "/swap",
		RollbackURL: "/tables/" + url.PathEscape(l.Table) + "/rollback",
		CatchUpURL:  "/tables/" + url.PathEscape(l.Table) + "/catch-up",
		RetireURL:   "/tables/" + url.PathEscape(l.Table) + "/retire",
	}
	d.Busy = busy
	for _, n := range l.Nodes {
		d.Nodes = append(d.Nodes, page.NodeVersionRow{Node: n.Node, Shard: n.Shard, Replica: n.Replica, Reachable: n.Reachable,
			Version: views.VersionName(n.Version), Error: n.Error})
		d.NodesDown = d.NodesDown || !n.Reachable
	}
	d.Mixed = views.Mixed(l.Nodes)
	for _, v := range l.Versions {
		row := page.VersionRow{
			Name: v.Name(), State: v.State, Live: v.Live, RollbackTarget: v.RollbackTarget, BuiltBy: v.BuiltBy,
			Created: minuteTime(v.CreatedAt), Rows: v.Rows, Checksum: v.Checksum, VsLive: "",
			OverrideBy: v.OverrideBy, OverrideReason: v.OverrideReason,
			CanSwap: !v.Live && v.Exists && v.State != views.StateRetired && v.State != views.StateBuilding && v.State != views.StateCancelled,
			// A retired version whose table is still there (the drop failed) is retired again to drop it.
			CanRetire: !v.Live && !v.RollbackTarget && v.State != views.StateBuilding && (v.State != views.StateRetired || v.Exists),
		}
		if v.Backfill != "" {
			row.Backfill = fmt.Sprintf("%s (run %d)", v.Backfill, v.RunID)
		}
		if v.DiffID != 0 {
			row.DiffHref = fmt.Sprintf("/diffs/%d", v.DiffID)
		}
		switch v.State {
		case views.StateBuilding:
			row.Unfinished = "still building"
		case views.StateCancelled:
			row.Unfinished = "cancelled, partly built"
		}
		if v.HasLiveCompare && row.Unfinished == "" {
			// short: the cell is the table's last column, and a 1280 px window must show it
			row.VsLive = page.SignedThousands(v.RowsVsLive) + " rows"
			switch {
			case v.SameAsLive:
				row.VsLive += ", identical"
			case v.ChecksumCompared:
				row.VsLive += ", differs"
			} // else checksums of different kinds: the diff link says how they differ
		}
		d.Versions = append(d.Versions, row)
	}
	for _, p := range l.History {
		row := publishRow(p)
		row.Reports = s.reportLinks(l.Target, p)
		d.History = append(d.History, row)
	}
	return d
}

func publishRow(p views.Publish) page.PublishRow {
	r := page.PublishRow{ID: p.ID, Kind: p.Kind, State: p.State, Actor: p.Actor, At: shortTime(p.StartedAt),
		Summary: p.Summary(), Reason: p.Reason, Carried: p.CarriedSummary(), NotCarried: p.NotCarriedSummary()}
	if p.OverrideBy != "" {
		r.Override = p.OverrideBy + ": " + p.OverrideReason
	}
	if d := p.Duration(); d > 0 {
		r.Duration = fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return r
}

// confirmView builds the confirmation step of a plan.
func (s *Server) confirmView(ctx context.Context, target string, p views.Plan, to string) page.TableConfirm {
	action := "/tables/" + url.PathEscape(p.Table) + "/" + p.Kind
	title := "Swap " + p.Table
	if p.Kind == views.KindRollback {
		title = "Roll back " + p.Table
	}
	d := page.TableConfirm{
		Chrome: s.chrome(title, "Tables"), Kind: p.Kind, Table: p.Table, Target: target, Action: action, To: to,
		NeedsOverride: p.NeedsOverride, Backfill: p.Backfill, Undoes: p.Undoes, CancelURL: tableHref(p.Table, target),
		Refused: p.Refused,
	}
	for _, c := range p.Changes {
		from := views.VersionName(c.From)
		if from == "" {
			from = "(no view)"
		}
		d.Changes = append(d.Changes, page.ChangeRow{Table: c.Table, From: from, To: views.VersionName(c.To), Carry: c.CarryLine(p.Kind, true),
			NotCarried: c.NotCarriedLine(p.Kind, true)})
	}
	for _, g := range p.Gate {
		d.Gate = append(d.Gate, page.GateRow{Version: g.Table + " " + views.VersionName(g.Version), Passed: g.Passed, Why: g.Why})
	}
	s.whoIsTold(ctx, &d, p)
	return d
}

// whoIsTold fills in the notices a publish moves, as the notices foresee it (p.Notices: what the
// publish will do), and its recipients: the subscribers of the tables that move and of the
// reports that read them.
func (s *Server) whoIsTold(ctx context.Context, d *page.TableConfirm, p views.Plan) {
	if s.opt.Notices == nil {
		return
	}
	var tables []string
	for _, c := range p.Changes {
		tables = append(tables, c.Table)
	}
	var exposures []string
	for _, x := range s.opt.Notices.Exposures() {
		for _, t := range x.Tables {
			if slices.Contains(tables, t) {
				exposures = append(exposures, x.Name)
				break
			}
		}
	}
	seen := map[string]bool{}
	for _, sub := range s.opt.Notices.Subscriptions() {
		if (sub.Table != "" && slices.Contains(tables, sub.Table)) || (sub.Exposure != "" && slices.Contains(exposures, sub.Exposure)) {
			if r := sub.Recipient(); !seen[r] {
				seen[r] = true
				d.Told = append(d.Told, r)
			}
		}
	}
	for _, r := range s.selfTold(ctx, tables, exposures) {
		if !seen[r] {
			seen[r] = true
			d.Told = append(d.Told, r)
		}
	}
	for _, n := range p.Notices {
		d.Notices = append(d.Notices, page.NoticeMoveRow{Href: fmt.Sprintf("/notices/%d", n.ID), Title: n.Title, From: n.From, To: n.To})
	}
}
