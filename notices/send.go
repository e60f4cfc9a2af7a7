package notices

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
	"github.com/wneessen/go-mail/smtp"
)

// errPermanent marks a failure that retrying will not fix (a receiver refusing the request,
// a recipient no longer configured).
var errPermanent = errors.New("permanent")

// Headers of a webhook request.
const (
	// HeaderSignature signs the body alone, so a captured delivery verifies forever: it is sent
	// only to webhooks with legacy_signature, beside the Standard Webhooks headers.
	HeaderSignature   = "X-Trueup-Signature"       // sha256=<hex HMAC-SHA256 of the body with the webhook's secret>
	HeaderIdempotency = "X-Trueup-Idempotency-Key" // the same for every attempt at one delivery
	HeaderEvent       = "X-Trueup-Event"
)

// Sign returns the signature header value of body under secret: sha256=<hex HMAC>.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// VerifySignature checks a signature header value in constant time: what receivers do.
func VerifySignature(secret string, body []byte, header string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(header))
}

func (o *Outbox) send(ctx context.Context, d Delivery) error {
	kind, name, _ := strings.Cut(d.Recipient, ":")
	switch kind {
	case "webhook":
		w, ok := o.cfg.Webhooks[name]
		if !ok {
			return fmt.Errorf("%w: webhook %s is no longer in the config", errPermanent, name)
		}
		return o.sendWebhook(ctx, w, d)
	case "email":
		return o.sendEmail(ctx, name, d)
	}
	return fmt.Errorf("%w: unknown recipient kind %q", errPermanent, d.Recipient)
}

func (o *Outbox) sendWebhook(ctx context.Context, w Webhook, d Delivery) error {
	body := []byte(d.payload)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: webhook: %v", errPermanent, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "trueup")
	if w.Secret != "" {
		ts := o.opt.Now()
		sig, err := SignWebhook(w.Secret, webhookID(d.Key), ts, body)
		if err != nil {
			return fmt.Errorf("%w: webhook: %v", errPermanent, err)
		}
		req.Header.Set(HeaderWebhookID, webhookID(d.Key))
		req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
		req.Header.Set(HeaderWebhookSignature, sig)
		if w.LegacySignature {
			req.Header.Set(HeaderSignature, Sign(w.Secret, body))
		}
	}
	req.Header.Set(HeaderIdempotency, d.Key)
	req.Header.Set(HeaderEvent, d.Event)
	resp, err := o.opt.HTTP.Do(req)
	if err != nil {
		// The error names the URL, and a hook's URL is often its credential: the recorded
		// error, shown on the notice's page, names the webhook instead.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("webhook %s: %w", strings.TrimPrefix(d.Recipient, "webhook:"), err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusConflict:
		// Receivers that keep idempotency keys answer 409 to a key they have already seen: an
		// earlier attempt got through (its answer was lost, or the pass stopped before recording
		// it). Sending again would only be refused again, so the delivery is done.
		return nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout &&
		resp.StatusCode != http.StatusTooManyRequests:
		return fmt.Errorf("%w: webhook answered %s: %s", errPermanent, resp.Status, strings.TrimSpace(string(msg)))
	}
	return fmt.Errorf("webhook answered %s: %s", resp.Status, strings.TrimSpace(string(msg)))
}

// smtpTimeout bounds the whole SMTP exchange of one message.
const smtpTimeout = time.Minute

