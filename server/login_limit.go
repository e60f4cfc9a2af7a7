package server

import (
	"sync"
	"time"
)

// Failed login attempts are limited per client address: after loginBurst failures in any
// loginWindow, every wrong token from that address is answered 429 until the oldest failure falls
// out of the window. A right token always gets in, and does not count: behind a proxy every
// browser shares one address, and someone else's typos (or a guesser) must not lock the team out.
// That a right token is told apart from a wrong one while the limit holds gives a guesser
// nothing: `trueup token` makes 256-bit tokens, which no one finds by trying. What the limit
// bounds is the work and the log lines failures cost.
//
// Kept by hand rather than golang.org/x/time/rate: a token bucket per address would need the
// same map, its bound and its eviction around it, and could not tell a right token (never
// limited) from a wrong one; a sliding window of failure times is what the rule says.
const (
	loginBurst  = 5
	loginWindow = time.Minute
	maxLimited  = 10_000 // addresses remembered at once
)

// loginLimiter remembers the times of each address's recent failed logins.
type loginLimiter struct {
	mu       sync.Mutex
	failures map[string][]time.Time
	now      func() time.Time
	burst    int
	window   time.Duration
}

func newLoginLimiter(now func() time.Time) *loginLimiter {
	return newWindowLimiter(now, loginBurst, loginWindow)
}

// newWindowLimiter is the same sliding window for another rule: burst events in any window
// (the subscribe form counts every request, not failures).
func newWindowLimiter(now func() time.Time, burst int, window time.Duration) *loginLimiter {
	return &loginLimiter{failures: map[string][]time.Time{}, now: now, burst: burst, window: window}
}

// blocked reports whether addr must wait before trying again, and for how long.
func (l *loginLimiter) blocked(addr string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	recent := l.recent(addr, now)
	if len(recent) < l.burst {
		return false, 0
	}
	return true, recent[0].Add(l.window).Sub(now)
}

// fail records a failed attempt from addr.
func (l *loginLimiter) fail(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	recent := l.recent(addr, now)
	if len(l.failures) >= maxLimited {
		l.prune(now)
	}
	l.failures[addr] = append(recent, now)
}

func (l *loginLimiter) recent(addr string, now time.Time) []time.Time {
	ts := l.failures[addr]
	i := 0
	for i < len(ts) && !ts[i].After(now.Add(-l.window)) {
		i++
	}
	return ts[i:]
}

// prune forgets addresses with no attempt in the window; if every address is still active
// (a flood from many addresses), it forgets them all rather than grow without bound.
func (l *loginLimiter) prune(now time.Time) {
	for addr := range l.failures {
		if len(l.recent(addr, now)) == 0 {
			delete(l.failures, addr)
		}
	}
	if len(l.failures) >= maxLimited {
		clear(l.failures)
	}
}
