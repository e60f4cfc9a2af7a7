package server

import (
	"bytes"
	"fmt"
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"trueup/server/page"
)

// render writes a page. It renders into a buffer first so that a template error becomes a clean
// error page instead of half a page sent with status 200.
func render(c echo.Context, status int, comp templ.Component) error {
	var buf bytes.Buffer
	if err := comp.Render(c.Request().Context(), &buf); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// answer is how an API handler ends: the operation's error as it is (statusOf gives its status
// and body), else what it answered, as JSON.
func answer(c echo.Context, v any, err error) error {
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// chrome fills the parts every page shares.
func (s *Server) chrome(title, active string) page.Chrome {
	return page.Chrome{
		Title:   title,
		Active:  active,
		Notice:  s.opt.Notice,
		Version: s.opt.Version,
		Icon:    s.assets.url("favicon.svg"),
		Styles:  []string{s.assets.url("pico.min.css"), s.assets.url("app.css")},
		Scripts: []string{s.assets.url("htmx.min.js")},
	}
}
