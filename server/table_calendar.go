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
// those of the table's newest stored diff (every partition it compared) and of its rules'
// failing partitions.
func (s *Server) tableCalendar(c echo.Context) error {
	ctx := c.Request().Context()
	table, target := c.Param("table"), c.QueryParam("target")
	d := page.TableCalendar{Chrome: s.chrome("Calendar of "+table, "Tables"), Table: table, Target: target,
		Back: "/tables/" + url.PathEscape(table) + "?target=" + url.QueryEscape(target)}
	days := map[string]bool{}
	if err := s.diffDays(ctx, table, days); err != nil {
		return err
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
		for _, day := range d.Days {
			state := ""
			switch {
			case r.Status != "pass" && r.Status != "fail":
				state = "" // never run, running, or could not run: no verdict
			case failing[day] || whole:
				state = map[bool]string{true: "warn", false: "fail"}[r.Severity == "warn"]
			default:
				state = "pass"
			}
			row.Cells = append(row.Cells, page.CalendarCell{Day: day, State: state, Title: day + ": " + r.Rule + " " + cmp.Or(state, r.Status)})
		}
		d.Rows = append(d.Rows, row)
	}
	history, err := s.publishes(ctx, target, table)
	if err != nil {
		return err
	}
	for _, r := range runs {
		state, note := "rebuilt", "not live"
		for _, p := range history {
			if p.RunID == r.id && p.Kind == "swap" && p.State == "done" {
				state, note = "live", "swapped in"
				if p.UndoneBy != 0 {
					state, note = "undone", "rolled back"
				}
			}
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
	if s.opt.Tables == nil {
		return nil, nil
	}
	l, err := s.opt.Tables.Versions(ctx, ops.VersionsRequest{Target: target, Table: table})
	if errors.Is(err, fault.ErrNotFound) {
		return nil, nil
	}
	return l.History, err
}
