package notices

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	dbsql "database/sql"
	"encoding/base64"
	"fmt"
	"net/mail"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"trueup/fault"
	"trueup/ledger"
)

// States of a self-service subscription.
const (
	SubscriptionPending = "pending" // asked for, not confirmed yet: nothing is sent to it
	SubscriptionActive  = "active"
	SubscriptionEnded   = "ended"
)

// Limits of self-service subscriptions.
const (
	// ConfirmTTL is how long a confirmation link works.
	ConfirmTTL = 48 * time.Hour
	// ManageTTL is how long the manage and one-click unsubscribe links of a message work: every
	// message carries fresh ones.
	ManageTTL = 365 * 24 * time.Hour
	// ConfirmEvery is the least time between two confirmation messages to one address: a flood
	// of requests for an address sends it one message an hour.
	ConfirmEvery = time.Hour
)

// FollowAll follows every notice and every table.
const FollowAll = "all"

// SelfSubscription is one request of someone to be told: an address, what it follows
// (table:NAME, exposure:NAME or all) and whether rule alerts come too.
type SelfSubscription struct {
	ID          int64     `json:"id"`
	Email       string    `json:"email"`
	Follow      string    `json:"follow"`
	Alerts      bool      `json:"alerts"`
	State       string    `json:"state"`
	CreatedAt   time.Time `json:"created_at"`
	ConfirmedAt time.Time `json:"confirmed_at,omitzero"`
	EndedAt     time.Time `json:"ended_at,omitzero"`
	EndedBy     string    `json:"ended_by,omitempty"`
}

// Follows reports whether the subscription is about any of tables or exposures (all is about
// everything).
func (sub SelfSubscription) Follows(tables, exposures []string) bool {
	kind, name, _ := strings.Cut(sub.Follow, ":")
	return sub.Follow == FollowAll || (kind == "table" && containsFold(tables, name)) || (kind == "exposure" && containsFold(exposures, name))
}

// FollowText is what the subscription follows in words: "table orders", "report board_revenue",
// "every notice".
func FollowText(follow string) string {
	kind, name, _ := strings.Cut(follow, ":")
	switch kind {
	case "table":
		return "table " + name
	case "exposure":
		return "report " + name
	}
	return "every notice"
}

