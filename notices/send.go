package notices

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/smtp"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"trueup/config"
)

// errPermanent marks a failure that retrying will not fix (a receiver refusing the request,
// a recipient no longer configured).
var errPermanent = errors.New("permanent")

// Headers of a webhook request.
const (
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

func (o *Outbox) sendWebhook(ctx context.Context, w config.Webhook, d Delivery) error {
	body := []byte(d.payload)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: webhook: %v", errPermanent, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "trueup")
	req.Header.Set(HeaderSignature, Sign(w.Secret, body))
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

func (o *Outbox) sendEmail(ctx context.Context, to string, d Delivery) error {
	e := o.cfg.Email
	if e.SMTP == "" {
		return fmt.Errorf("%w: email: no notify.email.smtp in the config", errPermanent)
	}
	host, _, _ := net.SplitHostPort(e.SMTP)
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", e.SMTP)
	if err != nil {
		return fmt.Errorf("email: %w", err)
	}
	// A relay that accepts and then stalls must not hold the outbox forever: every message has
	// a deadline of its own, and the connection closes when ctx ends.
	dl := time.Now().Add(smtpTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	conn.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("email: %w", err)
	}
	defer c.Close()
	if err := c.Hello(o.opt.Hello); err != nil {
		return fmt.Errorf("email: hello: %w", err)
	}
	if e.StartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return fmt.Errorf("email: %s does not offer STARTTLS, which the config asks for", e.SMTP)
		}
		if err := c.StartTLS(&tls.Config{ServerName: host}); err != nil {
			return fmt.Errorf("email: starttls: %w", err)
		}
	}
	if e.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", e.Username, e.Password, host)); err != nil {
			return fmt.Errorf("email: auth: %w", smtpError(err))
		}
	}
	from := config.EmailAddress(e.From)
	if err := c.Mail(from); err != nil {
		return fmt.Errorf("email: from %s: %w", from, smtpError(err))
	}
	if err := c.Rcpt(to); err != nil {
		return fmt.Errorf("email: to %s: %w", to, smtpError(err))
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("email: %w", smtpError(err))
	}
	if _, err := w.Write(o.mimeMessage(e.From, to, d)); err != nil {
		return fmt.Errorf("email: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("email: %w", smtpError(err))
	}
	return c.Quit()
}

// smtpError marks 5xx replies as permanent: the server will refuse the same message again.
func smtpError(err error) error {
	var te *textproto.Error
	if errors.As(err, &te) && te.Code >= 500 {
		return fmt.Errorf("%w: %v", errPermanent, err)
	}
	return err
}

// mimeMessage is a multipart/alternative email: the text part first, then the HTML part.
func (o *Outbox) mimeMessage(from, to string, d Delivery) []byte {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, part := range []struct{ typ, content string }{
		{"text/plain; charset=utf-8", d.text},
		{"text/html; charset=utf-8", d.html},
	} {
		h := textproto.MIMEHeader{}
		h.Set("Content-Type", part.typ)
		h.Set("Content-Transfer-Encoding", "quoted-printable")
		pw, _ := mw.CreatePart(h)
		qp := quotedprintable.NewWriter(pw)
		qp.Write([]byte(strings.ReplaceAll(part.content, "\n", "\r\n")))
		qp.Close()
	}
	mw.Close()
	var b bytes.Buffer
	header := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	header("From", from)
	header("To", to)
	header("Subject", mime.QEncoding.Encode("utf-8", d.Subject))
	header("Date", o.opt.Now().UTC().Format("Mon, 02 Jan 2006 15:04:05 -0000"))
	sum := sha256.Sum256([]byte(d.Key))
	header("Message-ID", "<"+hex.EncodeToString(sum[:12])+"@trueup>")
	header(HeaderIdempotency, d.Key)
	header("MIME-Version", "1.0")
	header("Content-Type", "multipart/alternative; boundary="+mw.Boundary())
	b.WriteString("\r\n")
	b.Write(body.Bytes())
	return b.Bytes()
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
			b.WriteString("<p>" + html.EscapeString(strings.Join(para, " ")) + "</p>\n")
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
			b.WriteString("<h2>" + html.EscapeString(strings.TrimPrefix(l, "# ")) + "</h2>\n")
		case strings.HasPrefix(l, "- "):
			flush()
			if !inList {
				b.WriteString("<ul>\n")
				inList = true
			}
			b.WriteString("<li>" + html.EscapeString(strings.TrimPrefix(l, "- ")) + "</li>\n")
		default:
			closeList()
			para = append(para, l)
		}
	}
	flush()
	closeList()
	return b.String()
}
