package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// noticeAnnounce answers POST /notices/{id}/announce: it sends the draft to its subscribers and
// takes the browser back to the notice. Announcing twice is a 409 and sends nothing.
func (s *Server) noticeAnnounce(c echo.Context) error {
	return s.noticeWrite(c, "announce", func(svc NoticeService, id int64) error {
		_, err := svc.Announce(c.Request().Context(), id, s.actor(c))
		return err
	})
}

// noticeWithdraw answers POST /notices/{id}/withdraw with the form's reason.
func (s *Server) noticeWithdraw(c echo.Context) error {
	return s.noticeWrite(c, "withdraw", func(svc NoticeService, id int64) error {
		_, err := svc.Withdraw(c.Request().Context(), id, s.actor(c), c.FormValue("reason"))
		return err
	})
}

// noticeEdit answers POST /notices/{id}/edit with the form's title and body: a new revision.
func (s *Server) noticeEdit(c echo.Context) error {
	return s.noticeWrite(c, "edit", func(svc NoticeService, id int64) error {
		_, err := svc.Edit(c.Request().Context(), id, s.actor(c), c.FormValue("title"), c.FormValue("body"))
		return err
	})
}

func (s *Server) noticeWrite(c echo.Context, action string, fn func(NoticeService, int64) error) error {
	svc, err := s.notices()
	if err != nil {
		return err
	}
	id, err := noticeID(c)
	if err != nil {
		return err
	}
	if err := fn(svc, id); err != nil {
		return noticeError(err)
	}
	return c.Redirect(http.StatusSeeOther, noticeHref(id)+"?done="+action)
}
