package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"trueup/notices"
	"trueup/ops"
	"trueup/server"
)

// TestDraftsNeedAViewer: with login enabled, a draft notice is for the team: the public index
// leaves it out and its page is a 404 like a notice that does not exist (it was shown to
// anyone); a viewer sees it. Without tokens (the demo) everyone is the local operator and
// sees it.
func TestDraftsNeedAViewer(t *testing.T) {
	svc := notices.New(testLedger(t), notices.Options{})
	for _, b := range []string{"draft_one", "announced_one"} {
		if _, err := svc.Draft(t.Context(), notices.Evidence{Backfill: b, RunID: 1, Reason: "bug", Tables: []string{b + "_table"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Announce(t.Context(), 2, "ann"); err != nil {
		t.Fatal(err)
	}
	withLogin := serve(t, server.Options{Auth: testAuth(false), Notices: svc, NoticeOps: ops.NewNotices(svc)}).URL
	open := serve(t, server.Options{Notices: svc, NoticeOps: ops.NewNotices(svc)}).URL
	vera := []string{"Authorization", "Bearer " + testTokens["vera"][0]}

	page := func(t *testing.T, url string, header ...string) (int, *goquery.Document) {
		t.Helper()
		resp, body := get(t, url, header...)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, doc
	}
	ids := func(doc *goquery.Document) string {
		var out []string
		doc.Find(`[data-testid="notice-row"]`).Each(func(_ int, r *goquery.Selection) { out = append(out, r.AttrOr("data-id", "")) })
		return strings.Join(out, " ")
	}

	for _, tc := range []struct {
		name        string
		base        string
		header      []string
		list        string // notice ids on /notices
		drafts      string // on /notices?state=draft
		draftStatus int
		tables      bool // the table filter offers the draft's table
	}{
		{"anonymous_with_login", withLogin, nil, "2", "", http.StatusNotFound, false},
		{"viewer_with_login", withLogin, vera, "2 1", "1", http.StatusOK, true},
		{"anyone_without_tokens", open, nil, "2 1", "1", http.StatusOK, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, doc := page(t, tc.base+"/notices", tc.header...)
			if status != http.StatusOK || ids(doc) != tc.list {
				t.Errorf("/notices: %d, notices %q, want %q", status, ids(doc), tc.list)
			}
			if got := doc.Find(`select[name="table"] option[value="draft_one_table"]`).Length() == 1; got != tc.tables {
				t.Errorf("the table filter offers the draft's table: %v", got)
			}
			if _, doc = page(t, tc.base+"/notices?state=draft", tc.header...); ids(doc) != tc.drafts {
				t.Errorf("/notices?state=draft: %q, want %q", ids(doc), tc.drafts)
			}
			status, doc = page(t, tc.base+"/notices/1", tc.header...)
			if status != tc.draftStatus {
				t.Errorf("/notices/1 (draft): %d, want %d", status, tc.draftStatus)
			}
			if status == http.StatusNotFound {
				_, missing := page(t, tc.base+"/notices/99", tc.header...)
				msg := `[data-testid="error-message"]`
				if a, b := text(doc.Find(msg)), text(missing.Find(msg)); a == "" || a != b {
					t.Errorf("the draft's 404 differs from a missing notice's:\n%s\n%s", a, b)
				}
			}
			if status, _ := page(t, tc.base+"/notices/2", tc.header...); status != http.StatusOK {
				t.Errorf("/notices/2 (announced): %d", status)
			}
		})
	}
}
