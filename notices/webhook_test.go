package notices_test

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"trueup/notices"
	"trueup/rules"
)

// The Standard Webhooks specification's test vector: trueup signs it as the spec and its
// libraries do, and verifies it.
func TestStandardWebhooksTestVector(t *testing.T) {
	const secret, id = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek"
	ts := time.Unix(1614265330, 0)
	body := []byte(`{"test": 2432232314}`)
	got, err := notices.SignWebhook(secret, id, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("signature %s, want %s", got, want)
	}
	h := http.Header{}
	h.Set(notices.HeaderWebhookID, id)
	h.Set(notices.HeaderWebhookTimestamp, "1614265330")
	h.Set(notices.HeaderWebhookSignature, "v1,bm9wZQ== "+got) // a rotated-out key's signature first
	if err := notices.VerifyWebhook(secret, h, body, ts.Add(time.Minute)); err != nil {
		t.Errorf("verify: %v", err)
	}
	tests := []struct {
		name string
		now  time.Time
		body string
		want error
	}{
		{"replayed_after_the_tolerance", ts.Add(notices.WebhookTolerance + time.Second), string(body), notices.ErrWebhookTimestamp},
		{"from_the_future", ts.Add(-notices.WebhookTolerance - time.Second), string(body), notices.ErrWebhookTimestamp},
		{"body_changed", ts, `{"test": 2432232315}`, notices.ErrWebhookSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := notices.VerifyWebhook(secret, h, []byte(tt.body), tt.now); !errors.Is(err, tt.want) {
				t.Errorf("verify: %v, want %v", err, tt.want)
			}
		})
	}
}

// standardReceiver is a receiver written with the Standard Webhooks Go library, as a
// subscriber's would be: it checks every request (the library's own clock and tolerance) and
// keeps the bodies it accepted.
type standardReceiver struct {
	srv    *http.Server
	addr   string
	wh     *standardwebhooks.Webhook
	mu     sync.Mutex
	bodies [][]byte
	heads  []http.Header
	bad    []error
}

func newStandardReceiver(t *testing.T, secret string) *standardReceiver {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &standardReceiver{wh: wh}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if err := r.wh.Verify(body, req.Header); err != nil {
			r.bad = append(r.bad, err)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		r.bodies = append(r.bodies, body)
		r.heads = append(r.heads, req.Header.Clone())
	})}
	go r.srv.Serve(ln)
	t.Cleanup(func() { r.srv.Close() })
	return r
}

// A delivery verifies with the Standard Webhooks library; the same request replayed with a
// timestamp older than the tolerance does not; the old header comes only when asked for.
func TestWebhookDeliveryVerifiesWithTheLibrary(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	for _, legacy := range []bool{false, true} {
		name := "standard_only"
		if legacy {
			name = "with_legacy_header"
		}
		t.Run(name, func(t *testing.T) {
			recv := newStandardReceiver(t, secret)
			r := newRig(t)
			r.clock.t = time.Now().UTC() // the library checks the timestamp against the real clock
			r.cfg.Webhooks = map[string]notices.Webhook{"finance": {URL: "http://" + recv.addr + "/hook", Secret: secret, LegacySignature: legacy}}
			r.open()
			if _, err := r.svc.Outbox().Enqueue(r.ctx, notices.Message{Event: "alert:7", To: []string{"webhook:finance"}, Subject: "s", Text: "t"}); err != nil {
				t.Fatal(err)
			}
			if rep := r.deliver(); rep.Delivered != 1 {
				t.Fatalf("deliver: %+v (receiver refused: %v)", rep, recv.bad)
			}
			h, body := recv.heads[0], recv.bodies[0]
			if id := h.Get(notices.HeaderWebhookID); !strings.HasPrefix(id, "msg_") {
				t.Errorf("webhook-id %q", id)
			}
			if got := h.Get(notices.HeaderSignature) != ""; got != legacy {
				t.Errorf("X-Trueup-Signature sent: %v, want %v", got, legacy)
			}
			if legacy && !notices.VerifySignature(secret, body, h.Get(notices.HeaderSignature)) {
				t.Errorf("legacy signature does not verify")
			}
			// A captured delivery replayed later: its timestamp is now older than the tolerance.
			old := h.Clone()
			past := time.Now().Add(-notices.WebhookTolerance - time.Minute)
			sig, _ := notices.SignWebhook(secret, old.Get(notices.HeaderWebhookID), past, body)
			old.Set(notices.HeaderWebhookTimestamp, strconv.FormatInt(past.Unix(), 10))
			old.Set(notices.HeaderWebhookSignature, sig)
			if err := recv.wh.Verify(body, old); err == nil {
				t.Errorf("a delivery signed %v ago verified", notices.WebhookTolerance+time.Minute)
			}
		})
	}
}

// chatReceiver is a real HTTP server standing for Slack's or Teams' incoming webhook: it keeps
// each JSON body.
type chatReceiver struct {
	srv    *http.Server
	addr   string
	mu     sync.Mutex
	bodies []map[string]any
}

