package notices

import (
	"net/mail"
	"strings"
)

// Channels are where notices go: the webhooks and the email relay they are sent through, who
// is subscribed to what, and the public address their links point at. The caller fills them
// (trueup from trueup.yaml's notify section, which has checked every value); notices keeps no
// knowledge of how they are written down.
type Channels struct {
	// PublicURL is the base of links in notices (e.g. https://trueup.example.com); "" leaves
	// links relative.
	PublicURL     string
	Webhooks      map[string]Webhook // by name, as subscriptions name them
	Email         Email
	Subscriptions []Subscription
}

// Webhook is a named HTTP receiver.
type Webhook struct {
	URL    string
	Secret string // Standard Webhooks key: whsec_<base64>, or a plain secret used as it is
	// Kind is what the receiver expects: KindStandard (trueup's JSON), KindSlack or KindTeams.
	Kind string
	// LegacySignature also sends X-Trueup-Signature (the body alone signed), for receivers
	// written before Standard Webhooks; it goes in a later release.
	LegacySignature bool
}

// Email is the SMTP relay notices are sent through.
type Email struct {
	SMTP     string // host:port
	From     string
	Username string
	Password string
	StartTLS bool
}

// Subscription sends notices about a logical table or an exposure to one channel: a webhook
// by name, or an email address.
type Subscription struct {
	Table    string
	Exposure string
	Webhook  string
	Email    string
}

// Recipient names the subscription's channel as the outbox records it: webhook:NAME or
// email:ADDRESS (the bare address, lower-cased).
func (s Subscription) Recipient() string {
	if s.Webhook != "" {
		return "webhook:" + s.Webhook
	}
	a, err := mail.ParseAddress(s.Email)
	if err != nil {
		return "email:"
	}
	return "email:" + strings.ToLower(a.Address)
}
