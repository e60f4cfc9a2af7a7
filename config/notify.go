package config

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Notify configures how notices reach people.
//
// Its parts check themselves while they are decoded, where every value's line is known: a bad
// address or URL is reported as path:line of the value itself, not of the section.
type Notify struct {
	// PublicURL is the base of links in notices (e.g. https://trueup.example.com). It is
	// required once anything is subscribed: messages link to pages on it.
	PublicURL     string             `yaml:"public_url"`
	Webhooks      map[string]Webhook `yaml:"webhooks"`
	Email         Email              `yaml:"email"`
	Subscriptions []Subscription     `yaml:"subscriptions"`
}

// Webhook is a named HTTP receiver.
type Webhook struct {
	URL string `yaml:"url"`
	// Secret signs deliveries per Standard Webhooks: whsec_<base64 key> (a plain secret is used
	// as it is written). Slack and Teams webhooks need none: their URL is the credential.
	Secret string `yaml:"secret"`
	// Kind is what the receiver expects: standard (the default: trueup's JSON, signed), slack
	// (an incoming-webhook message with blocks) or teams (an Adaptive Card).
	Kind string `yaml:"kind"`
	// LegacySignature also sends the X-Trueup-Signature header of earlier releases.
	LegacySignature bool `yaml:"legacy_signature"`
}

// Email is the SMTP relay notices are sent through.
type Email struct {
	SMTP     string `yaml:"smtp"` // host:port
	From     string `yaml:"from"`
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	StartTLS bool   `yaml:"starttls"`
}

// Subscription sends notices about a logical table or an exposure to one channel.
type Subscription struct {
	Table    string `yaml:"table"`
	Exposure string `yaml:"exposure"`
	Webhook  string `yaml:"webhook"` // a name from webhooks
	Email    string `yaml:"email"`   // an address

	line int
}

// Recipient names the subscription's channel as notices records it: webhook:NAME or
// email:ADDRESS (the bare address, lower-cased).
func (s Subscription) Recipient() string {
	if s.Webhook != "" {
		return "webhook:" + s.Webhook
	}
	return "email:" + EmailAddress(s.Email)
}

// EmailAddress returns the bare, lower-cased address of "Name <a@b.c>" or "a@b.c" ("" when it
// does not parse).
func EmailAddress(s string) string {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return ""
	}
	return strings.ToLower(a.Address)
}