// followName is a table's or an exposure's name as trueup writes them: no spaces, no control
// characters, nothing a header or a path could be bent with.
var followName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$`)

// ParseFollow checks what a request asks to follow: all, table:NAME or exposure:NAME.
func ParseFollow(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == FollowAll {
		return FollowAll, nil
	}
	kind, name, ok := strings.Cut(s, ":")
	if !ok || (kind != "table" && kind != "exposure") || !followName.MatchString(name) {
		return "", fault.New(fault.Invalid, "Cannot follow %q: choose a table (table:NAME), a report (exposure:NAME) or all.", clip(s, 80))
	}
	return kind + ":" + name, nil
}

// parseFollow is ParseFollow, and then what it names checked against the project: a table
// trueup keeps, a report of its exposures (Options.KnowsTable).
func (s *Service) parseFollow(ctx context.Context, follow string) (string, error) {
	f, err := ParseFollow(follow)
	if err != nil || s.opt.KnowsTable == nil {
		return f, err
	}
	kind, name, _ := strings.Cut(f, ":")
	switch kind {
	case "table":
		known, err := s.opt.KnowsTable(ctx, name)
		if err != nil {
			return "", err
		}
		if !known {
			return "", fault.New(fault.Invalid, "Cannot follow table %s: trueup keeps no table of that name (choose one the form lists).", name)
		}
	case "exposure":
		for _, x := range s.opt.Exposures {
			if strings.EqualFold(x.Name, name) {
				return f, nil
			}
		}
		return "", fault.New(fault.Invalid, "Cannot follow report %s: no exposure of the project has that name (choose one the form lists).", name)
	}
	return f, nil
}

// ParseEmail checks an address someone typed: one bare address (no name, no list, no line
// breaks), at most 254 characters, with a domain. It returns it lower-cased.
func ParseEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	bad := fault.New(fault.Invalid, "%q is not an email address: write one address, like name@example.com.", clip(s, 80))
	if s == "" || len(s) > 254 || strings.ContainsAny(s, "\r\n\t <>,;\"()[]\\") {
		return "", bad
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return "", bad
	}
	local, domain, ok := strings.Cut(s, "@")
	if !ok || local == "" || !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") {
		return "", bad
	}
	return strings.ToLower(s), nil
}

// SubscribeRequest is what someone asks for on a public page.
type SubscribeRequest struct {
	Email  string `json:"email"`
	Follow string `json:"follow"`
	Alerts bool   `json:"alerts"`
}

// Subscribe records a pending subscription and mails its confirmation link. What it returns
// does not say whether the address was known, subscribed or limited: the caller answers every
// well-formed request the same way. A request for an address that was sent a confirmation in
// the last ConfirmEvery stores nothing and sends nothing (sent reports it, for tests and logs).
func (s *Service) Subscribe(ctx context.Context, req SubscribeRequest) (sent bool, err error) {
	email, err := ParseEmail(req.Email)
	if err != nil {
		return false, err
	}
	follow, err := s.parseFollow(ctx, req.Follow)
	if err != nil {
		return false, err
	}
	if !s.TakesSubscriptions() {
		return false, fault.New(fault.Refused, "This server takes no subscriptions: it needs notify.email to send the confirmation and notify.public_url for its link.")
	}
	key, err := s.linkKey(ctx)
	if err != nil {
		return false, fmt.Errorf("notices: subscribe: %w", err)
	}
	now := s.l.Now()
	err = s.l.Tx(ctx, func(tx *dbsql.Tx) error {
		var last dbsql.NullTime
		if err := tx.QueryRowContext(ctx, `SELECT max(created_at) FROM outbox WHERE recipient = ? AND event LIKE 'subscribe:%'`,
			"email:"+email).Scan(&last); err != nil {
			return err
		}
		if last.Valid && now.Sub(last.Time) < ConfirmEvery {
			return nil
		}
		var id int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO subscriptions (email, follow, alerts, state, created_at)
			VALUES (?, ?, ?, ?, ?) RETURNING id`, email, follow, req.Alerts, SubscriptionPending, now).Scan(&id); err != nil {
			return err
		}
		link := s.link("/subscriptions/confirm/", signLink(key, "c", id, email, now.Add(ConfirmTTL)))
		what := FollowText(follow)
		if req.Alerts {
			what += ", rule alerts included"
		}
		text := "Someone, probably you, asked trueup to tell " + email + " about changes to data: " + what + ".\n\n" +
			"Confirm it by opening this link (it works until " + now.Add(ConfirmTTL).Format("2 January 2006 15:04 UTC") + "):\n" + link + "\n\n" +
			"If you did not ask, ignore this message: nothing is sent to you unless you confirm.\n"
		m := Message{Event: "subscribe:" + strconv.FormatInt(id, 10), Subject: "Confirm: trueup notices about " + what, Text: text,
			Card: &Card{Title: "Confirm your subscription", Status: what, URL: link, Link: "Confirm"}}
		if _, err := s.outbox.enqueueTx(ctx, tx, m, "email:"+email); err != nil {
			return err
		}
		sent = true
		_, err := s.l.AuditTx(ctx, tx, ledger.Entry{Actor: "email:" + email, Action: "subscription.request", Target: subscriptionTarget(id),
			Params: map[string]any{"follow": follow, "alerts": req.Alerts}, Outcome: ledger.OutcomeOK})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("notices: subscribe: %w", err)
	}
	if sent {
		s.outbox.Kick()
	}
	return sent, nil
}

