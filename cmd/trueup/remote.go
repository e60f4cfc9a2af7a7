package main

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
	"os"
	"strings"
	"trueup/fault"
)

// remote is a running trueup a command goes through (--server URL): its JSON API under
// /api/v1/, with the API token of --token or TRUEUP_TOKEN.
type remote struct {
	base  *url.URL
	token string
	http  *http.Client
}

// remote returns the server the command goes through, or nil when it runs locally. A URL that
// is not http(s)://host[:port] is bad usage.
func (e *env) remote() (*remote, error) {
	raw := e.globals.server
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, usagef("--server %q: want the server's address, e.g. http://127.0.0.1:8080", raw)
	}
	u.Path = ""
	tok := e.globals.token
	if tok == "" {
		tok = os.Getenv("TRUEUP_TOKEN")
	}
	// No redirects: the API answers with JSON; a redirect means the URL is not a trueup API
	// (and a bearer token must not follow it elsewhere).
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &remote{base: u, token: strings.TrimSpace(tok), http: hc}, nil
}

// localOnly refuses, with --server, flags that only the local command has.
func (e *env) localOnly(cmd string, set map[string]bool) error {
	if e.globals.server == "" {
		return nil
	}
	for flag, on := range set {
		if on {
			return usagef("%s: --%s works only locally, not with --server", cmd, flag)
		}
	}
	return nil
}

// apiProblem is the JSON body of a refused /api/ request (server/errors.go).
type apiProblem struct {
	Error     string `json:"error"`
	Kind      string `json:"kind"`
	Failed    bool   `json:"failed"`
	RequestID string `json:"request_id"`
}

// call sends one API request and decodes the answer into out (when not nil). A refusal comes
// back as an error of the kind the server gave (fault), with its one-line message, so the
// command exits as it would locally; a missing or weak token (401, 403) and an unreachable
// server are bad input, exit 2. path is below /api/v1/
// with each name in it escaped by the caller (url.PathEscape), and is sent as it is: escaping it
// again sent "исправить" as %25D0%25B8…, a name the server does not have.
func (r *remote) call(ctx context.Context, cmd, method, path string, query url.Values, body, out any) error {
	u := *r.base
	u.RawPath = "/api/v1/" + strings.TrimPrefix(path, "/")
	unescaped, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return fmt.Errorf("%s: API path %q: %w", cmd, u.RawPath, err)
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
		return usagef("--server %s: %v", r.base, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	// Without tokens on the server, the audit log of a swap names the CLI's user as a local
	// command would; with tokens the server records the token's name instead.
	req.Header.Set("X-Trueup-Actor", cliActor())
	resp, err := r.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return usagef("%s: cannot reach the server at %s: %s", cmd, r.base, reachCause(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("%s: reading the server's answer: %w", cmd, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return usagef("%s: %s did not answer with trueup's JSON (is it a trueup server?): %v", cmd, r.base, err)
		}
		return nil
	}
	var p apiProblem
	if json.Unmarshal(raw, &p) != nil || p.Error == "" {
		return usagef("%s: %s answered %s, not trueup's JSON (is it a trueup server?)", cmd, r.base, resp.Status)
	}
	msg := fmt.Sprintf("%s: %s", cmd, p.Error)
	k := fault.Parse(p.Kind)
	if k != fault.None {
		// the server's message is the sentence the local command says: the same line either way
		return fault.New(k, "%s", p.Error)
	}
	switch code := resp.StatusCode; {
	case p.Failed:
		k = fault.Failed
	case code == http.StatusUnauthorized:
		return usagef("%s (HTTP 401 from %s: give a token with --token or TRUEUP_TOKEN)", msg, r.base)
	case code == http.StatusNotFound:
		k = fault.NotFound
	case code == http.StatusConflict:
		k = fault.Conflict
	case code >= 400 && code < 500:
		k = fault.Invalid
	default:
		return fmt.Errorf("%s (HTTP %d, request %s)", msg, resp.StatusCode, p.RequestID)
	}
	// the server's kind is the local command's: the same exit code either way
	return fault.New(k, "%s", msg)
}

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
