package server

import (
	"context"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/fault"
	"trueup/notices"
	"trueup/ops"
	"trueup/server/page"
	"trueup/views"
)

// queryShow answers GET /query: the time-travel page. With sql or exposure it runs the query:
// versions=orders=v1,… and the pickers' v.<table> fields name versions, as_of a time, compare=yes
// the live answer beside it. Bad input shows the form again with the reason.
func (s *Server) queryShow(c echo.Context, q ops.Queries) error {
	ctx := c.Request().Context()
	d := page.Query{Chrome: s.chrome("Query as of", "Query"), SQL: c.QueryParam("sql"), Exposure: c.QueryParam("exposure"),
		AsOf: c.QueryParam("as_of"), Compare: c.QueryParam("compare") == "yes", Target: c.QueryParam("target")}
	if s.opt.Notices != nil {
		for _, x := range s.opt.Notices.Exposures() {
			d.Exposures = append(d.Exposures, page.QueryExposure{Name: x.Name, Title: x.Title})
		}
	}
	if strings.TrimSpace(d.SQL) == "" && d.Exposure == "" {
		return render(c, 200, page.QueryPage(d))
	}
	req := ops.QueryRequest{Target: d.Target, SQL: d.SQL, Exposure: d.Exposure, AsOf: d.AsOf, CompareToLive: d.Compare, Versions: map[string]string{}}
	if d.Exposure != "" {
		req.SQL = "" // the report's own SQL
	}
	if l := c.QueryParam("limit"); l != "" {
		req.Limit, _ = strconv.Atoi(l)
	}
	chosen := map[string]string{}
	for _, pair := range strings.Split(c.QueryParam("versions"), ",") {
		if t, v, ok := strings.Cut(pair, "="); ok && t != "" && v != "" {
			req.Versions[t], chosen[t] = v, v
		}
	}
	for k, vs := range c.QueryParams() {
		if t, ok := strings.CutPrefix(k, "v."); ok && t != "" && len(vs) > 0 && vs[0] != "" {
			req.Versions[t], chosen[t] = vs[0], vs[0]
		}
	}
	res, err := q.Query(ctx, req)
	if k := fault.Of(err); k == fault.Invalid || k == fault.NotFound {
		d.Error = fault.Message(err)
		d.Tables = s.queryPickers(ctx, d.Target, keys(chosen), chosen)
		return render(c, statusOf(k), page.QueryPage(d))
	}
	if err != nil {
		return err
	}
	if res.Exposure != "" && d.SQL == "" {
		d.SQL = res.SQL
	}
	fillQuery(&d, res)
	var tables []string
	for _, r := range res.Read {
		tables = append(tables, r.Table)
	}
	d.Tables = s.queryPickers(ctx, res.Target, tables, chosen)
	return render(c, 200, page.QueryPage(d))
}

func keys(m map[string]string) []string { return slices.Collect(maps.Keys(m)) }

