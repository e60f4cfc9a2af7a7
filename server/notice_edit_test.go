package server_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestEditingAMissingNoticeIs404: the edit of a notice that does not exist is a 404 through the
// API and the page's form, whatever the body says (an empty title was a 400 about the title).
func TestEditingAMissingNoticeIs404(t *testing.T) {
	_, base := noticeServer(t)
	for _, body := range []string{`{"title": "T", "body": "B"}`, `{}`, `{"planned_swap": "2026-08-04T09:00:00Z"}`, ``} {
		resp, got := send(t, base+"/api/v1/notices/999/edit", body, "Content-Type", "application/json")
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(got, "There is no such notice.") {
			t.Errorf("API %s: %d %s, want 404", body, resp.StatusCode, got)
		}
	}
	for _, form := range []url.Values{{"title": {"T"}, "body": {"B"}}, {}, {"planned_swap": {"2026-08-04 09:00"}}} {
		resp := postForm(t, base+"/notices/999/edit", form)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("page %v: %d %.300s, want 404", form, resp.StatusCode, b)
		}
	}
}
