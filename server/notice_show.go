package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/notices"
	"trueup/server/page"
)

// noticeShow answers GET /notices/{id}: the public page of one notice, plain language first.
func (s *Server) noticeShow(c echo.Context) error {
	return s.noticeShowing(c, http.StatusOK, nil)
}

// noticeShowing answers with the notice's page, changed by edit when not nil (an edit refused,
// shown again with what was typed and why), with the given status.
func (s *Server) noticeShowing(c echo.Context, status int, edit func(*page.NoticeDetail)) error {
	svc, id, err := s.noticeReadsFor(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	n, err := svc.Get(ctx, id)
	if err != nil {
		return err
	}
	if n.State == notices.StateDraft && !seesDrafts(c) {
		return notices.NotFound() // as if there were none: a draft is not public yet
	}
	ds, err := svc.Deliveries(ctx, id)
	if err != nil {
		return err
	}
	d := noticePage(n, ds, s.chrome(n.Title, "Notices"))
	if seesDrafts(c) { // the query page needs a viewer
		d.ReportLinks = s.noticeReportLinks(n)
	}
	if d.Subscribe = s.subscribeBox("these tables and reports", false, noticeFollows(n)...); d.Subscribe != nil {
		d.Subscribe.Selected = c.QueryParam("follow")
		for _, x := range n.Evidence.Exposures {
			d.Subscribe.Reports = append(d.Subscribe.Reports, page.SubscribeChoice{Value: "exposure:" + x.Exposure, Label: x.Title})
		}
	}
	d.Message = noticeMessages[c.QueryParam("done")]
	if c.QueryParam("done") == "announce" {
		d.Message = announcedMessage(d.Recipients)
	}
	if edit != nil {
		edit(&d)
	}
	return render(c, status, page.NoticeDetailPage(d))
}

// announcedMessage confirms an announcement by who hears of it.
func announcedMessage(to []page.NoticeRecipient) string {
	if len(to) == 0 {
		return "Announced. Nobody subscribes to these tables, so no message was sent: the notice is on its public page and in the Atom feed."
	}
	names := make([]string, len(to))
	for i, r := range to {
		names[i] = r.Name
	}
	return fmt.Sprintf("Announced: messages are on their way to %s.", strings.Join(names, ", "))
}

// noticeMessages confirm an operator's action on the page the browser is sent back to.
var noticeMessages = map[string]string{
	"withdraw": "Withdrawn.",
	"edit":     "Saved. The earlier text is kept as a revision.",
	"plan":     "Saved the planned time.",
}

// noticeFollows are what a reader of a notice may follow: its tables and the reports (exposures)
// it compares.
func noticeFollows(n notices.Notice) []page.SubscribeChoice {
	var out []page.SubscribeChoice
	for _, t := range n.Tables {
		out = append(out, followChoice("table:"+t))
	}
	for _, x := range n.Evidence.Exposures {
		out = append(out, followChoice("exposure:"+x.Exposure))
	}
	return out
}