func newChatReceiver(t *testing.T) *chatReceiver {
	r := &chatReceiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var m map[string]any
		if req.Header.Get("Content-Type") != "application/json" || json.NewDecoder(req.Body).Decode(&m) != nil {
			http.Error(w, "invalid_payload", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, m)
		r.mu.Unlock()
		io.WriteString(w, "ok")
	})}
	go r.srv.Serve(ln)
	t.Cleanup(func() { r.srv.Close() })
	return r
}

// path walks a decoded JSON body: keys for objects, indexes ("0") for arrays.
func path(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for _, k := range keys {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i := int(k[0] - '0')
			if i >= len(x) {
				t.Fatalf("no element %s in %v", k, x)
			}
			v = x[i]
		default:
			t.Fatalf("cannot take %s of %v", k, v)
		}
	}
	return v
}

// An announced notice reaches a Slack webhook as blocks (header, status, the per-table change
// line, the reports' before/after, a button to the notice) and a Teams webhook as an Adaptive
// Card with the same content; a rule alert reaches both readable too.
func TestSlackAndTeamsPayloads(t *testing.T) {
	slack, teams := newChatReceiver(t), newChatReceiver(t)
	r := newRig(t)
	r.cfg.Webhooks = map[string]notices.Webhook{
		"slack": {URL: "http://" + slack.addr + "/services/T/B/X", Kind: notices.KindSlack},
		"teams": {URL: "http://" + teams.addr + "/workflows/x", Kind: notices.KindTeams},
	}
	r.cfg.Subscriptions = []notices.Subscription{{Table: "orders", Webhook: "slack"}, {Table: "orders", Webhook: "teams"}}
	r.open()
	n := r.draft()
	r.announce(n.ID)
	if rep := r.deliver(); rep.Delivered != 2 {
		t.Fatalf("deliver: %+v, want 2", rep)
	}
	page := "https://trueup.example.com/notices/1"

	s := slack.bodies[0]
	if txt, _ := s["text"].(string); !strings.Contains(txt, n.Title) {
		t.Errorf("slack text %q, want the title", txt)
	}
	blocks := path(t, s, "blocks").([]any)
	if path(t, blocks, "0", "type") != "header" || path(t, blocks, "0", "text", "text") != n.Title {
		t.Errorf("slack header block %v", blocks[0])
	}
	var all strings.Builder
	for _, b := range blocks {
		j, _ := json.Marshal(b)
		all.Write(j)
	}
	for _, want := range []string{"*Status:* announced", "orders: rows", "over 9 days", "Board revenue by month · July 2026 · revenue: ", "→"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("slack blocks lack %q: %s", want, all.String())
		}
	}
	last := blocks[len(blocks)-1]
	if path(t, last, "type") != "actions" || path(t, last, "elements", "0", "url") != page {
		t.Errorf("slack last block %v, want a button to %s", last, page)
	}

	tm := teams.bodies[0]
	if tm["type"] != "message" || path(t, tm, "attachments", "0", "contentType") != "application/vnd.microsoft.card.adaptive" {
		t.Fatalf("teams body %v", tm)
	}
	card := path(t, tm, "attachments", "0", "content")
	if path(t, card, "type") != "AdaptiveCard" || path(t, card, "body", "0", "text") != n.Title {
		t.Errorf("teams card %v", card)
	}
	if path(t, card, "actions", "0", "type") != "Action.OpenUrl" || path(t, card, "actions", "0", "url") != page {
		t.Errorf("teams actions %v", path(t, card, "actions"))
	}
	j, _ := json.Marshal(card)
	for _, want := range []string{"FactSet", "orders: rows", "Board revenue by month · July 2026", "revenue: "} {
		if !strings.Contains(string(j), want) {
			t.Errorf("teams card lacks %q: %s", want, j)
		}
	}

	// A rule alert on orders: the subject as the title, the move as the status, the rule's page.
	a := rules.Alert{ID: 4, Rule: "order_id_unique", From: rules.StatusPass, To: rules.StatusFail, Severity: "error", At: r.clock.Now(), Message: "3 duplicate order_id"}
	if _, err := r.svc.Outbox().Enqueue(r.ctx, notices.AlertMessage(a, "orders", "https://trueup.example.com/rules/order_id_unique")); err != nil {
		t.Fatal(err)
	}
	if rep := r.deliver(); rep.Delivered != 2 {
		t.Fatalf("deliver the alert: %+v, want 2", rep)
	}
	sa, ta := slack.bodies[1], teams.bodies[1]
	if got := path(t, sa, "blocks", "0", "text", "text"); got != "Rule order_id_unique is now fail on orders" {
		t.Errorf("slack alert header %q", got)
	}
	if got := path(t, sa, "blocks", "1", "text", "text"); got != "*Status:* pass → fail (severity error)" {
		t.Errorf("slack alert status %q", got)
	}
	ja, _ := json.Marshal(ta)
	for _, want := range []string{"Rule order_id_unique is now fail on orders", "3 duplicate order_id", "https://trueup.example.com/rules/order_id_unique"} {
		if !strings.Contains(string(ja), want) {
			t.Errorf("teams alert lacks %q: %s", want, ja)
		}
	}
}
