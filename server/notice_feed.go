package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/notices"
)

// noticeFeed answers GET /notices.atom (and ?table=): the Atom feed of announced notices.
func (s *Server) noticeFeed(c echo.Context) error {
	svc, err := s.notices()
	if err != nil {
		return err
	}
	table := c.QueryParam("table")
	ns, err := svc.List(c.Request().Context(), notices.Filter{Table: table})
	if err != nil {
		return err
	}
	out, err := notices.Feed(ns, svc.PublicURL(), feedURL(table), table)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, "application/atom+xml; charset=utf-8", out)
}
