// Package client is package ops over HTTP: the same interfaces, answered by a running trueup's
// JSON API under /api/v1/, so the CLI's --server mode takes the same path as a local command. A
// refusal comes back as an error of the kind the server gave (package fault), with the server's
// one-line message.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"trueup/fault"
	"trueup/ops"
)

// Client talks to one server.
type Client struct {
	base  *url.URL
	token string
	actor string
	http  *http.Client
}

// New is a client of the server at base (http(s)://host[:port]), authenticating with token (none
// for ""). actor names who is asking for the audit log of a server without tokens; a server with
// tokens records the token's name instead.
func New(base, token, actor string) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fault.New(fault.Invalid, "--server %q: want the server's address, e.g. http://127.0.0.1:8080", base)
	}
	u.Path = ""
	// No redirects: the API answers with JSON; a redirect means the URL is not a trueup API
	// (and a bearer token must not follow it elsewhere).
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Client{base: u, token: strings.TrimSpace(token), actor: actor, http: hc}, nil
}

// Base is the server's address.
func (c *Client) Base() string { return c.base.String() }

// The operations by noun (package ops's interfaces), each answered by the server: one type per
// noun, the Client under that noun's methods, which its file (rules.go, backfills.go, …) holds.
type (
	rulesOps  struct{ c *Client }
	backfills struct{ c *Client }
	tables    struct{ c *Client }
	diffs     struct{ c *Client }
	noticeOps struct{ c *Client }
	queries   struct{ c *Client }
)

// Rules is ops.Rules through the server.
func (c *Client) Rules() ops.Rules { return rulesOps{c} }

// Backfills is ops.Backfills through the server: runs are built in the server's background, and
// go on there whatever happens to the caller.
func (c *Client) Backfills() ops.Backfills { return backfills{c} }

// Tables is ops.Tables through the server.
func (c *Client) Tables() ops.Tables { return tables{c} }

// Diffs is ops.Diffs through the server.
func (c *Client) Diffs() ops.Diffs { return diffs{c} }

// Notices is ops.Notices through the server. The server's own worker delivers what a write
// queues; Deliver asks it for a pass now.
func (c *Client) Notices() ops.Notices { return noticeOps{c} }

// Queries is ops.Queries through the server.
func (c *Client) Queries() ops.Queries { return queries{c} }

// problem is the JSON body of a refused /api/ request (server/errors.go).
type problem struct {
	Error     string `json:"error"`
	Kind      string `json:"kind"`
	Failed    bool   `json:"failed"`
	RequestID string `json:"request_id"`
}

// Call sends one API request (path below /api/v1/, each segment escaped by the caller) and
// decodes the answer into out when it is not nil.
func (c *Client) Call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	// path's names arrive escaped once (PathSegment) and are sent as they are: escaping them
	// again sent "исправить" as %25D0%25B8…, a name the server does not have
	u := *c.base
	u.RawPath = "/api/v1/" + strings.TrimPrefix(path, "/")
	unescaped, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return fmt.Errorf("API path %q: %w", u.RawPath, err)
	}
	u.Path = unescaped
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return fault.New(fault.Invalid, "--server %s: %v", c.base, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.actor != "" {
		req.Header.Set("X-Trueup-Actor", c.actor)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fault.New(fault.Invalid, "cannot reach the server at %s: %s", c.base, reachCause(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("reading the server's answer: %w", err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return fault.New(fault.Invalid, "%s did not answer with trueup's JSON (is it a trueup server?): %v", c.base, err)
		}
		return nil
	}
	var p problem
	if json.Unmarshal(raw, &p) != nil || p.Error == "" {
		return fault.New(fault.Invalid, "%s answered %s, not trueup's JSON (is it a trueup server?)", c.base, resp.Status)
	}
	k := fault.Parse(p.Kind)
	switch code := resp.StatusCode; {
	case k != fault.None:
	case p.Failed:
		k = fault.Failed
	case code == http.StatusUnauthorized:
		return fault.New(fault.Invalid, "%s (HTTP 401 from %s: give a token with --token or TRUEUP_TOKEN)", p.Error, c.base)
	case code == http.StatusNotFound:
		k = fault.NotFound
	case code == http.StatusConflict:
		k = fault.Conflict
	case code >= 400 && code < 500:
		k = fault.Invalid
	default:
		return fmt.Errorf("%s (HTTP %d, request %s)", p.Error, resp.StatusCode, p.RequestID)
	}
	return fault.New(k, "%s", p.Error)
}

// PathSegment escapes one segment of an API path (a table, rule or backfill name) once.
func PathSegment(s string) string { return url.PathEscape(s) }

// reachCause says in a few words why a server could not be reached.
func reachCause(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(err, &dns):
		return "no such host " + dns.Name
	case errors.As(err, &op) && op.Op == "dial":
		return op.Err.Error()
	}
	return err.Error()
}

// call is Call for an answer of type T.
func call[T any](ctx context.Context, c *Client, method, path string, query url.Values, body any) (T, error) {
	var out T
	err := c.Call(ctx, method, path, query, body, &out)
	return out, err
}

// callNew is call for an operation that answers by pointer: nil with an error.
func callNew[T any](ctx context.Context, c *Client, method, path string, query url.Values, body any) (*T, error) {
	out, err := call[T](ctx, c, method, path, query, body)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// pageLimit is the most a list route answers at once.
const pageLimit = 1000

// all is every item a list route (GET path?q&limit=&offset=) has from offset on, asked for a
// window of pageLimit at a time until one comes back short.
func all[T any](ctx context.Context, c *Client, path string, q url.Values, offset int) ([]T, error) {
	if q == nil {
		q = url.Values{}
	}
	out := []T{}
	for ; ; offset += pageLimit {
		q.Set("limit", strconv.Itoa(pageLimit))
		q.Set("offset", strconv.Itoa(offset))
		page, err := call[[]T](ctx, c, http.MethodGet, path, q, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < pageLimit {
			return out, nil
		}
	}
}
