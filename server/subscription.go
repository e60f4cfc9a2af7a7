package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"trueup/notices"
	"trueup/server/page"
)

// Subscribe requests are limited per client address: subscribeBurst in any subscribeWindow.
// The notices service limits them per address too: one confirmation an hour, whoever asks.
const (
	subscribeBurst  = 10
	subscribeWindow = 10 * time.Minute
)

// SubscriptionService is what the subscription pages ask of the notices: people subscribing
// themselves from the public pages, confirming, changing and leaving by the links in their
// messages, and the team listing and removing them. notices.Service is one; the server takes
// it from Options.Notices when that service offers it, and answers 404 otherwise.
type SubscriptionService interface {
	TakesSubscriptions() bool
	Subscribe(ctx context.Context, req notices.SubscribeRequest) (bool, error)
	Confirm(ctx context.Context, token string) (notices.SelfSubscription, error)
	Manage(ctx context.Context, token string) (notices.Subscriber, error)
	Follow(ctx context.Context, token, follow string, alerts bool) (notices.Subscriber, error)
	Unsubscribe(ctx context.Context, token string, id int64) ([]notices.SelfSubscription, error)
	RemoveSubscription(ctx context.Context, id int64, actor string) (notices.SelfSubscription, error)
	SelfSubscriptions(ctx context.Context) ([]notices.SelfSubscription, error)
	ManageToken(ctx context.Context, email string) (string, error)
}

func (s *Server) subscriptionRoutes(e *echo.Echo, get func(string, echo.HandlerFunc)) {
	e.POST("/subscriptions", s.subscriptionCreate)
	e.POST("/api/v1/subscriptions", s.apiSubscriptionCreate)
	get("/api/v1/subscriptions", s.apiSubscriptionList)
	get("/subscriptions/confirm/:token", s.subscriptionConfirm)
	get("/subscriptions/manage/:token", s.subscriptionManage)
	e.POST("/subscriptions/manage/:token", s.subscriptionFollow)
	e.POST("/subscriptions/manage/:token/end", s.subscriptionEnd)
	get("/subscriptions/unsubscribe/:token", s.subscriptionUnsubscribeShow)
	e.POST("/subscriptions/unsubscribe/:token", s.subscriptionUnsubscribe)
	e.POST("/subscriptions/:id/remove", s.subscriptionRemove)
	e.POST("/api/v1/subscriptions/:id/remove", noBody(s.apiSubscriptionRemove))
	get("/tables/:table/notices.atom", with(s.noticeReads, s.tableFeed))
}

// subscriptions returns the subscription service, or a 404 when the server takes none.
func (s *Server) subscriptions() (SubscriptionService, error) {
	if svc, ok := s.opt.Notices.(SubscriptionService); ok && svc.TakesSubscriptions() {
		return svc, nil
	}
	return nil, echo.NewHTTPError(http.StatusNotFound, "This server takes no subscriptions: it has no notify.email and notify.public_url to send confirmations with.")
}

// subscribeBox is the subscribe form offering follows, then everything (first when
// allFirst); nil when the server takes no subscriptions.
func (s *Server) subscribeBox(hint string, allFirst bool, follows ...page.SubscribeChoice) *page.SubscribeBox {
	if _, err := s.subscriptions(); err != nil {
		return nil
	}
	all := page.SubscribeChoice{Value: notices.FollowAll, Label: "every change notice"}
	if allFirst {
		return &page.SubscribeBox{Hint: hint, Follows: append([]page.SubscribeChoice{all}, follows...)}
	}
	return &page.SubscribeBox{Hint: hint, Follows: append(follows, all)}
}

func followChoice(follow string) page.SubscribeChoice {
	return page.SubscribeChoice{Value: follow, Label: notices.FollowText(follow)}
}

// subscribeAnswer is the one answer to a well-formed request: the same whether the address was
// new, subscribed already, or sent a confirmation in the last hour (no enumeration).
const subscribeAnswer = "If this address takes mail, a message with a confirmation link is on its way to it. Nothing else is sent until the link is opened; a link sent in the last hour stays the one to use."

// subscribe checks the per-client limit and hands the request on.
func (s *Server) subscribe(c echo.Context, req notices.SubscribeRequest) error {
	svc, err := s.subscriptions()
	if err != nil {
		return err
	}
	client := c.RealIP()
	if limited, wait := s.subscribes.blocked(client); limited {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		return echo.NewHTTPError(http.StatusTooManyRequests,
			fmt.Sprintf("Too many subscribe requests from your address: try again in %d minutes.", int(wait.Minutes())+1))
	}
	s.subscribes.fail(client)
	_, err = svc.Subscribe(c.Request().Context(), req)
	return err
}

