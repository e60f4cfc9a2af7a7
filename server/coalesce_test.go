package server_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"trueup/monitor"
	"trueup/rules"
	"trueup/server"
)

// slowRules is a rule service whose status list takes until release is closed, counting how
// often it is asked.
type slowRules struct {
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (r *slowRules) Statuses() []monitor.Status {
	if r.calls.Add(1) == 1 {
		close(r.entered)
	}
	<-r.release
	return nil
}
func (r *slowRules) Rule(name string) (*rules.Rule, error) { return nil, rules.NotFound(name) }
func (r *slowRules) RunNow(_ context.Context, name, _ string) (*rules.Run, error) {
	return nil, rules.NotFound(name)
}
func (r *slowRules) RunSelected(context.Context, []string, []string, string) (*rules.Run, error) {
	return nil, rules.NotFound("any")
}
func (r *slowRules) PlanSelected([]string, []string) (*rules.Plan, error) {
	return nil, rules.NotFound("any")
}
func (r *slowRules) History(context.Context, string, int) ([]rules.Result, error) { return nil, nil }
func (r *slowRules) Alerts(context.Context, string, int) ([]rules.Alert, error)   { return nil, nil }
func (r *slowRules) Latest(context.Context) ([]rules.Result, error)               { return nil, nil }
func (r *slowRules) Plan(name string) (*rules.Plan, error)                        { return nil, rules.NotFound(name) }

func TestIdenticalReadsShareOneAnswer(t *testing.T) {
	r := &slowRules{entered: make(chan struct{}), release: make(chan struct{})}
	ts := serve(t, server.Options{Rules: r})
	const n = 20
	var wg sync.WaitGroup
	bodies := make([]string, n)
	statuses := make([]int, n)
	for i := range n {
		wg.Go(func() {
			resp, body := get(t, ts.URL+"/api/v1/rules")
			statuses[i], bodies[i] = resp.StatusCode, body
		})
	}
	<-r.entered
	time.Sleep(200 * time.Millisecond) // let the others arrive and join
	close(r.release)
	wg.Wait()
	for i := range n {
		if statuses[i] != http.StatusOK || bodies[i] != "[]\n" {
			t.Errorf("request %d: %d %q", i, statuses[i], bodies[i])
		}
	}
	if c := r.calls.Load(); c >= n {
		t.Errorf("%d requests asked the service %d times: nothing shared", n, c)
	}
}

// TestSharedPagesCarryTheirOwnToken: two browsers reading the same page at once each get their
// own CSRF token, and it works.
func TestSharedPagesCarryTheirOwnToken(t *testing.T) {
	r := &slowRules{entered: make(chan struct{}), release: make(chan struct{})}
	ts := serve(t, server.Options{Rules: r})
	a, b := newBrowser(t, ts.URL), newBrowser(t, ts.URL)
	a.get("/login") // visitor cookies first
	b.get("/login")
	tokA, tokB := a.csrf, b.csrf
	var wg sync.WaitGroup
	wg.Go(func() { a.get("/rules") })
	<-r.entered
	wg.Go(func() { b.get("/rules") })
	time.Sleep(200 * time.Millisecond)
	close(r.release)
	wg.Wait()
	if c := r.calls.Load(); c != 1 {
		t.Errorf("the page was built %d times, want once for both", c)
	}
	if a.csrf != tokA || b.csrf != tokB || tokA == tokB {
		t.Fatalf("tokens after the shared read: a %q (was %q), b %q (was %q)", a.csrf, tokA, b.csrf, tokB)
	}
	if resp, _ := b.post("/logout", nil, true); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("b's token from the shared page: %d", resp.StatusCode)
	}
}

// TestReadsAfterAWriteDoNotJoinOlderOnes: a read that starts after a write finished is answered
// afresh, even while a read from before the write is still in flight.
func TestReadsAfterAWriteDoNotJoinOlderOnes(t *testing.T) {
	r := &slowRules{entered: make(chan struct{}), release: make(chan struct{})}
	ts := serve(t, server.Options{Rules: r})
	var wg sync.WaitGroup
	wg.Go(func() { get(t, ts.URL+"/api/v1/rules") })
	<-r.entered
	if resp, _ := call(t, "POST", ts.URL+"/logout", "", ""); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("write: %d", resp.StatusCode)
	}
	wg.Go(func() { get(t, ts.URL+"/api/v1/rules") })
	deadline := time.Now().Add(5 * time.Second)
	for r.calls.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(r.release)
	wg.Wait()
	if c := r.calls.Load(); c != 2 {
		t.Errorf("service asked %d times, want 2 (the read after the write joined the older one)", c)
	}
}

// TestReadCache: with ReadCache an answer is shared for that long after it was built, then
// built again; a write through the server makes the next read build it afresh at once.
func TestReadCache(t *testing.T) {
	r := &slowRules{entered: make(chan struct{}), release: make(chan struct{})}
	close(r.release)
	clock := &testClock{now: time.Date(2026, 8, 3, 9, 0, 0, 0, time.UTC)}
	ts := serve(t, server.Options{Rules: r, ReadCache: time.Second, Now: clock.Now})
	read := func() {
		if resp, _ := get(t, ts.URL+"/api/v1/rules"); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: %d", resp.StatusCode)
		}
	}
	read()
	read()
	if c := r.calls.Load(); c != 1 {
		t.Errorf("second read within a second: %d builds, want 1", c)
	}
	clock.add(1001 * time.Millisecond)
	read()
	if c := r.calls.Load(); c != 2 {
		t.Errorf("read after a second: %d builds, want 2", c)
	}
	call(t, "POST", ts.URL+"/logout", "", "")
	read()
	if c := r.calls.Load(); c != 3 {
		t.Errorf("read after a write: %d builds, want 3", c)
	}
	if resp, _ := get(t, ts.URL+"/api/v1/rules/nope"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("missing rule: %d", resp.StatusCode)
	}
}
