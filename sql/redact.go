package sql

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
)

// A target URL can carry credentials: user:pass@ in its authority, or query parameters
// clickhouse-go reads (username, password; http_proxy with its own user:pass@). The engines
// keep the URL they were opened with to themselves and show only Redact(url): Info.Target and
// every open error are credential-free, so nothing that displays, logs or saves a target has
// to strip one.

// secretParams are the query parameters Redact drops (lower-cased): the ones clickhouse-go
// reads credentials from, and names that carry them by convention.
var secretParams = map[string]bool{"password": true, "username": true, "user": true, "secret": true, "token": true}

// Redact returns a target URL without its credentials: no user:pass@, no query parameter in
// secretParams, no credentials in http_proxy. A URL with none comes back exactly as given.
func Redact(target string) string {
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		// not a URL net/url reads (a bad port, an unescaped character in a password) or not
		// one with a host (duckdb:PATH): work on the text, hiding too much rather than too little
		return redactRaw(target)
	}
	changed := false
	if u.User != nil {
		u.User, changed = nil, true
	}
	if q, ok := redactQuery(u.RawQuery); ok {
		u.RawQuery, u.ForceQuery, changed = q, q == "" && u.ForceQuery, true
	}
	if !changed {
		return target
	}
	return u.String()
}

// redactRaw is Redact for text that does not parse as a URL: the query is cleaned first (a
// value may hold an "@"), then everything between "://" and the last "@" goes.
func redactRaw(s string) string {
	if i := strings.IndexByte(s, '?'); i >= 0 {
		if q, ok := redactQuery(s[i+1:]); ok {
			s = s[:i+1] + q
		}
	}
	if i := strings.Index(s, "://"); i >= 0 {
		if j := strings.LastIndexByte(s, '@'); j > i {
			s = s[:i+3] + s[j+1:]
		}
	}
	return s
}

// redactQuery drops the credential parameters from a raw query, keeping the others in their
// order and spelling. ok is false when there was nothing to drop.
func redactQuery(raw string) (string, bool) {
	if raw == "" {
		return raw, false
	}
	var keep []string
	changed := false
	for _, seg := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(seg, "=")
		if dk, err := url.QueryUnescape(k); err == nil {
			k = dk // the driver reads the decoded key: pass%77ord is password
		}
		switch k = strings.ToLower(k); {
		case secretParams[k]:
			changed = true
			continue
		case k == "http_proxy":
			if pv, err := url.QueryUnescape(v); err == nil {
				if r := Redact(pv); r != pv {
					seg, changed = seg[:len(seg)-len(v)]+url.QueryEscape(r), true
				}
			} else {
				seg, changed = seg[:len(seg)-len(v)], true
			}
		}
		keep = append(keep, seg)
	}
	return strings.Join(keep, "&"), changed
}

// targetKey tells targets apart where their redacted URLs cannot (two users of one server):
// engines opened on the same URL share it. It is a digest, so the credentials stay hidden.
func targetKey(target string) string {
	sum := sha256.Sum256([]byte(target))
	return hex.EncodeToString(sum[:16])
}

// redactedError is an open error whose text names the target without its credentials. It
// wraps the engine's error, so errors.Is and the fault kind see what they saw before.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactError takes target's credentials out of an error about it: where the error repeats the
// URL (bare or quoted) the redacted URL stands instead, and any password or user value left
// (a driver quoting part of the URL) is masked.
func redactError(target string, err error) error {
	clean := Redact(target)
	if err == nil || clean == target {
		return err
	}
	msg := err.Error()
	msg = strings.ReplaceAll(msg, strconv.Quote(target), strconv.Quote(clean))
	msg = strings.ReplaceAll(msg, target, clean)
	for _, s := range secretsOf(target) {
		msg = strings.ReplaceAll(msg, s, "xxxxx")
	}
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// secretsOf lists the passwords (and the like) in a target URL, as raw text and decoded, for
// redactError to mask wherever an error still shows one. User names are not masked: they are
// short common words ("default") that an error uses for other things too.
func secretsOf(target string) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
			if d, err := url.QueryUnescape(s); err == nil && d != s {
				out = append(out, d)
			}
		}
	}
	rest := target
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	authority, query := rest, ""
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		authority, query = rest[:i], rest[i+1:]
	}
	if j := strings.LastIndexByte(authority, '@'); j >= 0 {
		if _, pass, ok := strings.Cut(authority[:j], ":"); ok {
			add(pass)
		}
	}
	for _, seg := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(seg, "=")
		if dk, err := url.QueryUnescape(k); err == nil {
			k = dk
		}
		if k = strings.ToLower(k); secretParams[k] && k != "username" && k != "user" {
			add(v)
		}
	}
	return out
}
