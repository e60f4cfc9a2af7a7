package server

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"trueup/server/page"
)

// noticeAckShow answers GET /notices/{id}/ack/{token}, the link in a recipient's message. It
// only shows a button: mail scanners open links, and an acknowledgement must be a person's.
func (s *Server) noticeAckShow(c echo.Context) error {
	return s.noticeAckPage(c, false)
}

// noticeAck answers POST /notices/{id}/ack/{token}: it records the acknowledgement on the notice.
func (s *Server) noticeAck(c echo.Context) error {
	return s.noticeAckPage(c, true)
}

func (s *Server) noticeAckPage(c echo.Context, record bool) error {
	svc, id, err := s.noticeReadsFor(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	token := c.Param("token")
	n, who, err := svc.Link(ctx, id, token)
	if err != nil {
		return err
	}
	if record {
		if who, err = svc.Acknowledge(ctx, id, token); err != nil {
			return err
		}
	}
	d := page.NoticeAck{Chrome: s.chrome("Acknowledge: "+n.Title, "Notices"), Title: n.Title, Href: noticeHref(id),
		Recipient: maskRecipient(who.ID), AckedAt: noticeTime(who.AckedAt),
		PostURL: noticeHref(id) + "/ack/" + url.PathEscape(token)}
	return render(c, http.StatusOK, page.NoticeAckPage(d))
}
