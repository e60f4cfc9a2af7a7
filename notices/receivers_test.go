package notices_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"trueup/internal/mailtest"
	"trueup/notices"
)

// hookCall is one request a webhook receiver accepted.
type hookCall struct {
	Key     string
	Event   string
	Payload notices.Payload
	Raw     map[string]any
}

// webhookReceiver is a real HTTP server that checks the signature of every request, as a
// subscriber's receiver would, and can be taken down and brought up again on the same address.
type webhookReceiver struct {
	t      *testing.T
	secret string
	addr   string
	now    func() time.Time // the receiver's clock, which the timestamp tolerance is checked by

	mu       sync.Mutex
	calls    []hookCall
	badSigs  int
	status   int // answer; 0 is 200
	srv      *http.Server
	listener net.Listener
}

func newWebhookReceiver(t *testing.T, secret string) *webhookReceiver {
	r := &webhookReceiver{t: t, secret: secret, now: time.Now}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.serve(ln)
	t.Cleanup(r.down)
	return r
}

func (r *webhookReceiver) URL() string { return "http://" + r.addr + "/hook" }

func (r *webhookReceiver) serve(ln net.Listener) {
	r.listener = ln
	r.srv = &http.Server{Handler: http.HandlerFunc(r.handle)}
	go r.srv.Serve(ln)
}

// down stops listening: connections are refused until up.
func (r *webhookReceiver) down() {
	if r.srv != nil {
		r.srv.Close()
		r.srv = nil
	}
}

func (r *webhookReceiver) up() {
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatalf("webhook receiver up again on %s: %v", r.addr, err)
	}
	r.serve(ln)
}

func (r *webhookReceiver) handle(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if notices.VerifyWebhook(r.secret, req.Header, body, r.now()) != nil {
		r.badSigs++
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if r.status != 0 {
		http.Error(w, "not now", r.status)
		return
	}
	c := hookCall{Key: req.Header.Get(notices.HeaderIdempotency), Event: req.Header.Get(notices.HeaderEvent)}
	json.Unmarshal(body, &c.Payload)
	json.Unmarshal(body, &c.Raw)
	r.calls = append(r.calls, c)
}

func (r *webhookReceiver) Calls() []hookCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookCall(nil), r.calls...)
}

// The SMTP receiver is mailtest's, shared with the server's tests.
type (
	mailMessage  = mailtest.Message
	smtpReceiver = mailtest.Receiver
)

func newSMTPReceiver(t *testing.T) *smtpReceiver { return mailtest.New(t) }
