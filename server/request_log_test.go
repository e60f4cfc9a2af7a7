package server_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"trueup/ledger"
	"trueup/notices"
	"trueup/ops"
	"trueup/server"
)

// TestRequestLogLeavesOutAckTokens: the request log names an acknowledgement link by its route
// and notice id, never by its token (the path was logged, and the path is the token), also when
// the link does not match a route.
func TestRequestLogLeavesOutAckTokens(t *testing.T) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "state.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	svc := notices.New(l, notices.Options{Channels: notices.Channels{
		Webhooks:      map[string]notices.Webhook{"finance": {URL: "http://127.0.0.1:1/hook", Secret: "s"}},
		Subscriptions: []notices.Subscription{{Table: "orders", Webhook: "finance"}},
	}})
	n, err := svc.Draft(ctx, notices.Evidence{Backfill: "fix", RunID: 1, Reason: "bug", Tables: []string{"orders"}})
	if err != nil {
		t.Fatal(err)
	}
	if n, err = svc.Announce(ctx, n.ID, "ann"); err != nil || len(n.Recipients) != 1 {
		t.Fatalf("announce: %v, %d recipients", err, len(n.Recipients))
	}
	token := n.Recipients[0].Token
	var logs bytes.Buffer
	ts := serve(t, server.Options{Notices: svc, NoticeOps: ops.NewNotices(svc), Logger: slog.New(slog.NewTextHandler(io.MultiWriter(&logs, t.Output()), nil))})
	link := ts.URL + "/notices/1/ack/" + token

	getPage(t, link, http.StatusOK)
	if resp, _ := post(t, link); resp.StatusCode != http.StatusOK {
		t.Fatalf("ack: %d", resp.StatusCode)
	}
	getPage(t, link+"/more", http.StatusNotFound)
	getPage(t, ts.URL+"/old/notices/1/ack/"+token, http.StatusNotFound) // no route
	getPage(t, ts.URL+"/notices/1/ack/not-the-token", http.StatusNotFound)

	got := logs.String()
	if strings.Contains(got, token) {
		t.Errorf("the log carries the token %s:\n%s", token, got)
	}
	for _, line := range []string{
		"msg=request method=GET path=/notices/:id/ack/:token param.id=1 status=200 ",
		"msg=request method=POST path=/notices/:id/ack/:token param.id=1 status=200 ",
		"msg=request method=GET path=/old/notices/1 status=404 ",
		"msg=request method=GET path=/notices/:id/ack/:token param.id=1 status=404 ",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("no log line %q in:\n%s", line, got)
		}
	}
}
