package notices_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

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

// mailMessage is one email the SMTP receiver accepted, with its parts.
type mailMessage struct {
	From, To string
	User     string // who authenticated ("" when nobody did)
	Header   mail.Header
	Text     string
	HTML     string
}

// smtpReceiver is a real SMTP server (go-smtp) that keeps every message. It offers AUTH PLAIN
// and accepts the users in users (none unless a test sets them); it never offers STARTTLS.
type smtpReceiver struct {
	addr  string
	users map[string]string // username → password
	mu    sync.Mutex
	msgs  []mailMessage
}

func newSMTPReceiver(t *testing.T) *smtpReceiver {
	r := &smtpReceiver{}
	s := smtp.NewServer(r)
	s.Domain = "localhost"
	s.AllowInsecureAuth = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return r
}

func (r *smtpReceiver) NewSession(*smtp.Conn) (smtp.Session, error) { return &smtpSession{r: r}, nil }

func (r *smtpReceiver) Messages() []mailMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]mailMessage(nil), r.msgs...)
}

type smtpSession struct {
	r              *smtpReceiver
	from, to, user string
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if want, ok := s.r.users[user]; !ok || pass != want {
			return smtp.ErrAuthFailed
		}
		s.user = user
		return nil
	}), nil
}

func (s *smtpSession) Reset()        {}
func (s *smtpSession) Logout() error { return nil }
func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	s.from = from
	return nil
}
func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = to
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	m, err := mail.ReadMessage(r)
	if err != nil {
		return err
	}
	msg := mailMessage{From: s.from, To: s.to, User: s.user, Header: m.Header}
	_, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := mr.NextPart() // decodes quoted-printable
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		var b bytes.Buffer
		io.Copy(&b, p)
		text := strings.ReplaceAll(b.String(), "\r\n", "\n")
		switch {
		case strings.HasPrefix(p.Header.Get("Content-Type"), "text/plain"):
			msg.Text = text
		case strings.HasPrefix(p.Header.Get("Content-Type"), "text/html"):
			msg.HTML = text
		}
	}
	s.r.mu.Lock()
	s.r.msgs = append(s.r.msgs, msg)
	s.r.mu.Unlock()
	return nil
}