// sendEmail sends one message through the configured relay: go-mail builds the message
// (multipart/alternative, text then HTML, quoted-printable, RFC 2047 headers) and speaks SMTP.
// What stays here is what the outbox needs of it: one deadline and ctx for the whole exchange,
// STARTTLS only when the config asks for it, and 5xx replies marked permanent.
func (o *Outbox) sendEmail(ctx context.Context, to string, d Delivery) error {
	e := o.cfg.Email
	if e.SMTP == "" {
		return fmt.Errorf("%w: email: no notify.email.smtp in the config", errPermanent)
	}
	// A self-service subscriber can leave from every message but its confirmation: the
	// List-Unsubscribe headers (RFC 8058 one-click) and the links under the text. The token is
	// made now, so every message carries one that works for ManageTTL.
	var manage string
	if !strings.HasPrefix(d.Event, "subscribe:") {
		var err error
		if manage, err = manageLink(ctx, o.l, to); err != nil {
			return fmt.Errorf("email: unsubscribe link: %w", err)
		}
	}
	msg, err := o.emailMessage(e.From, to, d, manage)
	if err != nil {
		return fmt.Errorf("%w: email: %v", errPermanent, err)
	}
	host, portText, _ := net.SplitHostPort(e.SMTP)
	port, _ := strconv.Atoi(portText) // the config checked host:port

	// A relay that accepts and then stalls must not hold the outbox forever: every message has
	// a deadline of its own, and the connection closes when ctx ends.
	deadline := time.Now().Add(smtpTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	var conn net.Conn
	stop := func() bool { return false }
	defer func() {
		stop()
		if conn != nil {
			conn.Close() // go-mail leaves it open when the greeting, STARTTLS or auth fails
		}
	}()
	// The dialer dials e.SMTP itself: go-mail joins host and port with "%s:%d", which is wrong
	// for an IPv6 address.
	dial := func(dctx context.Context, network, _ string) (net.Conn, error) {
		var dialer net.Dialer
		c, err := dialer.DialContext(dctx, network, e.SMTP)
		if err != nil {
			return nil, err
		}
		conn = c
		stop = context.AfterFunc(ctx, func() { c.Close() })
		return deadlineConn{Conn: c, limit: deadline}, nil
	}
	// starttls: true requires it (a relay that does not offer it is an error); false never
	// asks, as before.
	policy := gomail.NoTLS
	if e.StartTLS {
		policy = gomail.TLSMandatory
	}
	c, err := gomail.NewClient(host, gomail.WithPort(port), gomail.WithHELO(o.opt.Hello),
		gomail.WithTLSPolicy(policy), gomail.WithTimeout(smtpTimeout), gomail.WithDialContextFunc(dial),
		// The exchange net/smtp had: no NOOP before the message, and no RSET after it, whose
		// failure once the relay has taken the message would turn a delivery into a retry
		// (and so a second copy).
		gomail.WithoutNoop(), gomail.WithoutRset())
	if err != nil {
		return fmt.Errorf("email: %w", err)
	}
	sc, err := c.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return fmt.Errorf("email: %w", err)
	}
	// AUTH PLAIN as net/smtp did it: only over TLS or to localhost, and a 5xx reply (bad
	// credentials) is permanent. go-mail's own auth option would retry those instead.
	if e.Username != "" {
		if err := sc.Auth(smtp.PlainAuth("", e.Username, e.Password, host, false)); err != nil {
			return fmt.Errorf("email: auth: %w", smtpError(err))
		}
	}
	if err := c.SendWithSMTPClient(sc, msg); err != nil {
		var se *gomail.SendError
		if errors.As(err, &se) && se.ErrorCode() >= 500 {
			return fmt.Errorf("%w: email: %v", errPermanent, err)
		}
		return fmt.Errorf("email: %w", err)
	}
	return c.CloseWithSMTPClient(sc)
}

// smtpError marks 5xx replies as permanent: the server will refuse the same message again.
func smtpError(err error) error {
	var te *textproto.Error
	if errors.As(err, &te) && te.Code >= 500 {
		return fmt.Errorf("%w: %v", errPermanent, err)
	}
	return err
}

// deadlineConn keeps every deadline set on the connection at or before limit: go-mail sets a
// fresh one (now + its timeout) at each step, which would let a relay that answers each step
// slowly hold the outbox for longer than smtpTimeout.
type deadlineConn struct {
	net.Conn
	limit time.Time
}

func (c deadlineConn) bound(t time.Time) time.Time {
	if t.IsZero() || c.limit.Before(t) {
		return c.limit
	}
	return t
}

