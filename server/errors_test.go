package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/labstack/echo/v4"
)

// TestErrorPages drives the error middleware through routes that fail on purpose.
func TestErrorPages(t *testing.T) {
	var logs bytes.Buffer
	s := New(Options{Logger: slog.New(slog.NewTextHandler(io.MultiWriter(&logs, t.Output()), nil))})
	boom := func(echo.Context) error { return errors.New("disk on fire at /var/secret") }
	panics := func(echo.Context) error { panic("nil map") }
	s.echo.GET("/boom", boom)
	s.echo.GET("/api/v1/boom", boom)
	s.echo.GET("/panics", panics)
	s.echo.GET("/teapot", func(echo.Context) error { return echo.NewHTTPError(http.StatusTeapot, "short and stout") })
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()

	for _, c := range []struct {
		name       string
		path       string
		wantStatus int
		wantJSON   bool
		wantText   string // in the message shown
		wantLogged bool   // one "request failed" line
	}{
		{"server_error_page", "/boom", 500, false, "It has been logged", true},
		{"server_error_json", "/api/v1/boom", 500, true, "It has been logged", true},
		{"panic", "/panics", 500, false, "It has been logged", true},
		{"not_found_page", "/no/such/page", 404, false, "There is nothing at /no/such/page.", false},
		{"not_found_json", "/api/v1/nope", 404, true, "There is nothing at /api/v1/nope.", false},
		{"client_error_keeps_its_message", "/teapot", 418, false, "short and stout", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs.Reset()
			resp, err := http.Get(ts.URL + c.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != c.wantStatus {
				t.Errorf("status %d, want %d", resp.StatusCode, c.wantStatus)
			}
			id := resp.Header.Get(echo.HeaderXRequestID)
			var msg string
			if c.wantJSON {
				var body apiError
				if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
					t.Fatalf("decode JSON: %v", err)
				}
				msg = body.Error
				if body.RequestID != id {
					t.Errorf("request_id %q, header %q", body.RequestID, id)
				}
			} else {
				doc, err := goquery.NewDocumentFromReader(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				msg = doc.Find(`[data-testid="error-message"]`).Text()
				if got := doc.Find(`[data-testid="request-id"]`).Text(); got != id {
					t.Errorf("page request id %q, header %q", got, id)
				}
				if doc.Find(`[data-testid="nav"]`).Length() != 1 {
					t.Error("error page lacks the layout")
				}
			}
			if !strings.Contains(msg, c.wantText) {
				t.Errorf("message %q, want it to contain %q", msg, c.wantText)
			}
			if strings.Contains(msg, "secret") {
				t.Errorf("message leaks the internal error: %q", msg)
			}
			failed := strings.Count(logs.String(), `msg="request failed"`)
			if want := map[bool]int{true: 1, false: 0}[c.wantLogged]; failed != want {
				t.Errorf("%d request-failed log lines, want %d:\n%s", failed, want, logs.String())
			}
			if c.wantLogged && !strings.Contains(logs.String(), "request_id="+id) {
				t.Errorf("log lacks request_id=%s", id)
			}
			line := fmt.Sprintf("msg=request method=GET path=%s status=%d ", c.path, c.wantStatus)
			if !strings.Contains(logs.String(), line) {
				t.Errorf("no request log line %q in:\n%s", line, logs.String())
			}
		})
	}
}
