package notices

import (
	"context"
	dbsql "database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"trueup/fault"
	"trueup/ledger"
)

// Delivery states of an outbox row.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed" // gave up: permanent error or too many attempts
)

// Message is something to tell subscribers: a notice's transition or a monitor alert.
type Message struct {
	// Event names what happened, unique per occurrence (e.g. alert:12). With the recipient it
	// makes the idempotency key: enqueueing the same event twice sends nothing twice.
	Event string
	// Tables and Exposures choose the subscribers when To is empty.
	Tables    []string
	Exposures []string
	// To names recipients directly: webhook:NAME or email:ADDRESS.
	To      []string
	Subject string
	Text    string
	HTML    string // optional; the text, escaped, when empty
	// Payload is the webhook's JSON body (default: event, subject and text).
	Payload any
	// Card is the message as Slack and Teams webhooks show it (default: the subject and text).
	Card     *Card
	NoticeID int64
	// Alert marks a rule alert: self-service subscribers get it only if they asked for alerts.
	Alert bool
}

// Delivery is one outbox row: one message to one recipient.
type Delivery struct {
	ID          int64     `json:"id"`
	Key         string    `json:"key"`
	Event       string    `json:"event"`
	Recipient   string    `json:"recipient"`
	NoticeID    int64     `json:"notice_id,omitempty"`
	Subject     string    `json:"subject"`
	State       string    `json:"state"`
	Attempts    int       `json:"attempts"`
	NextAt      time.Time `json:"next_at"`
	LastError   string    `json:"last_error,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	DeliveredAt time.Time `json:"delivered_at,omitzero"`

	text, html, payload string
}

// OutboxOptions tune delivery. Zero values take the defaults.
type OutboxOptions struct {
	HTTP *http.Client // default: 10 s timeout
	// After waits between worker passes (default time.After); tests make time pass by it.
	After func(d time.Duration) <-chan time.Time
	// Now is the clock retries are scheduled by (default the ledger's).
	Now         func() time.Time
	MaxAttempts int           // default 10, then the delivery is marked failed
	Backoff     time.Duration // first retry delay (default 30 s), doubling per attempt
	MaxBackoff  time.Duration // default 1 h
	Poll        time.Duration // how often an idle worker looks again (default 30 s)
	Logger      *slog.Logger
	// Hello is the name the SMTP client greets with (default localhost).
	Hello string
}

// Outbox is the durable queue every notice and alert goes out through. Rows are written in the
// ledger in the same transaction as the change they announce; a worker sends them and records
// the outcome. A receiver that is down gets the message later; a crash before the outcome is
// recorded resends it with the same idempotency key, which receivers use to drop the repeat.
type Outbox struct {
	l    *ledger.Ledger
	cfg  Channels
	opt  OutboxOptions
	mu   sync.Mutex // one pass at a time
	kick chan struct{}
}

// NewOutbox returns the outbox over l, sending through cfg.
func NewOutbox(l *ledger.Ledger, cfg Channels, opt OutboxOptions) *Outbox {
	if opt.HTTP == nil {
		opt.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	if opt.After == nil {
		opt.After = time.After
	}
	if opt.Now == nil {
		opt.Now = l.Now
	}
	if opt.MaxAttempts <= 0 {
		opt.MaxAttempts = 10
	}
	if opt.Backoff <= 0 {
		opt.Backoff = 30 * time.Second
	}
	if opt.MaxBackoff <= 0 {
		opt.MaxBackoff = time.Hour
	}
	if opt.Poll <= 0 {
		opt.Poll = 30 * time.Second
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Hello == "" {
		opt.Hello = "localhost"
	}
	return &Outbox{l: l, cfg: cfg, opt: opt, kick: make(chan struct{}, 1)}
}

// subscribers returns the recipients subscribed to any of tables or exposures, sorted, each
// once: the configured subscriptions and the confirmed self-service ones (for a rule alert,
// only those that asked for alerts; "all" follows everything).
func (o *Outbox) subscribers(ctx context.Context, q ledger.Querier, tables, exposures []string, alert bool) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(r string) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, s := range o.cfg.Subscriptions {
		if (s.Table != "" && containsFold(tables, s.Table)) || (s.Exposure != "" && containsFold(exposures, s.Exposure)) {
			add(s.Recipient())
		}
	}
	self, err := selectSubscriptions(ctx, q, `WHERE state = ?`, SubscriptionActive)
	if err != nil {
		return nil, err
	}
	for _, s := range self {
		if alert && !s.Alerts {
			continue
		}
		if s.Follows(tables, exposures) {
			add("email:" + s.Email)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Enqueue records m for each of its recipients and wakes the worker. It returns how many
// deliveries were added: 0 when nobody subscribes, or when the event was already enqueued.
func (o *Outbox) Enqueue(ctx context.Context, m Message) (int, error) {
	if m.Event == "" {
		return 0, fmt.Errorf("notices: enqueue: %w", fault.New(fault.Invalid, "a message needs an event name"))
	}
	added := 0
	err := o.l.Tx(ctx, func(tx *dbsql.Tx) error {
		to := m.To
		if len(to) == 0 {
			var err error
			if to, err = o.subscribers(ctx, tx, m.Tables, m.Exposures, m.Alert); err != nil {
				return err
			}
		}
		for _, r := range to {
			ok, err := o.enqueueTx(ctx, tx, m, r)
			if err != nil {
				return err
			}
			if ok {
				added++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("notices: enqueue %s: %w", m.Event, err)
	}
	o.Kick()
	return added, nil
}

// enqueueTx adds one delivery inside tx; false when its key is already there.
func (o *Outbox) enqueueTx(ctx context.Context, tx *dbsql.Tx, m Message, recipient string) (bool, error) {
	key := m.Event + "/" + recipient
	payload := m.Payload
	if payload == nil {
		payload = map[string]any{"event": m.Event, "subject": m.Subject, "text": m.Text}
	}
	if name, ok := strings.CutPrefix(recipient, "webhook:"); ok {
		switch o.cfg.Webhooks[name].Kind {
		case KindSlack:
			payload = slackPayload(cardOf(m))
		case KindTeams:
			payload = teamsPayload(cardOf(m))
		}
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return false, fmt.Errorf("payload: %w", err)
	}
	html := m.HTML
	if html == "" {
		html = textToHTML(m.Text)
	}
	now := o.opt.Now().UTC()
	res, err := tx.ExecContext(ctx, `INSERT INTO outbox (key, event, recipient, notice_id, subject, text_body, html_body,
		payload, state, attempts, next_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)
		ON CONFLICT (key) DO NOTHING`,
		key, m.Event, recipient, m.NoticeID, m.Subject, m.Text, html, string(body), DeliveryPending, now, now)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// Kick wakes the worker to look at the outbox now.
func (o *Outbox) Kick() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// Report counts what one pass did.
type Report struct {
	Delivered int `json:"delivered"`
	Retrying  int `json:"retrying"`
	Failed    int `json:"failed"`
	// Waiting are the deliveries not due yet (a retry's backoff): not tried by this pass.
	Waiting int `json:"waiting"`
}

const deliveryCols = `id, key, event, recipient, notice_id, subject, state, attempts, next_at, last_error,
	created_at, delivered_at, text_body, html_body, CAST(payload AS VARCHAR)`

func scanDelivery(row interface{ Scan(...any) error }) (Delivery, error) {
	var d Delivery
	var delivered dbsql.NullTime
	err := row.Scan(&d.ID, &d.Key, &d.Event, &d.Recipient, &d.NoticeID, &d.Subject, &d.State, &d.Attempts,
		&d.NextAt, &d.LastError, &d.CreatedAt, &delivered, &d.text, &d.html, &d.payload)
	d.NextAt, d.CreatedAt = d.NextAt.UTC(), d.CreatedAt.UTC()
	if delivered.Valid {
		d.DeliveredAt = delivered.Time.UTC()
	}
	return d, err
}

// recordTimeout bounds the write of a delivery's outcome, which does not stop with the pass's
// context.
const recordTimeout = 10 * time.Second

// Deliver makes one pass over the deliveries that are due, sending each and recording the
// outcome. A failed attempt is retried later with exponential backoff.
func (o *Outbox) Deliver(ctx context.Context) (Report, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var rep Report
	due, err := o.query(ctx, `WHERE state = ? AND next_at <= ? ORDER BY id`, DeliveryPending, o.opt.Now().UTC())
	if err != nil {
		return rep, err
	}
	for _, d := range due {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		sendErr := o.send(ctx, d)
		// The outcome is recorded even when ctx ended during the send: a message that went out
		// and stayed pending would go out again on the next pass.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		err := o.record(rctx, d, sendErr, &rep)
		cancel()
		if err != nil {
			return rep, err
		}
	}
	var waiting int
	if err := o.l.DB().QueryRowContext(ctx, `SELECT count(*) FROM outbox WHERE state = ? AND next_at > ?`,
		DeliveryPending, o.opt.Now().UTC()).Scan(&waiting); err != nil {
		return rep, fmt.Errorf("notices: outbox: %w", err)
	}
	rep.Waiting = waiting
	return rep, nil
}

func (o *Outbox) record(ctx context.Context, d Delivery, sendErr error, rep *Report) error {
	now := o.opt.Now().UTC()
	attempts := d.Attempts + 1
	var err error
	switch {
	case sendErr == nil:
		rep.Delivered++
		_, err = o.l.DB().ExecContext(ctx, `UPDATE outbox SET state = ?, attempts = ?, delivered_at = ?, last_error = ''
			WHERE id = ?`, DeliveryDelivered, attempts, now, d.ID)
	case errors.Is(sendErr, errPermanent) || attempts >= o.opt.MaxAttempts:
		rep.Failed++
		o.opt.Logger.Warn("delivery failed for good", "key", d.Key, "attempts", attempts, "err", sendErr)
		_, err = o.l.DB().ExecContext(ctx, `UPDATE outbox SET state = ?, attempts = ?, last_error = ? WHERE id = ?`,
			DeliveryFailed, attempts, sendErr.Error(), d.ID)
	default:
		rep.Retrying++
		next := now.Add(o.backoff(attempts))
		o.opt.Logger.Info("delivery will be retried", "key", d.Key, "attempts", attempts, "next", next, "err", sendErr)
		_, err = o.l.DB().ExecContext(ctx, `UPDATE outbox SET attempts = ?, next_at = ?, last_error = ? WHERE id = ?`,
			attempts, next, sendErr.Error(), d.ID)
	}
	if err != nil {
		return fmt.Errorf("notices: record delivery %s: %w", d.Key, err)
	}
	return nil
}

// backoff is the wait after the given number of failed attempts: Backoff, 2×, 4×, … up to MaxBackoff.
func (o *Outbox) backoff(attempts int) time.Duration {
	d := o.opt.Backoff
	for i := 1; i < attempts && d < o.opt.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, o.opt.MaxBackoff)
}

func (o *Outbox) query(ctx context.Context, where string, args ...any) ([]Delivery, error) {
	out, err := ledger.Select(ctx, o.l.DB(), scanDelivery, "SELECT "+deliveryCols+" FROM outbox "+where, args...)
	if err != nil {
		return nil, fmt.Errorf("notices: outbox: %w", err)
	}
	return out, nil
}

// Deliveries lists the deliveries of a notice (all deliveries for id 0), oldest first.
func (o *Outbox) Deliveries(ctx context.Context, noticeID int64) ([]Delivery, error) {
	if noticeID == 0 {
		return o.query(ctx, "ORDER BY id")
	}
	return o.query(ctx, "WHERE notice_id = ? ORDER BY id", noticeID)
}

// Run delivers until ctx ends: a pass whenever something is enqueued, when a retry falls due,
// and every Poll otherwise.
func (o *Outbox) Run(ctx context.Context) error {
	for {
		_, err := o.Deliver(ctx)
		if err != nil && ctx.Err() == nil {
			o.opt.Logger.Error("outbox pass failed", "err", err)
		}
		wait := o.opt.Poll
		var next dbsql.NullTime
		if err := o.l.DB().QueryRowContext(ctx, `SELECT min(next_at) FROM outbox WHERE state = ?`, DeliveryPending).Scan(&next); err == nil && next.Valid {
			wait = min(wait, max(next.Time.Sub(o.opt.Now()), 0))
		}
		if err != nil {
			wait = max(wait, time.Second) // the ledger is failing: do not spin
		}
		select {
		case <-ctx.Done():
			return nil
		case <-o.kick:
		case <-o.opt.After(wait):
		}
	}
}
