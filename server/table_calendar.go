package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/fault"
	"trueup/ops"
	"trueup/server/page"
	"trueup/views"
)

// tableCalendar answers GET /tables/:table/calendar?target=: the table's days, each rule's
// latest verdict on each, and the backfill runs that rebuilt them, live or not. The days are
// those readers see now (ops.Tables.Days), those of the table's newest stored diff (every
// partition it compared, a day since deleted too), of its rules' failing partitions and of its
// backfills' runs.
func (s *Server) tableCalendar(c echo.Context) error {
	ctx := c.Request().Context()
	table, target := c.Param("table"), c.QueryParam("target")
	if s.opt.Tables != nil {
		// A table or target that does not exist is a 404, as its versions page is; a plain table
		// (rules may watch it) has a calendar too.
		_, err := s.opt.Tables.Versions(ctx, ops.VersionsRequest{Target: target, Table: table, History: 1})
		if _, plain := errors.AsType[*views.PlainTableError](err); err != nil && !plain {
			return err
		}
	}
	d := page.TableCalendar{Chrome: s.chrome("Calendar of "+table, "Tables"), Table: table, Target: target,
		Back: "/tables/" + url.PathEscape(table) + "?target=" + url.QueryEscape(target)}
	days := map[string]bool{}
	if err := s.diffDays(ctx, table, days); err != nil {
		return err
	}
	if s.opt.Tables != nil {
		// the days readers see now, those written since the newest diff too
		now, err := s.opt.Tables.Days(ctx, ops.VersionsRequest{Target: target, Table: table})
		if err != nil {
			return err
		}
		for _, day := range now {
			days[day] = true
		}
	}
	var infos []ops.RuleInfo
	if s.opt.Rules != nil {
		all, err := s.rules.List(ctx)
		if err != nil {
			return err
		}
		for _, r := range all {
			if r.Table == table {
				infos = append(infos, r)
				for _, p := range r.FailingPartitions {
					days[p] = true
				}
			}
		}
	}
	type run struct {
		name, href string
		id         int64
		version    string // the version of the table the run built, e.g. "v2"
		parts      map[string]bool
	}
	var runs []run
	if s.opt.Backfills != nil {
		list, err := s.opt.Backfills.List(ctx)
		if err != nil {
			return err
		}
		for _, b := range list {
			if b.Latest == nil || b.Via != "" {
				continue // a downstream backfill's run is its upstream's, shown once under that
			}
			r := run{name: b.Name, href: backfillHref(b.Name), id: b.Latest.RunID, parts: map[string]bool{}}
			for _, t := range b.Latest.Tables {
				if t.Table == table {
					r.version = t.Version
				}
			}
			for _, p := range b.Latest.Partitions {
				if p.Table == table && p.State == "done" {
					r.parts[p.Partition], days[p.Partition] = true, true
				}
			}
			if len(r.parts) > 0 {
				runs = append(runs, r)
			}
		}
	}
	for day := range days {
		d.Days = append(d.Days, day)
	}
	slices.Sort(d.Days)
	live, history, err := s.liveAndHistory(ctx, target, table)
	if err != nil {
		return err
	}
	// A rule's verdict from before the table's latest swap or rollback is on the versions readers
	// saw then, not now: it colours no day until the rule runs again.
	var published *views.Publish
	for i, p := range history {
		if p.State == views.PublishDone {
			published = &history[i]
			break
		}
	}
	for _, r := range infos {
		row := page.CalendarRow{Name: r.Rule, Href: ruleHref(r.Rule), Kind: "rule"}
		failing := map[string]bool{}
		for _, p := range r.FailingPartitions {
			failing[p] = true
		}
		whole := r.Status == "fail" && len(r.FailingPartitions) == 0
		if whole {
			row.Note = "fails for the whole table"
		}
		stale := published != nil && r.LastAt != nil && r.LastAt.Before(published.FinishedAt) && (r.Status == "pass" || r.Status == "fail")
		if stale {
			row.Note = fmt.Sprintf("ran before %s #%d: run it again for what readers see now", published.Kind, published.ID)
		}
		for _, day := range d.Days {
			state := ""
			switch {
			case stale || (r.Status != "pass" && r.Status != "fail"):
				state = "" // never run, running, could not run, or ran on other versions: no verdict
			case failing[day] || whole:
				state = map[bool]string{true: "warn", false: "fail"}[r.Severity == "warn"]
			default:
				state = "pass"
			}
			title := day + ": " + r.Rule + " " + cmp.Or(state, r.Status)
			if stale {
				title = day + ": " + r.Rule + " " + row.Note
			}
			row.Cells = append(row.Cells, page.CalendarCell{Day: day, State: state, Title: title})
		}
		d.Rows = append(d.Rows, row)
	}
	for _, r := range runs {
		// what readers see now: the run's version is live, or it was swapped in and is no more
		state, note := "rebuilt", "not live"
		for _, p := range history {
			if p.RunID != r.id || p.Kind != views.KindSwap || p.State != views.PublishDone {
				continue
			}
			state, note = "undone", "rolled back"
			if p.UndoneBy == 0 {
				note = "replaced by a later swap"
			}
			break // the newest swap of the run
		}
		if r.version != "" && r.version == live {
			state, note = "live", "swapped in, live"
		}
		row := page.CalendarRow{Name: fmt.Sprintf("%s run %d", r.name, r.id), Href: r.href, Kind: "backfill", Note: note}
		for _, day := range d.Days {
			cell := page.CalendarCell{Day: day}
			if r.parts[day] {
				cell.State, cell.Title = state, day+": rebuilt by "+r.name+", "+note
			}
			row.Cells = append(row.Cells, cell)
		}
		d.Rows = append(d.Rows, row)
	}
	if n := len(d.Days); n > 0 {
		d.Labels = append(d.Labels, page.CalendarLabel{Day: d.Days[0]})
		if n > 1 {
			d.Labels = append(d.Labels, page.CalendarLabel{Day: d.Days[n-1], Column: n - 1})
		}
	}
	return render(c, http.StatusOK, page.TableCalendarPage(d))
}

