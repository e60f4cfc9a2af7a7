package notices

import (
	"context"
	"time"
)

// JSON is a notice as the API and `trueup notice show --format json` give it.
type JSON struct {
	Headline
	Revision    int              `json:"revision"`
	Backfill    string           `json:"backfill,omitempty"`
	RunID       int64            `json:"run_id,omitempty"`
	URL         string           `json:"url"`
	CreatedAt   time.Time        `json:"created_at"`
	UpdatedAt   time.Time        `json:"updated_at"`
	Transitions []TransitionJSON `json:"transitions,omitempty"`
	Revisions   []RevisionJSON   `json:"revisions,omitempty"`
	Recipients  []RecipientJSON  `json:"recipients,omitempty"`
	Evidence    *Evidence        `json:"evidence,omitempty"`
}

// Headline is what a notice's JSON (the API's) and its webhook's payload both give first.
type Headline struct {
	ID         int64    `json:"id"`
	State      State    `json:"state"`
	Title      string   `json:"title"`
	Body       string   `json:"body"`
	Text       string   `json:"text"` // the whole notice as plain text, numbers included
	Tables     []string `json:"tables"`
	Partitions []string `json:"partitions"`
}

// TransitionJSON is one lifecycle step.
type TransitionJSON struct {
	From   State     `json:"from,omitempty"`
	To     State     `json:"to"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Reason string    `json:"reason,omitempty"`
}

// RevisionJSON is one version of the text.
type RevisionJSON struct {
	Revision int       `json:"revision"`
	Title    string    `json:"title"`
	Body     string    `json:"body"`
	At       time.Time `json:"at"`
	Actor    string    `json:"actor"`
}

// RecipientJSON is one recipient and whether they acknowledged. The token is never shown.
type RecipientJSON struct {
	Recipient string    `json:"recipient"`
	AckedAt   time.Time `json:"acked_at,omitzero"`
}

// ToJSON shapes a notice for output; full adds its history and evidence.
func ToJSON(n Notice, url string, full bool) JSON {
	j := JSON{Headline: Headline{ID: n.ID, State: n.State, Title: n.Title, Body: n.Body, Text: Text(n), Tables: n.Tables,
		Partitions: n.Partitions()}, Revision: n.Revision, Backfill: n.Backfill, RunID: n.RunID, URL: url,
		CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt}
	if j.Tables == nil {
		j.Tables = []string{}
	}
	if j.Partitions == nil {
		j.Partitions = []string{}
	}
	if !full {
		return j
	}
	for _, t := range n.Transitions {
		j.Transitions = append(j.Transitions, TransitionJSON(t))
	}
	for _, r := range n.Revisions {
		j.Revisions = append(j.Revisions, RevisionJSON{r.N, r.Title, r.Body, r.At, r.Actor})
	}
	for _, r := range n.Recipients {
		j.Recipients = append(j.Recipients, RecipientJSON{Recipient: r.ID, AckedAt: r.AckedAt})
	}
	ev := n.Evidence
	j.Evidence = &ev
	return j
}

// Deliveries lists the deliveries of a notice, oldest first.
func (s *Service) Deliveries(ctx context.Context, id int64) ([]Delivery, error) {
	return s.outbox.Deliveries(ctx, id)
}

// PublicURL is the configured base of links ("" when none).
func (s *Service) PublicURL() string { return s.opt.Channels.PublicURL }

// Subscriptions are the configured subscriptions, for the notices page.
func (s *Service) Subscriptions() []Subscription { return s.opt.Channels.Subscriptions }