// subscriptionCreate answers POST /subscriptions, the form on the public pages.
func (s *Server) subscriptionCreate(c echo.Context) error {
	req := notices.SubscribeRequest{Email: c.FormValue("email"), Follow: c.FormValue("follow"), Alerts: c.FormValue("alerts") == "on"}
	if err := s.subscribe(c, req); err != nil {
		return err
	}
	return render(c, http.StatusOK, page.SubscriptionMessagePage(page.SubscriptionMessage{
		Chrome: s.chrome("Check your inbox", "Notices"), Heading: "Check your inbox", Text: subscribeAnswer}))
}

// apiSubscriptionCreate answers POST /api/v1/subscriptions: {"email", "follow", "alerts"}.
func (s *Server) apiSubscriptionCreate(c echo.Context) error {
	var req notices.SubscribeRequest
	if err := bindBody(c, &req, `a subscribe request {"email": "name@example.com", "follow": "table:orders"}`); err != nil {
		return err
	}
	if err := s.subscribe(c, req); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]string{"state": "pending", "message": subscribeAnswer})
}

func (s *Server) manageHref(ctx context.Context, svc SubscriptionService, email string) string {
	tok, err := svc.ManageToken(ctx, email)
	if err != nil || tok == "" {
		return ""
	}
	return "/subscriptions/manage/" + url.PathEscape(tok)
}

// subscriptionConfirm answers GET /subscriptions/confirm/{token}, the link of the confirmation
// message: the subscription exists from now on.
func (s *Server) subscriptionConfirm(c echo.Context) error {
	svc, err := s.subscriptions()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	sub, err := svc.Confirm(ctx, c.Param("token"))
	if err != nil {
		return err
	}
	what := notices.FollowText(sub.Follow)
	if sub.Alerts {
		what += " and its rule alerts"
	}
	return render(c, http.StatusOK, page.SubscriptionMessagePage(page.SubscriptionMessage{
		Chrome: s.chrome("Subscribed", "Notices"), Heading: "Subscribed",
		Text:       sub.Email + " will be told of changes to " + what + ". Every message has a link to stop.",
		ManageHref: s.manageHref(ctx, svc, sub.Email)}))
}

// subscriptionManage answers GET /subscriptions/manage/{token}: what the address follows.
func (s *Server) subscriptionManage(c echo.Context) error {
	svc, err := s.subscriptions()
	if err != nil {
		return err
	}
	who, err := svc.Manage(c.Request().Context(), c.Param("token"))
	if err != nil {
		return err
	}
	return s.managePage(c, who, "")
}

func (s *Server) managePage(c echo.Context, who notices.Subscriber, flash string) error {
	d := page.SubscriptionManage{Chrome: s.chrome("Your subscriptions", "Notices"), Email: who.Email, Flash: flash,
		Action: "/subscriptions/manage/" + url.PathEscape(c.Param("token"))}
	for _, sub := range who.Subscriptions {
		d.Follows = append(d.Follows, page.SubscriptionFollow{ID: sub.ID, What: notices.FollowText(sub.Follow), Alerts: sub.Alerts, Since: noticeTime(sub.ConfirmedAt)})
	}
	return render(c, http.StatusOK, page.SubscriptionManagePage(d))
}

// subscriptionFollow answers POST /subscriptions/manage/{token}: follow one more thing.
func (s *Server) subscriptionFollow(c echo.Context) error {
	svc, err := s.subscriptions()
	if err != nil {
		return err
	}
	who, err := svc.Follow(c.Request().Context(), c.Param("token"), c.FormValue("follow"), c.FormValue("alerts") == "on")
	if err != nil {
		return err
	}
	return s.managePage(c, who, "Done: you follow "+notices.FollowText(who.Subscriptions[len(who.Subscriptions)-1].Follow)+" too.")
}

// subscriptionEnd answers POST /subscriptions/manage/{token}/end: stop one (id) or all.
func (s *Server) subscriptionEnd(c echo.Context) error {
	svc, err := s.subscriptions()
	if err != nil {
		return err
	}
	var id int64
	if v := c.FormValue("id"); v != "" {
		if id, err = strconv.ParseInt(v, 10, 64); err != nil || id <= 0 {
			return echo.NewHTTPError(http.StatusBadRequest, "There is no subscription "+strconv.Quote(v)+".")
		}
	}
	ctx := c.Request().Context()
	ended, err := svc.Unsubscribe(ctx, c.Param("token"), id)
	if err != nil {
		return err
	}
	who, err := svc.Manage(ctx, c.Param("token"))
	if err != nil {
		return err
	}
	return s.managePage(c, who, endedText(ended))
}

func endedText(ended []notices.SelfSubscription) string {
	if len(ended) == 1 {
		return "Stopped: no more messages about " + notices.FollowText(ended[0].Follow) + "."
	}
	return fmt.Sprintf("Stopped all %d subscriptions: trueup sends this address nothing more.", len(ended))
}

