package server

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/notices"
	"trueup/server/page"
)

// noticesPerPage is how many notices the index lists at once.
const noticesPerPage = 50

// noticeList answers GET /notices: every notice, newest first, filtered by ?table= and ?state=,
// 50 to a page (?page=).
func (s *Server) noticeList(c echo.Context, svc NoticeService) error {
	f, err := noticeFilter(c)
	if err != nil {
		return err
	}
	w, err := pageWindow(c, noticesPerPage, noticesPerPage)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	all, err := svc.List(ctx, notices.Filter{})
	if err != nil {
		return err
	}
	if !seesDrafts(c) {
		all = slices.DeleteFunc(all, func(n notices.Notice) bool { return n.State == notices.StateDraft })
	}
	d := page.NoticeIndex{Chrome: s.chrome("Notices", "Notices"), Table: f.Table, State: string(f.State),
		Tables: noticeTables(all), FeedURL: feedURL(f.Table)}
	for _, st := range notices.States() {
		d.States = append(d.States, string(st))
	}
	var match []notices.Notice
	for _, n := range all {
		if (f.Table == "" || n.HasTable(f.Table)) && (f.State == "" || n.State == f.State) {
			match = append(match, n)
		}
	}
	d.Pager = pager(c, w, len(match) > w.Offset+w.Limit)
	for _, n := range slice(match, w) {
		d.Rows = append(d.Rows, page.NoticeRow{ID: n.ID, Href: noticeHref(n.ID), Title: n.Title, State: string(n.State),
			Tables: strings.Join(n.Tables, ", "), Updated: noticeTime(n.UpdatedAt)})
	}
	for _, sub := range svc.Subscriptions() {
		what := "table " + sub.Table
		if sub.Exposure != "" {
			what = "report " + sub.Exposure
		}
		d.Subscriptions = append(d.Subscriptions, page.NoticeSubscription{What: what, To: maskRecipient(sub.Recipient())})
	}
	if d.SelfSubscriptions, err = s.selfSubscriptionRows(c); err != nil {
		return err
	}
	var follows []page.SubscribeChoice
	for _, t := range d.Tables {
		follows = append(follows, followChoice("table:"+t))
	}
	for _, x := range svc.Exposures() {
		follows = append(follows, followChoice("exposure:"+x.Name))
	}
	d.Subscribe = s.subscribeBox("the data", true, follows...)
	for _, x := range svc.Exposures() {
		d.Exposures = append(d.Exposures, page.NoticeExposure{Name: x.Name, Title: x.Title,
			Tables: strings.Join(x.Tables, ", "), Audience: strings.Join(x.Audience, ", "), Owner: x.Owner})
	}
	return render(c, http.StatusOK, page.NoticeIndexPage(d))
}