func (c deadlineConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.bound(t)) }
func (c deadlineConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.bound(t)) }
func (c deadlineConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.bound(t)) }

// emailMessage is the notice as an email: multipart/alternative, the text part first, then the
// HTML part. The Message-ID comes from the idempotency key, so every attempt at one delivery
// carries the same one, and the key itself rides along for receivers that drop repeats.
func (o *Outbox) emailMessage(from, to string, d Delivery, manage string) (*gomail.Msg, error) {
	m := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	if err := m.From(from); err != nil {
		return nil, err
	}
	if err := m.To(to); err != nil {
		return nil, err
	}
	m.Subject(d.Subject)
	m.SetDateWithValue(o.opt.Now().UTC())
	sum := sha256.Sum256([]byte(d.Key))
	m.SetMessageIDWithValue(hex.EncodeToString(sum[:12]) + "@trueup")
	m.SetGenHeader(gomail.Header(HeaderIdempotency), d.Key)
	text, htmlBody := d.text, d.html
	if manage != "" {
		base := strings.TrimRight(o.cfg.PublicURL, "/")
		leave, change := base+"/subscriptions/unsubscribe/"+manage, base+"/subscriptions/manage/"+manage
		m.SetGenHeader(gomail.Header("List-Unsubscribe"), "<"+leave+">")
		m.SetGenHeader(gomail.Header("List-Unsubscribe-Post"), "List-Unsubscribe=One-Click")
		text += "\n--\nYou get this because you subscribed to trueup notices.\nChange what you follow: " + change + "\nStop these messages: " + leave + "\n"
		htmlBody += `<hr><p style="color:#555;font-size:13px">You get this because you subscribed to trueup notices. <a href="` +
			html.EscapeString(change) + `">Change what you follow</a> · <a href="` + html.EscapeString(leave) + `">Stop these messages</a></p>` + "\n"
	}
	m.SetBodyString(gomail.TypeTextPlain, text)
	m.AddAlternativeString(gomail.TypeTextHTML, htmlBody)
	return m, nil
}

// urlRe finds the web addresses in a text: up to a space or a character an address does not
// end with in prose (a full stop, a closing bracket after it).
var urlRe = regexp.MustCompile(`https?://[^\s<>"]*[^\s<>".,;:!?)\]']`)

// linked is text escaped, with each web address in it a link: an HTML mail client that does
// not find links itself shows a confirmation link that can be clicked.
func linked(text string) string {
	var b strings.Builder
	last := 0
	for _, m := range urlRe.FindAllStringIndex(text, -1) {
		u := html.EscapeString(text[m[0]:m[1]])
		b.WriteString(html.EscapeString(text[last:m[0]]) + `<a href="` + u + `">` + u + `</a>`)
		last = m[1]
	}
	return b.String() + html.EscapeString(text[last:])
}

// textToHTML renders the plain-text markup of a notice body: "# " headings, "- " bullets,
// paragraphs separated by blank lines. Everything is escaped.
func textToHTML(text string) string {
	var b strings.Builder
	inList := false
	closeList := func() {
		if inList {
			b.WriteString("</ul>\n")
			inList = false
		}
	}
	var para []string
	flush := func() {
		if len(para) > 0 {
			b.WriteString("<p>" + linked(strings.Join(para, " ")) + "</p>\n")
			para = nil
		}
	}
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		switch {
		case l == "":
			flush()
			closeList()
		case strings.HasPrefix(l, "# "):
			flush()
			closeList()
			b.WriteString("<h2>" + linked(strings.TrimPrefix(l, "# ")) + "</h2>\n")
		case strings.HasPrefix(l, "- "):
			flush()
			if !inList {
				b.WriteString("<ul>\n")
				inList = true
			}
			b.WriteString("<li>" + linked(strings.TrimPrefix(l, "- ")) + "</li>\n")
		default:
			closeList()
			para = append(para, l)
		}
	}
	flush()
	closeList()
	return b.String()
}