// lineError is reported by the yaml decoder as "path:line: msg" (see yamlError).
func lineError(line int, format string, args ...any) error {
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

// strictKeys rejects mapping keys that are not in allowed, as the strict decoder would.
func strictKeys(n *yaml.Node, what string, allowed ...string) error {
	if n.Kind != yaml.MappingNode {
		return lineError(n.Line, "%s: want a mapping of %s", what, strings.Join(allowed, ", "))
	}
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !ok[k.Value] {
			return lineError(k.Line, "field %s not found in %s (allowed: %s)", k.Value, what, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// decodeStrict decodes mapping n into out, refusing any key but the allowed ones (strictKeys).
// out is the value's plain type, without its UnmarshalYAML, so that decoding does not recurse.
func decodeStrict(n *yaml.Node, out any, what string, allowed ...string) error {
	if err := strictKeys(n, what, allowed...); err != nil {
		return err
	}
	return n.Decode(out)
}

// valueLine is the line of key's value in mapping n (the mapping's own line when absent).
func valueLine(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1].Line
		}
	}
	return n.Line
}

// UnmarshalYAML decodes the section strictly and checks it as a whole: channels, addresses
// and the webhook each subscription names.
func (n *Notify) UnmarshalYAML(node *yaml.Node) error {
	if node.Tag == "!!null" {
		return nil
	}
	type plain Notify
	if err := decodeStrict(node, (*plain)(n), "notify", "public_url", "webhooks", "email", "subscriptions"); err != nil {
		return err
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == "email" {
			if err := n.Email.check(node.Content[i+1]); err != nil {
				return err
			}
		}
	}
	if n.PublicURL != "" {
		if err := checkHTTPURL(n.PublicURL); err != nil {
			return lineError(valueLine(node, "public_url"), "notify.public_url %q: %v", n.PublicURL, err)
		}
	}
	for _, s := range n.Subscriptions {
		if s.Webhook != "" {
			if _, ok := n.Webhooks[s.Webhook]; !ok {
				return lineError(s.line, "subscription: webhook %q is not one of notify.webhooks (%s)", s.Webhook, strings.Join(n.WebhookNames(), ", "))
			}
		}
		if s.Email != "" && (n.Email.SMTP == "" || n.Email.From == "") {
			return lineError(s.line, "subscription: email to %s needs notify.email with smtp (host:port) and from", s.Email)
		}
		if n.PublicURL == "" {
			// Messages link to the notice's page and the recipient's acknowledgement; without
			// the server's address those links are bare paths no mail reader can open.
			return lineError(s.line, "subscription: sending to %s needs notify.public_url, the address readers open notice links at (e.g. public_url: https://trueup.example.com)", s.Recipient())
		}
	}
	return nil
}

// WebhookNames lists the webhooks in name order.
func (n *Notify) WebhookNames() []string {
	return slices.Sorted(maps.Keys(n.Webhooks))
}

// UnmarshalYAML decodes and checks one webhook.
func (w *Webhook) UnmarshalYAML(node *yaml.Node) error {
	type plain Webhook
	if err := decodeStrict(node, (*plain)(w), "webhook", "url", "secret", "kind", "legacy_signature"); err != nil {
		return err
	}
	if w.URL == "" {
		return lineError(node.Line, "webhook: missing url")
	}
	if err := checkHTTPURL(w.URL); err != nil {
		return lineError(valueLine(node, "url"), "webhook url %q: %v", w.URL, err)
	}
	switch w.Kind {
	case "", "standard":
		w.Kind = ""
		if w.Secret == "" {
			return lineError(node.Line, "webhook: missing secret (the Standard Webhooks key receivers check the webhook-signature header with, e.g. secret: whsec_$(openssl rand -base64 32))")
		}
	case "slack", "teams":
	default:
		return lineError(valueLine(node, "kind"), "webhook kind %q: want standard, slack or teams", w.Kind)
	}
	if b64, ok := strings.CutPrefix(w.Secret, "whsec_"); ok {
		if key, err := base64.StdEncoding.DecodeString(b64); err != nil || len(key) < 16 {
			return lineError(valueLine(node, "secret"), "webhook secret whsec_…: want whsec_ and at least 16 bytes in base64 (e.g. whsec_$(openssl rand -base64 32))")
		}
	}
	if w.LegacySignature && w.Secret == "" {
		return lineError(valueLine(node, "legacy_signature"), "webhook: legacy_signature needs a secret to sign with")
	}
	return nil
}

func (e *Email) check(node *yaml.Node) error {
	if err := strictKeys(node, "email", "smtp", "from", "username", "password", "starttls"); err != nil {
		return err
	}
	if e.SMTP != "" {
		host, port, err := net.SplitHostPort(e.SMTP)
		if p, perr := strconv.Atoi(port); err != nil || perr != nil || host == "" || p <= 0 || p > 65535 {
			return lineError(valueLine(node, "smtp"), "email.smtp %q: want host:port, e.g. smtp.example.com:587", e.SMTP)
		}
	}
	if e.From != "" && EmailAddress(e.From) == "" {
		return lineError(valueLine(node, "from"), "email.from %q is not an email address", e.From)
	}
	if (e.SMTP == "") != (e.From == "") {
		return lineError(node.Line, "email: smtp and from go together")
	}
	if (e.Username == "") != (e.Password == "") {
		return lineError(node.Line, "email: username and password go together")
	}
	return nil
}

// UnmarshalYAML decodes and checks one subscription.
func (s *Subscription) UnmarshalYAML(node *yaml.Node) error {
	type plain Subscription
	if err := decodeStrict(node, (*plain)(s), "subscription", "table", "exposure", "webhook", "email"); err != nil {
		return err
	}
	s.line = node.Line
	switch {
	case s.Table == "" && s.Exposure == "":
		return lineError(node.Line, "subscription: name a table or an exposure")
	case s.Table != "" && s.Exposure != "":
		return lineError(node.Line, "subscription: name a table or an exposure, not both (make two subscriptions)")
	case s.Webhook == "" && s.Email == "":
		return lineError(node.Line, "subscription: name a webhook or an email address to send to")
	case s.Webhook != "" && s.Email != "":
		return lineError(node.Line, "subscription: name a webhook or an email address, not both (make two subscriptions)")
	}
	if s.Email != "" {
		a, err := mail.ParseAddress(s.Email)
		if err != nil || !strings.Contains(a.Address, "@") || strings.ContainsAny(a.Address, " ,;") {
			return lineError(valueLine(node, "email"), "subscription: %q is not an email address (want name@example.com)", s.Email)
		}
	}
	return nil
}

func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("does not parse: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("want an http:// or https:// URL")
	}
	if u.Host == "" {
		return fmt.Errorf("has no host")
	}
	return nil
}

// validate has nothing left to check: UnmarshalYAML checked every value at its own line.
func (n *Notify) validate(func(key, format string, args ...any) error) error { return nil }
