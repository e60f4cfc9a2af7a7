package monitor

import (
	"sort"
	"sync"
	"time"
)

// Clock is the scheduler's time source.
type Clock interface {
	Now() time.Time
	// After sends the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

// WallClock is the real clock, in UTC.
func WallClock() Clock { return wallClock{} }

type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now().UTC() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// FakeClock is a Clock that moves only when told to, for tests of schedules.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	waits   int // After calls so far
	changed chan struct{}
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewFakeClock returns a clock stopped at now.
func NewFakeClock(now time.Time) *FakeClock {
	return &FakeClock{now: now.UTC(), changed: make(chan struct{}, 1)}
}

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives once the clock has been advanced past d.
func (c *FakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits++
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return ch
}

// Set moves the clock to t and wakes every waiter whose time has come, earliest first; it
// returns how many it woke.
func (c *FakeClock) Set(t time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t.UTC()
	sort.SliceStable(c.waiters, func(i, j int) bool { return c.waiters[i].at.Before(c.waiters[j].at) })
	keep := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			keep = append(keep, w)
			continue
		}
		w.ch <- c.now
	}
	woke := len(c.waiters) - len(keep)
	c.waiters = keep
	return woke
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// BlockUntil waits until at least n goroutines wait on the clock (or timeout passes) and
// reports whether they do.
func (c *FakeClock) BlockUntil(n int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		have := len(c.waiters)
		c.mu.Unlock()
		if have >= n {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-c.changed:
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Waits returns how many times After has been called: a scheduler that called it again has
// dealt with the time it was woken for.
func (c *FakeClock) Waits() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waits
}