// Confirm makes the subscription a confirmation link names active. The link works once, until
// it expires, and only for the subscription and address it was made for; an active
// subscription of the same address to the same thing is replaced by it (its alerts choice wins).
func (s *Service) Confirm(ctx context.Context, token string) (SelfSubscription, error) {
	var sub SelfSubscription
	err := s.l.Tx(ctx, func(tx *dbsql.Tx) error {
		var err error
		if sub, err = s.fromLink(ctx, tx, token, "c"); err != nil {
			return err
		}
		if sub.State != SubscriptionPending {
			return fault.New(fault.Conflict, "This confirmation link was used already: the subscription is %s. Nothing was changed.", sub.State)
		}
		now := s.l.Now()
		if _, err := tx.ExecContext(ctx, `UPDATE subscriptions SET state = ?, ended_at = ?, ended_by = ? WHERE email = ? AND follow = ? AND state = ?`,
			SubscriptionEnded, now, "replaced", sub.Email, sub.Follow, SubscriptionActive); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE subscriptions SET state = ?, confirmed_at = ? WHERE id = ?`, SubscriptionActive, now, sub.ID); err != nil {
			return err
		}
		sub.State, sub.ConfirmedAt = SubscriptionActive, now
		_, err = s.l.AuditTx(ctx, tx, ledger.Entry{Actor: "email:" + sub.Email, Action: "subscription.confirm", Target: subscriptionTarget(sub.ID),
			Params: map[string]any{"follow": sub.Follow}, Outcome: ledger.OutcomeOK})
		return err
	})
	if err != nil {
		return sub, fmt.Errorf("notices: confirm: %w", err)
	}
	return sub, nil
}

// Subscriber is an address as its manage link shows it: its subscriptions now.
type Subscriber struct {
	Email         string             `json:"email"`
	Subscriptions []SelfSubscription `json:"subscriptions"`
}

// Manage returns the address a manage link was made for and what it follows.
func (s *Service) Manage(ctx context.Context, token string) (Subscriber, error) {
	sub, err := s.fromLink(ctx, s.l.DB(), token, "m")
	if err != nil {
		return Subscriber{}, fmt.Errorf("notices: %w", err)
	}
	return s.subscriber(ctx, s.l.DB(), sub.Email)
}

func (s *Service) subscriber(ctx context.Context, q ledger.Querier, email string) (Subscriber, error) {
	subs, err := selectSubscriptions(ctx, q, `WHERE email = ? AND state = ? ORDER BY id`, email, SubscriptionActive)
	if err != nil {
		return Subscriber{}, fmt.Errorf("notices: subscriptions of %s: %w", email, err)
	}
	return Subscriber{Email: email, Subscriptions: subs}, nil
}

// Follow adds a subscription for the address of a manage link: the link proves the address, so
// it is active at once.
func (s *Service) Follow(ctx context.Context, token, follow string, alerts bool) (Subscriber, error) {
	f, err := s.parseFollow(ctx, follow)
	if err != nil {
		return Subscriber{}, err
	}
	var out Subscriber
	err = s.l.Tx(ctx, func(tx *dbsql.Tx) error {
		sub, err := s.fromLink(ctx, tx, token, "m")
		if err != nil {
			return err
		}
		now := s.l.Now()
		if _, err := tx.ExecContext(ctx, `UPDATE subscriptions SET state = ?, ended_at = ?, ended_by = ? WHERE email = ? AND follow = ? AND state = ?`,
			SubscriptionEnded, now, "replaced", sub.Email, f, SubscriptionActive); err != nil {
			return err
		}
		var id int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO subscriptions (email, follow, alerts, state, created_at, confirmed_at)
			VALUES (?, ?, ?, ?, ?, ?) RETURNING id`, sub.Email, f, alerts, SubscriptionActive, now, now).Scan(&id); err != nil {
			return err
		}
		if _, err := s.l.AuditTx(ctx, tx, ledger.Entry{Actor: "email:" + sub.Email, Action: "subscription.follow", Target: subscriptionTarget(id),
			Params: map[string]any{"follow": f, "alerts": alerts}, Outcome: ledger.OutcomeOK}); err != nil {
			return err
		}
		out, err = s.subscriber(ctx, tx, sub.Email)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("notices: follow: %w", err)
	}
	return out, nil
}

// Unsubscribe ends subscriptions of the address a manage link was made for: the one whose id
// is given, or every one (id 0: the one-click unsubscribe of RFC 8058). Nothing left to end is
// a conflict: the page says so and nothing changes.
func (s *Service) Unsubscribe(ctx context.Context, token string, id int64) ([]SelfSubscription, error) {
	var ended []SelfSubscription
	err := s.l.Tx(ctx, func(tx *dbsql.Tx) error {
		sub, err := s.fromLink(ctx, tx, token, "m")
		if err != nil {
			return err
		}
		where, args := `WHERE email = ? AND state IN (?, ?)`, []any{sub.Email, SubscriptionActive, SubscriptionPending}
		if id != 0 {
			where, args = where+` AND id = ?`, append(args, id)
		}
		if ended, err = selectSubscriptions(ctx, tx, where, args...); err != nil {
			return err
		}
		if len(ended) == 0 {
			return fault.New(fault.Conflict, "%s follows nothing here any more: nothing was changed.", sub.Email)
		}
		return s.end(ctx, tx, ended, "email:"+sub.Email)
	})
	if err != nil {
		return nil, fmt.Errorf("notices: unsubscribe: %w", err)
	}
	return ended, nil
}