// subscriptionUnsubscribeShow answers GET /subscriptions/unsubscribe/{token}, the leave link
// opened in a browser: a button, so that a link checker opening it ends nothing.
func (s *Server) subscriptionUnsubscribeShow(c echo.Context) error {
	svc, err := s.subscriptions()
	if err != nil {
		return err
	}
	if _, err := svc.Manage(c.Request().Context(), c.Param("token")); err != nil {
		return err
	}
	return render(c, http.StatusOK, page.UnsubscribePage(page.Unsubscribe{Chrome: s.chrome("Stop messages", "Notices"),
		Action: "/subscriptions/unsubscribe/" + url.PathEscape(c.Param("token"))}))
}

// subscriptionUnsubscribe answers POST /subscriptions/unsubscribe/{token}: the RFC 8058
// one-click unsubscribe a mail program posts (List-Unsubscribe=One-Click, no cookie, no
// login), and the button of the page above. It ends every subscription of the address.
func (s *Server) subscriptionUnsubscribe(c echo.Context) error {
	svc, err := s.subscriptions()
	if err != nil {
		return err
	}
	ended, err := svc.Unsubscribe(c.Request().Context(), c.Param("token"), 0)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, page.SubscriptionMessagePage(page.SubscriptionMessage{
		Chrome: s.chrome("Unsubscribed", "Notices"), Heading: "Unsubscribed", Text: endedText(ended) + " You can subscribe again from any notice."}))
}

// subscriptionRemove answers POST /subscriptions/{id}/remove: an approver ends one.
func (s *Server) subscriptionRemove(c echo.Context) error {
	if err := s.removeSubscription(c); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/notices?done=removed#subs-heading")
}

func (s *Server) apiSubscriptionRemove(c echo.Context) error {
	if err := s.removeSubscription(c); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"state": notices.SubscriptionEnded})
}

func (s *Server) removeSubscription(c echo.Context) error {
	svc, err := s.subscriptions()
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return echo.NewHTTPError(http.StatusNotFound, "There is no subscription "+strconv.Quote(c.Param("id"))+".")
	}
	_, err = svc.RemoveSubscription(c.Request().Context(), id, requestIdentity(c).Name)
	return err
}

// selfSubscriptionRows lists the self-service subscriptions for the team: the address in full
// for operators, masked for viewers, nothing for the public.
func (s *Server) selfSubscriptionRows(c echo.Context) ([]page.SelfSubscriptionRow, error) {
	svc, err := s.subscriptions()
	if err != nil || requestIdentity(c).Role < roleViewer {
		return nil, nil
	}
	subs, err := svc.SelfSubscriptions(c.Request().Context())
	if err != nil {
		return nil, err
	}
	var out []page.SelfSubscriptionRow
	for _, sub := range subs {
		to := sub.Email
		if requestIdentity(c).Role < roleOperator {
			to = maskRecipient("email:" + sub.Email)
		}
		out = append(out, page.SelfSubscriptionRow{ID: sub.ID, What: notices.FollowText(sub.Follow), To: to, State: sub.State,
			Alerts: sub.Alerts, Since: noticeTime(sub.CreatedAt)})
	}
	return out, nil
}

// apiSubscriptionList answers GET /api/v1/subscriptions: the self-service subscriptions,
// addresses masked for viewers.
func (s *Server) apiSubscriptionList(c echo.Context) error {
	svc, err := s.subscriptions()
	if err != nil {
		return err
	}
	subs, err := svc.SelfSubscriptions(c.Request().Context())
	if err != nil {
		return err
	}
	if subs == nil {
		subs = []notices.SelfSubscription{}
	}
	if requestIdentity(c).Role < roleOperator {
		for i := range subs {
			subs[i].Email = maskRecipient("email:" + subs[i].Email)
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"subscriptions": subs})
}

// tableFeed answers GET /tables/{table}/notices.atom: the Atom feed of one table's notices.
func (s *Server) tableFeed(c echo.Context, svc NoticeService) error {
	table := c.Param("table")
	return feed(c, svc, table, tableFeedURL(table), s.opt.Now())
}

func tableFeedURL(table string) string { return "/tables/" + url.PathEscape(table) + "/notices.atom" }

// selfTold are the addresses subscribed from the pages to any of tables or exposures, for the
// swap confirmation's "who is told" (nothing when the server takes no subscriptions).
func (s *Server) selfTold(ctx context.Context, tables, exposures []string) []string {
	svc, err := s.subscriptions()
	if err != nil {
		return nil
	}
	subs, err := svc.SelfSubscriptions(ctx)
	if err != nil {
		// The confirmation still shows: the list informs the approver, it decides nothing.
		s.log.Warn("list subscriptions for the swap confirmation", "err", err)
		return nil
	}
	var out []string
	for _, sub := range subs {
		if sub.State == notices.SubscriptionActive && sub.Follows(tables, exposures) {
			out = append(out, "email:"+sub.Email)
		}
	}
	return out
}
