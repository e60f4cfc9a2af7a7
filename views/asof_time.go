package views

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// LiveVersion is the version of a logical table that was live at some time, and why.
type LiveVersion struct {
	Table   string `json:"table"`
	Version string `json:"version"` // e.g. "v2"
	// Since is when it went live: the publish's finish, or when trueup first knew the table.
	Since time.Time `json:"since,omitzero"`
	// Publish is the swap, rollback or adopt that made it live (0: it was live when trueup
	// first knew the table).
	Publish int64  `json:"publish,omitempty"`
	Kind    string `json:"kind,omitempty"` // that publish's kind
}

// LiveAt answers which retained version of table was live at at, from the ledger's record of
// done swaps, rollbacks and adopts: the version the last one before at moved the view to, or,
// before the first, the version that one moved it from (the one live when trueup first knew the
// table). A table adopted with `trueup adopt` is known from its adoption; one whose versions
// trueup found on first sight from that first sight. A time before trueup knew the table or
// after the ledger's now, or a version retired since, is refused (fault.Invalid) naming the table and what is retained.
func (s *Service) LiveAt(ctx context.Context, table string, at time.Time) (LiveVersion, error) {
	l, err := s.VersionsWithHistory(ctx, table, 0)
	if err != nil {
		return LiveVersion{}, err
	}
	var done []Publish
	for _, p := range l.History {
		if p.State == PublishDone {
			done = append(done, p)
		}
	}
	when := func(p Publish) time.Time { return cmp.Or(p.FinishedAt, p.StartedAt) }
	slices.SortStableFunc(done, func(a, b Publish) int { return cmp.Or(when(a).Compare(when(b)), cmp.Compare(a.ID, b.ID)) })

	known := time.Time{}
	for _, v := range l.Versions {
		if known.IsZero() || v.CreatedAt.Before(known) {
			known = v.CreatedAt
		}
	}
	for _, p := range done { // the newest adopt: before it the table was a plain table
		if p.Kind == KindAdopt {
			known = when(p)
		}
	}
	at = at.UTC()
	retained := retainedNames(l)
	if now := s.ledger.Now().UTC(); at.After(now) {
		return LiveVersion{}, refusef("%s: %s is in the future (it is now %s): which version will be live then is not known; leave the time out to read what is live now",
			table, stamp(at), stamp(now))
	}
	if at.Before(known) {
		return LiveVersion{}, refusef("%s: %s is before trueup knew the table (%s); ask for %s or later (retained: %s)",
			table, stamp(at), stamp(known), stamp(known), retained)
	}
	live := LiveVersion{Table: table}
	n := l.Live
	var last *Publish
	for i := range done {
		if when(done[i]).After(at) {
			break
		}
		last = &done[i]
	}
	switch {
	case last != nil:
		c, _ := last.change(table)
		n, live.Since, live.Publish, live.Kind = c.To, when(*last), last.ID, last.Kind
	case len(done) > 0:
		c, _ := done[0].change(table)
		n, live.Since = c.From, known
	default:
		live.Since = known
	}
	if n == 0 {
		return LiveVersion{}, refusef("%s was not a logical table at %s (no view over a version then); retained: %s",
			table, stamp(at), retained)
	}
	live.Version = VersionName(n)
	for _, v := range l.Versions {
		if v.N == n && (v.State == StateRetired || !v.Exists) {
			return LiveVersion{}, refusef("%s %s, live at %s, was retired: it can no longer be queried (retained: %s)",
				table, live.Version, stamp(at), retained)
		}
	}
	return live, nil
}

// retainedNames lists the versions of l that can still be read, e.g. "v2 (live), v3".
func retainedNames(l Listing) string {
	var out []string
	for _, v := range l.Versions {
		if v.State == StateRetired || !v.Exists {
			continue
		}
		name := v.Name()
		if v.Live {
			name += " (live)"
		}
		out = append(out, name)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// RetainedVersions lists table's versions that can still be read (not retired, table present),
// oldest first, and the live one.
func (s *Service) RetainedVersions(ctx context.Context, table string) (versions []string, live string, err error) {
	l, err := s.Versions(ctx, table)
	if err != nil {
		return nil, "", err
	}
	for _, v := range l.Versions {
		if v.State != StateRetired && v.Exists {
			versions = append(versions, v.Name())
		}
	}
	return versions, VersionName(l.Live), nil
}

// String says what a LiveVersion says, e.g. "v2 (live since 2026-07-20 09:00:00 UTC, swap #4)".
func (v LiveVersion) String() string {
	if v.Publish == 0 {
		return fmt.Sprintf("%s (live since trueup first knew the table, %s)", v.Version, stamp(v.Since))
	}
	return fmt.Sprintf("%s (live since %s, %s #%d)", v.Version, stamp(v.Since), v.Kind, v.Publish)
}
