package notices_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"trueup/notices"
)

// TestWorker runs the delivery worker as serve does: it wakes when a notice is announced, and
// when its wait for a retry is over (the test decides when waits end).
func TestWorker(t *testing.T) {
	r := newRig(t)
	waits := make(chan time.Time)
	asked := make(chan time.Duration, 16)
	ob := notices.NewOutbox(r.l, r.cfg, notices.OutboxOptions{Backoff: time.Minute, Poll: time.Hour, HTTP: &http.Client{Timeout: 5 * time.Second},
		After: func(d time.Duration) <-chan time.Time { asked <- d; return waits }})
	svc := notices.New(r.l, notices.Options{Channels: r.cfg, Outbox: ob})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- ob.Run(ctx) }()
	<-asked // the first, empty pass is done

	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if ok() {
				return
			}
		}
		t.Fatalf("timed out waiting for %s", what)
	}

	r.hook.down()
	n, err := svc.Draft(r.ctx, demoEvidence())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Announce(r.ctx, n.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	eventually("the emails", func() bool { return len(r.mail.Messages()) == 2 })
	if d := <-asked; d != time.Minute {
		t.Errorf("after a failed attempt the worker waits %v, want the 1m backoff", d)
	}
	r.hook.up()
	r.clock.Advance(time.Minute)
	waits <- r.clock.Now()
	eventually("the webhook", func() bool { return len(r.hook.Calls()) == 1 })
	cancel()
	if err := <-stopped; err != nil {
		t.Errorf("worker stopped with %v", err)
	}
	if len(r.hook.Calls()) != 1 || len(r.mail.Messages()) != 2 {
		t.Errorf("%d webhook calls and %d emails, want 1 and 2", len(r.hook.Calls()), len(r.mail.Messages()))
	}
}
