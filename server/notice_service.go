package server

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"trueup/notices"
	"trueup/ops"
	"trueup/server/page"
)

// NoticeService is what the public notice pages, the feed and a recipient's acknowledgement
// link read of the notices (notices.Service), and what other pages show of them. These are
// not the operator's operations (ops.Notices, Options.NoticeOps): they render the stored notice
// — its evidence and deliveries — for readers outside, drafts hidden from them, and an
// acknowledgement is the recipient's, proven by the link's token, not an operator's.
type NoticeService interface {
	List(ctx context.Context, f notices.Filter) ([]notices.Notice, error)
	Get(ctx context.Context, id int64) (notices.Notice, error)
	Link(ctx context.Context, id int64, token string) (notices.Notice, notices.Recipient, error)
	Acknowledge(ctx context.Context, id int64, token string) (notices.Recipient, error)
	Deliveries(ctx context.Context, id int64) ([]notices.Delivery, error)
	PublicURL() string
	Subscriptions() []notices.Subscription
	Exposures() []*notices.Exposure
}

func noticeHref(id int64) string { return "/notices/" + strconv.FormatInt(id, 10) }

func noticeTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// errNoNotices answers a notice request on a server without notices.
func errNoNotices() error {
	return echo.NewHTTPError(http.StatusNotFound, "Notices are not set up on this server.")
}

// noticeReads returns what the public notice pages read, or a 404 when the server has none.
func (s *Server) noticeReads() (NoticeService, error) {
	if s.opt.Notices == nil {
		return nil, errNoNotices()
	}
	return s.opt.Notices, nil
}

// notices returns the notice operations, or a 404 when the server has none.
func (s *Server) notices() (ops.Notices, error) {
	if s.opt.NoticeOps == nil {
		return nil, errNoNotices()
	}
	return s.opt.NoticeOps, nil
}

// noticeReadsFor returns what the public notice pages read and the notice the path names, or
// a 404 (no notices on this server first, then no such notice).
func (s *Server) noticeReadsFor(c echo.Context) (NoticeService, int64, error) {
	svc, err := s.noticeReads()
	if err != nil {
		return nil, 0, err
	}
	id, err := noticeID(c)
	return svc, id, err
}

// noticesFor returns the notice operations and the notice the path names, or a 404 as
// noticeReadsFor does.
func (s *Server) noticesFor(c echo.Context) (ops.Notices, int64, error) {
	n, err := s.notices()
	if err != nil {
		return nil, 0, err
	}
	id, err := noticeID(c)
	return n, id, err
}

// noticeID parses the :id parameter.
func noticeID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, echo.NewHTTPError(http.StatusNotFound, "There is no notice "+strconv.Quote(c.Param("id"))+".")
	}
	return id, nil
}

// noticeFilter reads ?table= and ?state=, refusing an unknown state.
func noticeFilter(c echo.Context) (notices.Filter, error) {
	f := notices.Filter{Table: c.QueryParam("table"), State: notices.State(c.QueryParam("state"))}
	if f.State != "" && !f.State.Valid() {
		return f, echo.NewHTTPError(http.StatusBadRequest, "Unknown state "+strconv.Quote(string(f.State))+".")
	}
	return f, nil
}

func feedURL(table string) string {
	if table == "" {
		return "/notices.atom"
	}
	return "/notices.atom?table=" + url.QueryEscape(table)
}

func noticeTables(ns []notices.Notice) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range ns {
		for _, t := range n.Tables {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// plannedInput is a planned time as a datetime-local field shows it, in UTC.
func plannedInput(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04")
}

// maskRecipient hides most of an email address on the public page: c***@example.com.
func maskRecipient(id string) string {
	addr, ok := strings.CutPrefix(id, "email:")
	if !ok {
		return strings.TrimPrefix(id, "webhook:") + " (webhook)"
	}
	local, domain, _ := strings.Cut(addr, "@")
	if len(local) > 1 {
		local = local[:1] + "***"
	}
	return local + "@" + domain
}

func noticePage(n notices.Notice, ds []notices.Delivery, chrome page.Chrome) page.NoticeDetail {
	d := page.NoticeDetail{
		Chrome: chrome, ID: n.ID, Title: n.Title, State: string(n.State), Tables: n.Tables,
		BodyHTML: string(notices.BodyHTML(notices.Body(n))), Unit: n.Evidence.PartitionColumn, EditTitle: n.Title, EditBody: n.Body,
		Href: noticeHref(n.ID), FeedURL: feedURL(""), PlannedSwap: plannedInput(n.Evidence.PlannedSwap),
		CanEdit: n.State == notices.StateDraft, CanAnnounce: n.State == notices.StateDraft,
		CanWithdraw: n.State == notices.StateDraft || n.State == notices.StateAnnounced,
	}
	// The page shows the state's name beside the line: the line goes on from it.
	line := strings.TrimPrefix(notices.StateLine(n), "Status: ")
	d.StateLine = strings.TrimPrefix(strings.TrimPrefix(line, string(n.State)), strings.ReplaceAll(string(n.State), "-", " "))
	if d.Unit == "" {
		d.Unit = "partition"
	}
	if len(n.Tables) == 1 {
		d.FeedURL = feedURL(n.Tables[0])
	}
	if n.Evidence.Backfill != "" {
		d.BackfillHref = backfillHref(n.Evidence.Backfill)
	}
	if (n.State == notices.StateDraft || n.State == notices.StateAnnounced) && len(n.Tables) > 0 {
		d.SwapHref = "/tables/" + url.PathEscape(n.Tables[0]) + "?target=" + url.QueryEscape(n.Evidence.Target)
	}
	for _, r := range notices.ReportRows(n.Evidence) {
		d.Reports = append(d.Reports, page.NoticeNumber(r))
	}
	for _, p := range notices.PartitionRows(n.Evidence) {
		d.Partitions = append(d.Partitions, page.NoticePartition(p))
		d.Measured = d.Measured || p.Measure != ""
	}
	d.LeftOut = notices.LeftOut(n.Evidence)
	for _, t := range notices.ChartTables(n.Evidence.Diff) {
		d.Charts = append(d.Charts, page.NoticeChart{Table: t, Charted: notices.Charted(n.Evidence.Diff, t), SVG: notices.Chart(n.Evidence.Diff, t)})
	}
	for _, t := range n.Transitions {
		d.Transitions = append(d.Transitions, page.NoticeTransition{State: string(t.To), At: noticeTime(t.At), Actor: t.Actor, Reason: t.Reason})
	}
	for _, r := range n.Revisions {
		d.Revisions = append(d.Revisions, page.NoticeRevision{N: r.N, At: noticeTime(r.At), Actor: r.Actor, Title: r.Title})
	}
	for _, r := range n.Recipients {
		d.Recipients = append(d.Recipients, page.NoticeRecipient{Name: maskRecipient(r.ID), AckedAt: noticeTime(r.AckedAt)})
		if r.Acked() {
			d.Acked++
		}
	}
	for _, x := range ds {
		d.Deliveries = append(d.Deliveries, page.NoticeDelivery{Recipient: maskRecipient(x.Recipient), Event: x.Event,
			State: x.State, Attempts: x.Attempts, Error: x.LastError})
	}
	return d
}