// RemoveSubscription ends a self-service subscription by its id: an approver's removal.
func (s *Service) RemoveSubscription(ctx context.Context, id int64, actor string) (SelfSubscription, error) {
	var sub SelfSubscription
	err := s.l.Tx(ctx, func(tx *dbsql.Tx) error {
		subs, err := selectSubscriptions(ctx, tx, `WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if len(subs) == 0 {
			return fault.New(fault.NotFound, "There is no subscription %d.", id)
		}
		if sub = subs[0]; sub.State == SubscriptionEnded {
			return fault.New(fault.Conflict, "Subscription %d has ended already.", id)
		}
		return s.end(ctx, tx, subs, actorOr(actor))
	})
	if err != nil {
		return sub, fmt.Errorf("notices: remove subscription: %w", err)
	}
	sub.State = SubscriptionEnded
	return sub, nil
}

func (s *Service) end(ctx context.Context, tx *dbsql.Tx, subs []SelfSubscription, actor string) error {
	now := s.l.Now()
	for _, sub := range subs {
		if _, err := tx.ExecContext(ctx, `UPDATE subscriptions SET state = ?, ended_at = ?, ended_by = ? WHERE id = ?`,
			SubscriptionEnded, now, actor, sub.ID); err != nil {
			return err
		}
		if _, err := s.l.AuditTx(ctx, tx, ledger.Entry{Actor: actor, Action: "subscription.end", Target: subscriptionTarget(sub.ID),
			Params: map[string]any{"follow": sub.Follow}, Outcome: ledger.OutcomeOK}); err != nil {
			return err
		}
	}
	return nil
}

// SelfSubscriptions lists the subscriptions taken from the public pages that are pending or
// active, oldest first: what operators see beside the configured ones.
func (s *Service) SelfSubscriptions(ctx context.Context) ([]SelfSubscription, error) {
	subs, err := selectSubscriptions(ctx, s.l.DB(), `WHERE state IN (?, ?) ORDER BY id`, SubscriptionActive, SubscriptionPending)
	if err != nil {
		return nil, fmt.Errorf("notices: subscriptions: %w", err)
	}
	return subs, nil
}

func selectSubscriptions(ctx context.Context, q ledger.Querier, where string, args ...any) ([]SelfSubscription, error) {
	return ledger.Select(ctx, q, func(sc ledger.Scanner) (SelfSubscription, error) {
		var sub SelfSubscription
		var confirmed, ended dbsql.NullTime
		err := sc.Scan(&sub.ID, &sub.Email, &sub.Follow, &sub.Alerts, &sub.State, &sub.CreatedAt, &confirmed, &ended, &sub.EndedBy)
		sub.CreatedAt = sub.CreatedAt.UTC()
		if confirmed.Valid {
			sub.ConfirmedAt = confirmed.Time.UTC()
		}
		if ended.Valid {
			sub.EndedAt = ended.Time.UTC()
		}
		return sub, err
	}, `SELECT id, email, follow, alerts, state, created_at, confirmed_at, ended_at, ended_by FROM subscriptions `+where, args...)
}

func subscriptionTarget(id int64) string { return "subscription " + strconv.FormatInt(id, 10) }

// link is an absolute link to path+token on the public address.
func (s *Service) link(path, token string) string {
	return strings.TrimRight(s.opt.Channels.PublicURL, "/") + path + token
}

// linkKey is the key subscription links are signed with, made the first time one is needed.
func (s *Service) linkKey(ctx context.Context) ([]byte, error) { return linkKey(ctx, s.l) }

func linkKey(ctx context.Context, l *ledger.Ledger) ([]byte, error) {
	c := l.Shared(linkKeyCache{}, func() any { return &keyCache{} }).(*keyCache)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key != nil {
		return c.key, nil
	}
	b := make([]byte, 32)
	rand.Read(b)
	if _, err := l.DB().ExecContext(ctx, `INSERT INTO subscription_key (id, secret) VALUES (1, ?) ON CONFLICT (id) DO NOTHING`,
		base64.RawStdEncoding.EncodeToString(b)); err != nil {
		return nil, fmt.Errorf("subscription key: %w", err)
	}
	var secret string
	if err := l.DB().QueryRowContext(ctx, `SELECT secret FROM subscription_key WHERE id = 1`).Scan(&secret); err != nil {
		return nil, fmt.Errorf("subscription key: %w", err)
	}
	key, err := base64.RawStdEncoding.DecodeString(secret)
	if err != nil {
		return nil, fmt.Errorf("subscription key: %w", err)
	}
	c.key = key
	return key, nil
}

// keyCache keeps the link key once read: it never changes for a ledger (one process holds it).
type (
	linkKeyCache struct{}
	keyCache     struct {
		mu  sync.Mutex
		key []byte
	}
)

// A link token is <purpose><id>.<expiry, Unix seconds>.<MAC>: purpose c (confirm) or m (manage
// and unsubscribe), the subscription's id, and an HMAC-SHA256 (first 16 bytes, base64url) of
// all three with the subscription's address under the ledger's key. The address is in the MAC
// and not in the link, so a link shows nobody's address in a log, and a link changed to name
// another subscription (another address) does not verify.
func signLink(key []byte, purpose string, id int64, email string, exp time.Time) string {
	head := purpose + strconv.FormatInt(id, 10) + "." + strconv.FormatInt(exp.Unix(), 10)
	return head + "." + linkMAC(key, head, email)
}

func linkMAC(key []byte, head, email string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(head + "\n" + email))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// errBadLink is the one answer to a link trueup did not make, whatever was wrong with it.
func errBadLink() error {
	return fault.New(fault.NotFound, "This link is not one trueup sent, or it was cut short: check that you opened the whole link from the message. Nothing was changed.")
}

// fromLink checks a link token of purpose and returns the subscription it names.
func (s *Service) fromLink(ctx context.Context, q ledger.Querier, token, purpose string) (SelfSubscription, error) {
	var none SelfSubscription
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(token) > 200 || !strings.HasPrefix(parts[0], purpose) {
		return none, errBadLink()
	}
	id, err1 := strconv.ParseInt(parts[0][len(purpose):], 10, 64)
	exp, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || id <= 0 {
		return none, errBadLink()
	}
	subs, err := selectSubscriptions(ctx, q, `WHERE id = ?`, id)
	if err != nil {
		return none, err
	}
	key, err := linkKey(ctx, s.l)
	if err != nil {
		return none, err
	}
	// An unknown id is checked against a made-up address, so its answer takes as long as a
	// wrong MAC's.
	email := "nobody@invalid"
	if len(subs) == 1 {
		email = subs[0].Email
	}
	want := linkMAC(key, parts[0]+"."+parts[1], email)
	if !hmac.Equal([]byte(want), []byte(parts[2])) || len(subs) != 1 {
		return none, errBadLink()
	}
	if at := time.Unix(exp, 0).UTC(); s.l.Now().After(at) {
		if purpose == "c" {
			return none, fault.New(fault.Invalid, "This confirmation link expired on %s. Subscribe again to get a new one. Nothing was changed.", at.Format("2 January 2006 15:04 UTC"))
		}
		return none, fault.New(fault.Invalid, "This link expired on %s. Every message trueup sends carries a fresh one. Nothing was changed.", at.Format("2 January 2006 15:04 UTC"))
	}
	return subs[0], nil
}

// manageLink is the manage (and one-click unsubscribe) token of an address with an active
// self-service subscription, "" when it has none: configured recipients cannot leave by link.
func manageLink(ctx context.Context, l *ledger.Ledger, email string) (string, error) {
	var id dbsql.NullInt64
	if err := l.DB().QueryRowContext(ctx, `SELECT min(id) FROM subscriptions WHERE email = ? AND state = ?`, email, SubscriptionActive).Scan(&id); err != nil {
		return "", err
	}
	if !id.Valid {
		return "", nil
	}
	key, err := linkKey(ctx, l)
	if err != nil {
		return "", err
	}
	return signLink(key, "m", id.Int64, email, l.Now().Add(ManageTTL)), nil
}

// ManageToken is the manage token of an address (for the confirmation page's link), "" when it
// follows nothing.
func (s *Service) ManageToken(ctx context.Context, email string) (string, error) {
	t, err := manageLink(ctx, s.l, email)
	if err != nil {
		return "", fmt.Errorf("notices: %w", err)
	}
	return t, nil
}

// TakesSubscriptions reports whether people can subscribe themselves: confirmations need the
// email relay and the public address their links point at.
func (s *Service) TakesSubscriptions() bool {
	return s.opt.Channels.Email.SMTP != "" && s.opt.Channels.PublicURL != ""
}
