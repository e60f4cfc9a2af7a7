package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"trueup/notices"
)

// TestNoticeWithdrawConfirms: withdrawn is final, so the notice page's button leads to a
// confirmation that says who is told and asks for the reason, and only a confirmed withdrawal
// with a reason withdraws.
func TestNoticeWithdrawConfirms(t *testing.T) {
	svc, base := noticeServer(t)
	b := newBrowser(t, base)
	b.get("/notices/1")
	if resp, body := b.post("/notices/1/announce", nil, true); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("announce: %d %s", resp.StatusCode, body)
	}
	state := func(id int64) notices.State {
		t.Helper()
		n, err := svc.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return n.State
	}
	parse := func(body string) *goquery.Document {
		t.Helper()
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}

	t.Run("the_button_asks_first", func(t *testing.T) {
		_, doc := b.get("/notices/1")
		form := doc.Find(`[data-testid="withdraw"]`)
		if form.Length() != 1 || form.Find(`[name="confirm"]`).Length() != 0 {
			t.Fatalf("the notice page's withdraw form: %q", text(form))
		}
		resp, body := b.post("/notices/1/withdraw", nil, true)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("withdraw unconfirmed: %d %s", resp.StatusCode, body)
		}
		page := parse(body)
		if got := text(page.Find(`[data-testid="withdraw-heading"]`)); got != "Withdraw notice 1?" {
			t.Errorf("heading %q", got)
		}
		if n := page.Find(`[data-testid="withdraw-recipient"]`).Length(); n != 1 {
			t.Errorf("%d recipients shown, want the 1 the announcement went to: %q", n, text(page.Find(`[data-testid="withdraw-told"]`)))
		}
		if _, required := page.Find(`[data-testid="withdraw-reason"]`).Attr("required"); !required {
			t.Error("the reason is not a required field")
		}
		if href, _ := page.Find(`[data-testid="withdraw-cancel"]`).Attr("href"); href != "/notices/1" {
			t.Errorf("cancel goes to %q", href)
		}
		if s := state(1); s != notices.StateAnnounced {
			t.Errorf("asking withdrew it: %s", s)
		}
	})

	t.Run("no_reason_asks_again", func(t *testing.T) {
		resp, body := b.post("/notices/1/withdraw", url.Values{"confirm": {"yes"}, "reason": {"  "}}, true)
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("confirmed without a reason: %d, want 422", resp.StatusCode)
		}
		if got := text(parse(body).Find(`[data-testid="withdraw-error"]`)); !strings.Contains(got, "Say why the notice is withdrawn") {
			t.Errorf("error %q", got)
		}
		if s := state(1); s != notices.StateAnnounced {
			t.Errorf("withdrawn without a reason: %s", s)
		}
	})

	t.Run("confirmed_with_a_reason_withdraws", func(t *testing.T) {
		resp, _ := b.post("/notices/1/withdraw", url.Values{"confirm": {"yes"}, "reason": {"the fix was wrong"}}, true)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/notices/1?done=withdraw" {
			t.Fatalf("confirmed: %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		n, err := svc.Get(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if last := n.Transitions[len(n.Transitions)-1]; n.State != notices.StateWithdrawn || last.Reason != "the fix was wrong" {
			t.Errorf("after confirming: %s, reason %q", n.State, last.Reason)
		}
		if resp, _ := b.post("/notices/1/withdraw", nil, true); resp.StatusCode != http.StatusConflict {
			t.Errorf("asking to withdraw a withdrawn notice: %d, want 409", resp.StatusCode)
		}
	})

	t.Run("a_draft_tells_nobody", func(t *testing.T) {
		_, body := b.post("/notices/2/withdraw", nil, true)
		if got := text(parse(body).Find(`[data-testid="withdraw-told"]`)); got != "The notice was never announced, so no message is sent." {
			t.Errorf("who is told of a draft's withdrawal: %q", got)
		}
	})
}