// queryPickers is a version picker for each of tables, with its retained versions.
func (s *Server) queryPickers(ctx context.Context, target string, tables []string, chosen map[string]string) []page.QueryTable {
	var out []page.QueryTable
	for _, t := range tables {
		p := page.QueryTable{Name: t, Field: "v." + t, Chosen: chosen[t]}
		if s.opt.Tables != nil {
			if l, err := s.opt.Tables.Versions(ctx, ops.VersionsRequest{Target: target, Table: t}); err == nil {
				for _, v := range l.Listing().Versions {
					if v.Exists && v.State != "retired" {
						p.Versions = append(p.Versions, v.Name())
					}
					if v.Live {
						p.Live = v.Name()
					}
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// fillQuery lays out a query's answers, the changed numbers marked in both.
func fillQuery(d *page.Query, res ops.QueryResult) {
	d.Ran = true
	d.Head = "Target " + res.Target
	if res.Exposure != "" {
		d.Head = res.Title + " (" + res.Exposure + "), target " + res.Target
	}
	if !res.AsOf.IsZero() {
		d.Head += ", as of " + shortTime(res.AsOf)
	}
	var changed map[[2]string]bool
	var asked, live []string
	if res.Live != nil {
		c := res.Live.Comparison
		changed = map[[2]string]bool{}
		for _, r := range c.Rows {
			changed[[2]string{r.Label, r.Column}] = true
		}
		asked, live = c.BeforeLabels, c.AfterLabels
		for _, r := range notices.NumberRows("", c.ExposureChange) {
			d.Changes = append(d.Changes, page.NoticeNumber(r))
		}
		d.Unchanged = c.Unchanged
	}
	d.Asked = queryAnswer("As asked", readText(res.Read), res.Answer, changed, asked)
	if res.Live != nil {
		a := queryAnswer("Live now", readText(res.Live.Read), res.Live.Answer, changed, live)
		d.Live = &a
	}
}

func queryAnswer(title, read string, a ops.Answer, changed map[[2]string]bool, labels []string) page.QueryAnswer {
	out := page.QueryAnswer{Title: title, Read: read, Columns: a.Columns, Numeric: make([]bool, len(a.Columns)), Truncated: a.Truncated}
	for i := range out.Numeric {
		out.Numeric[i] = len(a.Rows) > 0
	}
	for r, row := range a.Rows {
		cells := make([]page.QueryCell, len(row))
		for i, v := range row {
			raw := string(v)
			if raw != "null" && (raw == "" || raw[0] == '"' || raw == "true" || raw == "false") {
				out.Numeric[i] = false
			}
			cells[i] = page.QueryCell{Text: ops.CellText(v)}
			if r < len(labels) && changed[[2]string{labels[r], a.Columns[i]}] {
				cells[i].Changed = true
			}
		}
		out.Rows = append(out.Rows, cells)
	}
	out.Count = page.Thousands(int64(len(a.Rows))) + " rows"
	if len(a.Rows) == 1 {
		out.Count = "1 row"
	}
	if a.Truncated {
		out.Count += " (more left out)"
	}
	return out
}

func readText(rs []ops.TableRead) string {
	if len(rs) == 0 {
		return "no logical table"
	}
	var parts []string
	for _, r := range rs {
		p := r.Table + " " + r.Version
		switch {
		case r.Publish != 0:
			p += " (live from " + shortTime(r.Since) + ", " + r.Kind + " #" + strconv.FormatInt(r.Publish, 10) + ")"
		case !r.Since.IsZero():
			p += " (live then: as trueup first knew it, " + shortTime(r.Since) + ")"
		}
		if r.Live {
			p += " — live now"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// queryHref is the query page for an exposure (or, without one, sql) read at versions, compared
// with live now: the "open this report as of before/after" links.
func queryHref(target, exposure, sql string, versions map[string]string) string {
	v := url.Values{}
	if target != "" {
		v.Set("target", target)
	}
	if exposure != "" {
		v.Set("exposure", exposure)
	} else {
		v.Set("sql", sql)
	}
	var pairs []string
	for _, t := range sortedNames(versions) {
		pairs = append(pairs, t+"="+versions[t])
	}
	if len(pairs) > 0 {
		v.Set("versions", strings.Join(pairs, ","))
	}
	v.Set("compare", "yes")
	return "/query?" + v.Encode()
}

func sortedNames(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// reportLinks opens each report reading a done swap's or rollback's tables as of before and
// after it (at the versions Sides gives, each report at the tables it reads), compared with live.
func (s *Server) reportLinks(target string, p views.Publish) []page.ReportLink {
	if s.opt.Notices == nil || s.opt.Queries == nil || p.State != views.PublishDone ||
		(p.Kind != views.KindSwap && p.Kind != views.KindRollback) {
		return nil
	}
	before, after := views.Sides(p)
	var out []page.ReportLink
	for _, x := range notices.Reading(s.opt.Notices.Exposures(), p.Tables()) {
		out = append(out, page.ReportLink{Title: x.Title,
			Before: queryHref(target, x.Name, "", only(before, x.Tables)),
			After:  queryHref(target, x.Name, "", only(after, x.Tables))})
	}
	return out
}

// noticeReportLinks opens each report a notice compares as of before (when the notice was
// drafted, before its change went live) and after (the versions it announces).
func (s *Server) noticeReportLinks(n notices.Notice) []page.ReportLink {
	if s.opt.Notices == nil || s.opt.Queries == nil || len(n.Evidence.Versions) == 0 {
		return nil
	}
	after := map[string]string{}
	for t, v := range n.Evidence.Versions {
		after[t] = views.VersionName(v)
	}
	var out []page.ReportLink
	for _, x := range s.opt.Notices.Exposures() {
		if !slices.ContainsFunc(n.Evidence.Exposures, func(c notices.ExposureChange) bool { return c.Exposure == x.Name }) {
			continue
		}
		b := url.Values{"exposure": {x.Name}, "as_of": {n.CreatedAt.UTC().Format("2006-01-02 15:04:05")}, "compare": {"yes"}}
		if n.Evidence.Target != "" {
			b.Set("target", n.Evidence.Target)
		}
		out = append(out, page.ReportLink{Title: x.Title, Before: "/query?" + b.Encode(),
			After: queryHref(n.Evidence.Target, x.Name, "", only(after, x.Tables))})
	}
	return out
}

// only is the versions of m of tables.
func only(m map[string]string, tables []string) map[string]string {
	out := map[string]string{}
	for _, t := range tables {
		if v, ok := m[t]; ok {
			out[t] = v
		}
	}
	return out
}
