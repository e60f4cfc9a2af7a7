package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"trueup/server/page"
)

// Identical page reads that arrive while one is being answered share its answer instead of
// asking the engines again: when 200 people watch the same backfill, the server builds each page
// once per round, not 200 times. A request joins a read already in flight, or (with
// Options.ReadCache) one answered less than ReadCache ago, and never one that started before
// the last write the server made, so a redirect after a POST shows the write; what changes on
// its own (a backfill's progress, a scheduled rule) shows up at most ReadCache late. The answer
// is the same for everyone who shares it: the key holds who asks (name, role) and the address
// asked (scheme and Host, which the notice feed roots its links at when no public_url is set:
// one request with Host: evil.example must not hand its links to every reader for ReadCache),
// and the page's CSRF token, the one part that differs, is swapped for each sharer's own.

// Bounds of the answers kept for ReadCache: small pages, a thousand of them.
const (
	maxKeptAnswers = 1000
	maxKeptBody    = 512 << 10
)

// flight is one read in progress and, once done, its answer.
type flight struct {
	done   chan struct{}
	status int
	header http.Header
	body   []byte
	csrf   string // the leader's CSRF token, as it appears in body
	err    error
	panic  any
	// kept is until when a finished answer may still be shared (zero: only while in flight).
	kept time.Time
}

type flights struct {
	mu sync.Mutex
	m  map[string]*flight
	// writes counts finished writes; a read joins only flights of the same count.
	writes atomic.Uint64
}

// shareable is a read whose answer depends only on the request's address and URI and who asks.
func shareable(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/static/"), p == "/healthz", p == "/readyz", p == "/metrics":
		return false
	}
	return true
}

// capture is the response writer a flight's leader renders into.
type capture struct {
	header http.Header
	status int
	buf    bytes.Buffer
}

func (w *capture) Header() http.Header { return w.header }
func (w *capture) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.buf.Write(b)
}
func (w *capture) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

// coalesce runs identical concurrent reads once (see above) and counts finished writes.
func (s *Server) coalesce(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if !safeMethod(req.Method) {
			defer s.flights.writes.Add(1)
			return next(c)
		}
		if !shareable(req) {
			return next(c)
		}
		id := requestIdentity(c)
		csrf := page.VisitorFrom(req.Context()).CSRF
		key := fmt.Sprintf("%d\x00%s\x00%s\x00%d\x00%t\x00%s\x00%s\x00%s\x00%s", s.flights.writes.Load(), id.Via, id.Name, id.Role,
			csrf != "", req.Header.Get("HX-Request"), c.Scheme(), req.Host, req.URL.RequestURI())

		s.flights.mu.Lock()
		if s.flights.m == nil {
			s.flights.m = map[string]*flight{}
		}
		f, joined := s.flights.m[key]
		if joined && !f.kept.IsZero() && !s.opt.Now().Before(f.kept) {
			joined = false // kept too long
		}
		if !joined {
			f = &flight{done: make(chan struct{}), csrf: csrf}
			s.flights.m[key] = f
		}
		s.flights.mu.Unlock()

		if joined {
			select {
			case <-f.done:
			case <-req.Context().Done():
				return req.Context().Err()
			}
			if errors.Is(f.err, context.Canceled) || f.panic != nil {
				return next(c) // the leader's client went away, or it failed hard: answer on our own
			}
			return s.replay(c, f, csrf)
		}

		resp := c.Response()
		orig := resp.Writer
		rec := &capture{header: http.Header{}}
		resp.Writer = rec
		func() {
			defer func() {
				if r := recover(); r != nil {
					f.panic = r
				}
			}()
			f.err = next(c)
		}()
		resp.Writer = orig
		resp.Committed = false
		f.status, f.header, f.body = rec.status, rec.header, rec.buf.Bytes()
		s.flights.mu.Lock()
		if s.opt.ReadCache > 0 && f.err == nil && f.panic == nil && f.status == http.StatusOK && len(f.body) <= maxKeptBody {
			f.kept = s.opt.Now().Add(s.opt.ReadCache)
			s.flights.sweep(s.opt.Now())
		} else {
			delete(s.flights.m, key)
		}
		s.flights.mu.Unlock()
		close(f.done)
		if f.panic != nil {
			panic(f.panic)
		}
		return s.replay(c, f, csrf)
	}
}

// sweep forgets kept answers that have expired, or all of them when there are too many.
// Flights in progress are left alone. The caller holds mu.
func (fs *flights) sweep(now time.Time) {
	if len(fs.m) < maxKeptAnswers {
		return
	}
	for k, f := range fs.m {
		if !f.kept.IsZero() && (!now.Before(f.kept) || len(fs.m) > maxKeptAnswers) {
			delete(fs.m, k)
		}
	}
}

// replay writes a flight's answer as this request's, with this request's CSRF token.
func (s *Server) replay(c echo.Context, f *flight, csrf string) error {
	if f.err != nil {
		return f.err
	}
	if f.status == 0 {
		return nil // the handler wrote nothing
	}
	h := c.Response().Header()
	for k, vs := range f.header {
		h[k] = vs
	}
	body := f.body
	if csrf != f.csrf && f.csrf != "" {
		body = bytes.ReplaceAll(body, []byte(f.csrf), []byte(csrf))
	}
	c.Response().WriteHeader(f.status)
	_, err := c.Response().Write(body)
	return err
}
