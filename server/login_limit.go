package server

import (
	"sync"
	"time"
)

// Login attempts are limited per client address so a token cannot be guessed at speed:
// loginBurst attempts in any loginWindow, then 429 until the oldest falls out of the window.
const (
	loginBurst  = 5
	loginWindow = time.Minute
	maxLimited  = 10_000 // addresses remembered at once
)

// loginLimiter remembers the times of each address's recent login attempts.
type loginLimiter struct {
	mu       sync.Mutex
	attempts map[string][]time.Time
	now      func() time.Time
}

func newLoginLimiter(now func() time.Time) *loginLimiter {
	return &loginLimiter{attempts: map[string][]time.Time{}, now: now}
}

// allow records an attempt from addr and reports whether it may go ahead; when it may not,
// wait says when the next one may.
func (l *loginLimiter) allow(addr string) (ok bool, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	recent := l.recent(addr, now)
	if len(recent) >= loginBurst {
		l.attempts[addr] = recent
		return false, recent[0].Add(loginWindow).Sub(now)
	}
	if len(l.attempts) >= maxLimited {
		l.prune(now)
	}
	l.attempts[addr] = append(recent, now)
	return true, 0
}

func (l *loginLimiter) recent(addr string, now time.Time) []time.Time {
	ts := l.attempts[addr]
	i := 0
	for i < len(ts) && !ts[i].After(now.Add(-loginWindow)) {
		i++
	}
	return ts[i:]
}

// prune forgets addresses with no attempt in the window; if every address is still active
// (a flood from many addresses), it forgets them all rather than grow without bound.
func (l *loginLimiter) prune(now time.Time) {
	for addr := range l.attempts {
		if len(l.recent(addr, now)) == 0 {
			delete(l.attempts, addr)
		}
	}
	if len(l.attempts) >= maxLimited {
		clear(l.attempts)
	}
}
