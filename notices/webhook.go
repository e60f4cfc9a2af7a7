package notices

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers of a webhook request as Standard Webhooks (standardwebhooks.com) names them: the
// scheme Svix and others verify with ready libraries. The signature covers the id and the
// timestamp as well as the body, so a captured delivery cannot be replayed once the receiver's
// tolerance has passed.
const (
	HeaderWebhookID        = "webhook-id"        // msg_…, the same for every attempt at one delivery
	HeaderWebhookTimestamp = "webhook-timestamp" // Unix seconds of this attempt
	HeaderWebhookSignature = "webhook-signature" // v1,<base64 HMAC-SHA256 of "id.timestamp.body">
)

// Webhook kinds: what the receiver expects in the body.
const (
	KindStandard = ""      // trueup's JSON payload, signed per Standard Webhooks
	KindSlack    = "slack" // a Slack incoming-webhook message with blocks
	KindTeams    = "teams" // a Microsoft Teams message carrying an Adaptive Card
)

// WebhookTolerance is how far a delivery's timestamp may be from the receiver's clock, as the
// Standard Webhooks libraries check it.
const WebhookTolerance = 5 * time.Minute

// webhookKey is the HMAC key of a secret: whsec_<base64> is the Standard Webhooks form (the key
// is the decoded bytes); any other secret is used as it is written, as the libraries'
// raw-secret constructors take it, so configs written before whsec_ keep their receivers.
func webhookKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return []byte(secret), nil
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("secret whsec_…: the part after whsec_ is not base64: %v", err)
	}
	return key, nil
}

// CheckWebhookSecret reports whether secret can sign (a whsec_ secret must decode).
func CheckWebhookSecret(secret string) error {
	_, err := webhookKey(secret)
	return err
}

// SignWebhook returns the webhook-signature value of a delivery: v1,<base64 HMAC-SHA256 of
// "id.timestamp.body"> under secret.
func SignWebhook(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := webhookKey(secret)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// Errors of VerifyWebhook.
var (
	ErrWebhookSignature = errors.New("webhook: no signature matches")
	ErrWebhookTimestamp = errors.New("webhook: timestamp outside the tolerance (a replay, or a clock far off)")
)

// VerifyWebhook is what a receiver does with a delivery, by the Standard Webhooks scheme: the
// timestamp within WebhookTolerance of now, and one of the space-separated v1 signatures
// matching, compared in constant time.
func VerifyWebhook(secret string, h http.Header, body []byte, now time.Time) error {
	id, tsText, sigs := h.Get(HeaderWebhookID), h.Get(HeaderWebhookTimestamp), h.Get(HeaderWebhookSignature)
	if id == "" || tsText == "" || sigs == "" {
		return fmt.Errorf("%w: missing webhook-id, webhook-timestamp or webhook-signature", ErrWebhookSignature)
	}
	sec, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: webhook-timestamp %q", ErrWebhookTimestamp, tsText)
	}
	ts := time.Unix(sec, 0)
	if now.Sub(ts) > WebhookTolerance || ts.Sub(now) > WebhookTolerance {
		return ErrWebhookTimestamp
	}
	want, err := SignWebhook(secret, id, ts, body)
	if err != nil {
		return err
	}
	for _, s := range strings.Fields(sigs) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return ErrWebhookSignature
}

// webhookID is a delivery's webhook-id: derived from its idempotency key, so every attempt at
// one delivery carries the same one.
func webhookID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "msg_" + hex.EncodeToString(sum[:12])
}

// Card is a message as chat tools show it: a title, the state, one line per changed table, the
// reports' numbers before and after, and a link. Slack and Teams webhooks are sent this.
type Card struct {
	Title   string      `json:"title"`
	Status  string      `json:"status"`
	Lines   []string    `json:"lines,omitempty"`
	Numbers []NumberRow `json:"numbers,omitempty"`
	URL     string      `json:"url,omitempty"`
	Link    string      `json:"link,omitempty"` // the link's words (default "Open in trueup")
}

// cardOf is m's card, or one made of its subject and text.
func cardOf(m Message) Card {
	if m.Card != nil {
		return *m.Card
	}
	return Card{Title: m.Subject, Status: strings.TrimSpace(m.Text)}
}

func (c Card) linkText() string {
	if c.Link == "" {
		return "Open in trueup"
	}
	return c.Link
}

// numberLine is one report number as a line: "Board revenue · July 2026 · revenue: 1.92M → 2.01M (+4.7%)".
func numberLine(r NumberRow) string {
	s := r.Report
	if r.Row != "" {
		s += " · " + r.Row
	}
	return s + " · " + numberMove(r)
}

// numberMove is "revenue: 1.92M → 2.01M (+4.7%)".
func numberMove(r NumberRow) string {
	s := r.Number + ": " + r.Before + " → " + r.After
	if r.Change != "" {
		s += " (" + r.Change + ")"
	}
	return s
}

// clip cuts s to n runes: Slack refuses a header over 150 characters and a text over 3000.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// slackPayload is an incoming-webhook message: text for notifications, blocks for the channel.
func slackPayload(c Card) map[string]any {
	mrkdwn := func(s string) map[string]any {
		return map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": clip(s, 3000)}}
	}
	blocks := []any{
		map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": clip(c.Title, 150)}},
		mrkdwn("*Status:* " + c.Status),
	}
	if len(c.Lines) > 0 {
		blocks = append(blocks, mrkdwn("*What changes*\n• "+strings.Join(c.Lines, "\n• ")))
	}
	if len(c.Numbers) > 0 {
		lines := make([]string, len(c.Numbers))
		for i, r := range c.Numbers {
			lines[i] = numberLine(r)
		}
		blocks = append(blocks, mrkdwn("*Reports, before → after*\n• "+strings.Join(lines, "\n• ")))
	}
	if c.URL != "" {
		blocks = append(blocks, map[string]any{"type": "actions", "elements": []any{map[string]any{
			"type": "button", "text": map[string]any{"type": "plain_text", "text": c.linkText()}, "url": c.URL}}})
	}
	return map[string]any{"text": c.Title + " — " + c.Status, "blocks": blocks}
}

// teamsPayload is a Teams incoming-webhook (Workflows) message with one Adaptive Card.
func teamsPayload(c Card) map[string]any {
	text := func(s string, extra ...any) map[string]any {
		b := map[string]any{"type": "TextBlock", "text": s, "wrap": true}
		for i := 0; i+1 < len(extra); i += 2 {
			b[extra[i].(string)] = extra[i+1]
		}
		return b
	}
	body := []any{
		text(c.Title, "weight", "Bolder", "size", "Medium"),
		map[string]any{"type": "FactSet", "facts": []any{map[string]any{"title": "Status", "value": c.Status}}},
	}
	for _, l := range c.Lines {
		body = append(body, text("- "+l))
	}
	if len(c.Numbers) > 0 {
		facts := make([]any, len(c.Numbers))
		for i, r := range c.Numbers {
			facts[i] = map[string]any{"title": strings.TrimSuffix(r.Report+" · "+r.Row, " · "), "value": numberMove(r)}
		}
		body = append(body, text("Reports, before → after", "weight", "Bolder"), map[string]any{"type": "FactSet", "facts": facts})
	}
	card := map[string]any{
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
		"type":    "AdaptiveCard",
		"version": "1.4",
		"body":    body,
	}
	if c.URL != "" {
		card["actions"] = []any{map[string]any{"type": "Action.OpenUrl", "title": c.linkText(), "url": c.URL}}
	}
	return map[string]any{"type": "message", "attachments": []any{map[string]any{
		"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": nil, "content": card}}}
}
