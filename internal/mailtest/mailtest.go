// Package mailtest is a real SMTP server for tests (go-smtp): it keeps every message it
// accepts, with its headers and its text and HTML parts decoded, as a subscriber's mailbox
// would show them. Tests of notices and of the server's subscription pages send to it.
package mailtest

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one email the receiver accepted, with its parts.
type Message struct {
	From, To string
	User     string // who authenticated ("" when nobody did)
	Header   mail.Header
	Text     string
	HTML     string
}

// Receiver is a real SMTP server (go-smtp) that keeps every message. It offers AUTH PLAIN
// and accepts the users in users (none unless a test sets them); it never offers STARTTLS.
type Receiver struct {
	Addr  string            // host:port it listens on
	Users map[string]string // username → password; set before the first message
	mu    sync.Mutex
	msgs  []Message
}

// New starts a receiver on a free loopback port; it stops when the test ends.
func New(t *testing.T) *Receiver {
	r := &Receiver{}
	s := smtp.NewServer(r)
	s.Domain = "localhost"
	s.AllowInsecureAuth = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Addr = ln.Addr().String()
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return r
}

func (r *Receiver) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{r: r}, nil }

func (r *Receiver) Messages() []Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Message(nil), r.msgs...)
}

type session struct {
	r              *Receiver
	from, to, user string
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if want, ok := s.r.Users[user]; !ok || pass != want {
			return smtp.ErrAuthFailed
		}
		s.user = user
		return nil
	}), nil
}

func (s *session) Reset()        {}
func (s *session) Logout() error { return nil }
func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	s.from = from
	return nil
}
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = to
	return nil
}

func (s *session) Data(r io.Reader) error {
	m, err := mail.ReadMessage(r)
	if err != nil {
		return err
	}
	msg := Message{From: s.from, To: s.to, User: s.user, Header: m.Header}
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