// apiTableDays answers GET /api/v1/tables/{table}/days: the partitions readers of the table see
// now, oldest first.
func (s *Server) apiTableDays(c echo.Context, t ops.Tables) error {
	out, err := t.Days(c.Request().Context(), ops.VersionsRequest{Target: c.QueryParam("target"), Table: c.Param("table")})
	return answer(c, out, err)
}

// diffDays adds the partitions of the table's newest stored diff to days.
func (s *Server) diffDays(ctx context.Context, table string, days map[string]bool) error {
	if s.opt.Diffs == nil {
		return nil
	}
	list, err := s.opt.Diffs.List(ctx, 200)
	if err != nil {
		return err
	}
	for _, x := range list {
		if strings.HasPrefix(x.New.Relation, table+"__v") || strings.HasPrefix(x.Old.Relation, table+"__v") {
			r, err := s.opt.Diffs.Get(ctx, x.ID)
			if err != nil {
				return err
			}
			for _, p := range r.Partitions {
				days[p.Partition] = true
			}
			return nil
		}
	}
	return nil
}

// publishes are the table's swaps and rollbacks, newest first; none where versions are not set up.
func (s *Server) publishes(ctx context.Context, target, table string) ([]views.Publish, error) {
	_, h, err := s.liveAndHistory(ctx, target, table)
	return h, err
}

// liveAndHistory is the version readers of the table see now ("v2") and its swaps and rollbacks,
// newest first; neither where versions are not set up.
func (s *Server) liveAndHistory(ctx context.Context, target, table string) (string, []views.Publish, error) {
	if s.opt.Tables == nil {
		return "", nil, nil
	}
	l, err := s.opt.Tables.Versions(ctx, ops.VersionsRequest{Target: target, Table: table})
	if errors.Is(err, fault.ErrNotFound) {
		return "", nil, nil
	}
	return l.Live, l.History, err
}
