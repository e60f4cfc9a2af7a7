package server

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"trueup/fault"
	"trueup/notices"
	"trueup/ops"
	"trueup/server/page"
)

// noticeWithdraw answers POST /notices/{id}/withdraw. Withdrawn is final, so without confirm=yes
// and a reason it shows the confirmation (who will be told, the reason to write) instead, as a
// swap does. The reason is required here, on the page, though the API and the CLI keep it
// optional (`trueup notice withdraw ID [--reason TEXT]`): a reader of a withdrawn notice on the
// site should learn why.
func (s *Server) noticeWithdraw(c echo.Context) error {
	n, id, err := s.noticesFor(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	req := ops.NoticeRequest{ID: id, Actor: s.actor(c)}
	reason := strings.TrimSpace(c.FormValue("reason"))
	if c.FormValue("confirm") != "yes" || reason == "" {
		j, err := n.Show(ctx, req)
		if err != nil {
			return err
		}
		if j.State != notices.StateDraft && j.State != notices.StateAnnounced {
			return fault.New(fault.Conflict, "Notice %d is %s: it cannot be withdrawn.", id, j.State)
		}
		d := page.NoticeWithdraw{Chrome: s.chrome("Withdraw: "+j.Title, "Notices"), ID: id, Title: j.Title,
			Announced: j.State == notices.StateAnnounced, Href: noticeHref(id)}
		for _, r := range j.Recipients {
			d.Told = append(d.Told, maskRecipient(r.Recipient))
		}
		status := http.StatusOK
		if c.FormValue("confirm") == "yes" {
			status, d.Error = http.StatusUnprocessableEntity, "Say why the notice is withdrawn: its readers see the reason."
		}
		return render(c, status, page.NoticeWithdrawPage(d))
	}
	if _, err := n.Withdraw(ctx, ops.NoticeReasonRequest{NoticeRequest: req, Reason: reason}); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, noticeHref(id)+"?done=withdraw")
}
