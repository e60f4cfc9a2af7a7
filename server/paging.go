package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"trueup/server/page"
)

// maxOffset bounds how deep a list may be paged: far enough for any real log, short of making
// the engine skip a billion rows.
const maxOffset = 1_000_000

// window is the part of a list a request asks for.
type window struct {
	Limit, Offset int
	Page          int // 1-based page number for ?page=; 0 when the request used limit/offset
}

// pageWindow reads ?page=N (pages of perPage) or ?limit=&offset= (limit at most maxLimit).
// Nonsense is a 400, not a silent first page.
func pageWindow(c echo.Context, perPage, maxLimit int) (window, error) {
	w := window{Limit: perPage}
	bad := func(name, v string, lo, hi int) error {
		return echo.NewHTTPError(http.StatusBadRequest,
			fmt.Sprintf("?%s=%q: want a whole number from %d to %d.", name, v, lo, hi))
	}
	if v := c.QueryParam("page"); v != "" {
		n, err := strconv.Atoi(v)
		// Compare the page number, not (n-1)*perPage: a huge n overflows the product into a
		// negative offset.
		if lastPage := maxOffset/perPage + 1; err != nil || n < 1 || n > lastPage {
			return w, bad("page", v, 1, lastPage)
		}
		w.Page, w.Offset = n, (n-1)*perPage
		return w, nil
	}
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return w, bad("limit", v, 1, maxLimit)
		}
		w.Limit = n
	}
	if v := c.QueryParam("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxOffset {
			return w, bad("offset", v, 0, maxOffset)
		}
		w.Offset = n
	}
	if w.Page == 0 {
		w.Page = w.Offset/max(w.Limit, 1) + 1
	}
	return w, nil
}

// slice returns the window's part of all.
func slice[T any](all []T, w window) []T {
	if w.Offset >= len(all) {
		return nil
	}
	return all[w.Offset:min(len(all), w.Offset+w.Limit)]
}

// apiWindow is the window's part of all as an API answers it: an empty window is [] (never
// null), and a Link header names the next window when all goes beyond this one.
func apiWindow[T any](c echo.Context, w window, all []T) []T {
	nextLink(c, w, len(all) > w.Offset+w.Limit)
	if out := slice(all, w); out != nil {
		return out
	}
	return []T{}
}

// pager links the previous and next pages of a page-numbered list; more says whether there
// are rows beyond this page. Other query parameters (filters) are kept.
func pager(c echo.Context, w window, more bool) page.Pager {
	p := page.Pager{Page: w.Page}
	link := func(n int) string {
		q := url.Values{}
		for k, vs := range c.QueryParams() {
			if k != "page" && k != "limit" && k != "offset" {
				q[k] = vs
			}
		}
		if n > 1 {
			q.Set("page", strconv.Itoa(n))
		}
		if len(q) == 0 {
			return c.Request().URL.Path
		}
		return c.Request().URL.Path + "?" + q.Encode()
	}
	if w.Offset > 0 {
		p.PrevURL = link(max(w.Page-1, 1))
	}
	if more {
		p.NextURL = link(w.Page + 1)
	}
	return p
}

// nextLink tells an API client where the next window is, as a Link header (RFC 8288), when
// there is one: the body stays a plain JSON array.
func nextLink(c echo.Context, w window, more bool) {
	if !more {
		return
	}
	q := c.QueryParams()
	next := url.Values{}
	for k, vs := range q {
		if k != "page" {
			next[k] = vs
		}
	}
	next.Set("limit", strconv.Itoa(w.Limit))
	next.Set("offset", strconv.Itoa(w.Offset+w.Limit))
	c.Response().Header().Set("Link", "<"+c.Request().URL.Path+"?"+next.Encode()+`>; rel="next"`)
}
