package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"trueup/notices"
)

// noticeFeed answers GET /notices.atom (and ?table=): the Atom feed of announced notices.
func (s *Server) noticeFeed(c echo.Context, svc NoticeService) error {
	return feed(c, svc, c.QueryParam("table"), feedURL(c.QueryParam("table")), s.opt.Now())
}

// feed answers with the Atom feed of the announced notices about table (every table for ""),
// whose own address is self, made at now.
func feed(c echo.Context, svc NoticeService, table, self string, now time.Time) error {
	// With their history: a notice that went live, or was taken back, reads so (notices.Body).
	ns, err := svc.List(c.Request().Context(), notices.Filter{Table: table, Told: true, History: true})
	if err != nil {
		return err
	}
	base := svc.PublicURL()
	if base == "" {
		// Atom ids must be absolute and feed readers do not resolve relative links: without a
		// configured public_url, the feed is rooted at the address it was asked for (coalesce
		// shares a read only among requests for the same scheme and Host, so it stays theirs).
		base = c.Scheme() + "://" + c.Request().Host
	}
	out, err := notices.Feed(ns, strings.TrimRight(base, "/"), self, table, now)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, "application/atom+xml; charset=utf-8", out)
}
