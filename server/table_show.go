package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"trueup/ops"
	"trueup/server/page"
	"trueup/views"
)

// publishesPerPage is how many swaps and rollbacks a page of a table's history shows.
const publishesPerPage = 20

// tableShow answers GET /tables/{table}: the versions page, its history a page at a time.
func (s *Server) tableShow(c echo.Context, t ops.Tables) error {
	w, err := pageWindow(c, publishesPerPage, publishesPerPage)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	table := c.Param("table")
	j, err := t.Versions(ctx, ops.VersionsRequest{Target: requestTarget(c), Table: table, History: w.Offset + w.Limit + 1})
	if pe, ok := errors.AsType[*views.PlainTableError](err); ok {
		return s.plainTablePage(c, pe)
	}
	if err != nil {
		return err
	}
	l := j.Listing()
	more := len(l.History) > w.Offset+w.Limit
	l.History = slice(l.History, w)
	d := s.versionsView(l, j.Busy)
	d.Pager = pager(c, w, more)
	if s.opt.Notices != nil {
		d.FeedURL = tableFeedURL(table)
		d.Subscribe = s.subscribeBox("this table", false, followChoice("table:"+table))
	}
	if stale, err := t.Stale(ctx, ops.VersionsRequest{Target: j.Target, Table: table}); err == nil {
		// Every version the stale check reports, as trueup check and trueup catch-up --dry-run
		// do: a version left with partitions inside a backfill's scope only (after a catch-up
		// carried the rest) still hides rows from readers until it is acknowledged.
		var carry, left []views.Carried
		for _, sv := range stale {
			d.Stale = append(d.Stale, staleRow(sv))
			carry, left = append(carry, sv.Partitions...), append(left, sv.InScope...)
		}
		d.Carry, d.Acknowledge = partitionsLabel(carry), partitionsLabel(left)
	} else {
		d.StaleError = "Could not tell whether an old version was written after it stopped being live: " + err.Error()
	}
	// A confirmation of nothing (someone else caught up first) did nothing: the flash says so
	// rather than "0 partitions carried".
	if n, err := strconv.Atoi(c.QueryParam("caught")); err == nil {
		d.Flash = fmt.Sprintf("Caught up: %s carried into the live version.", page.Plural(n, "partition", "partitions"))
		if n == 0 {
			d.Flash = "Nothing to catch up: nothing was carried."
		}
	}
	if n, err := strconv.Atoi(c.QueryParam("acknowledged")); err == nil {
		d.Flash = fmt.Sprintf("Acknowledged: %s inside a backfill's scope no longer reported.", page.Plural(n, "partition", "partitions"))
		if n == 0 {
			d.Flash = "Nothing to acknowledge: nothing was recorded."
		}
	}
	if v := c.QueryParam("retired"); v != "" {
		if n, err := views.ParseVersionArg(table, v); err == nil {
			d.Flash = fmt.Sprintf("Retired v%d: %s was dropped.", n, views.Physical(table, n))
		}
	}
	if id, err := strconv.ParseInt(c.QueryParam("done"), 10, 64); err == nil && id > 0 {
		if p, err := t.Publish(ctx, ops.PublishLookup{Target: j.Target, Table: table, ID: id}); err == nil {
			verb := map[string]string{views.KindRollback: "Rolled back", views.KindAdopt: "Adopted"}[p.Kind]
			if verb == "" {
				verb = "Swapped"
			}
			d.Flash = fmt.Sprintf("%s (#%d, %d ms): %s.", verb, p.ID, p.Duration().Milliseconds(), p.Summary())
			for _, w := range p.Warnings {
				d.Flash += " " + w
			}
		}
	}
	return render(c, http.StatusOK, page.TableVersionsPage(d))
}

// apiTableShow answers GET /api/v1/tables/{table}: the versions and ?limit= publishes of the
// history from ?offset= (20 by default, at most 1000; a Link header names the next).
func (s *Server) apiTableShow(c echo.Context, t ops.Tables) error {
	w, err := pageWindow(c, publishesPerPage, 1000)
	if err != nil {
		return err
	}
	j, err := t.Versions(c.Request().Context(), ops.VersionsRequest{Target: c.QueryParam("target"), Table: c.Param("table"), History: w.Offset + w.Limit + 1})
	if err != nil {
		return err
	}
	nextLink(c, w, len(j.History) > w.Offset+w.Limit)
	j.History = slice(j.History, w)
	return c.JSON(http.StatusOK, j)
}

// apiTablePublishShow answers GET /api/v1/tables/{table}/publishes/{id}: one swap or rollback.
func (s *Server) apiTablePublishShow(c echo.Context, t ops.Tables) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return echo.NewHTTPError(http.StatusNotFound, "There is no swap or rollback "+strconv.Quote(c.Param("id"))+".")
	}
	p, err := t.Publish(c.Request().Context(), ops.PublishLookup{Target: c.QueryParam("target"), Table: c.Param("table"), ID: id})
	return answer(c, p, err)
}

// apiTableWriteTarget answers GET /api/v1/tables/{table}/write-target: the physical table
// writers insert into now, for a pipeline to resolve at the start of each load.
func (s *Server) apiTableWriteTarget(c echo.Context, t ops.Tables) error {
	w, err := t.WriteTarget(c.Request().Context(), ops.VersionsRequest{Target: c.QueryParam("target"), Table: c.Param("table")})
	return answer(c, w, err)
}
