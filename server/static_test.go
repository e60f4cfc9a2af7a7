package server_test

import (
	"net/http"
	"strings"
	"testing"

	"trueup/server"
)

func TestStatic(t *testing.T) {
	ts := serve(t, server.Options{})
	for _, c := range []struct {
		name, path, wantType, wantBody string
	}{
		{"pico", "/static/pico.min.css", "text/css", "Pico CSS"},
		{"app_css", "/static/app.css", "text/css", ".notice-banner"},
		{"htmx", "/static/htmx.min.js", "text/javascript", "htmx"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := get(t, ts.URL+c.path)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, c.wantType) {
				t.Errorf("Content-Type %q, want %s", ct, c.wantType)
			}
			if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=31536000") {
				t.Errorf("Cache-Control %q, want a year", cc)
			}
			if !strings.Contains(body, c.wantBody) {
				t.Errorf("body lacks %q", c.wantBody)
			}
			etag := resp.Header.Get("ETag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			again, _ := get(t, ts.URL+c.path, "If-None-Match", etag)
			if again.StatusCode != http.StatusNotModified {
				t.Errorf("conditional GET: %d, want 304", again.StatusCode)
			}
		})
	}
	for _, p := range []string{"/static/", "/static/README", "/static/nope.css", "/static/../server.go"} {
		t.Run("not_found_"+strings.NewReplacer("/", "_", ".", "_").Replace(p), func(t *testing.T) {
			if resp, _ := get(t, ts.URL+p); resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
			}
		})
	}
}

// TestFavicon: every page names its icon, and /favicon.ico (which a browser asks for on its
// own, on a feed or a JSON answer) is the same icon, not a 404, to anyone, logged in or not.
func TestFavicon(t *testing.T) {
	ts := serve(t, server.Options{Auth: testAuth(false), Audit: testLedger(t)})
	doc := getPage(t, ts.URL+"/login", http.StatusOK)
	href, ok := doc.Find(`head link[rel=icon]`).Attr("href")
	if !ok {
		t.Fatal("the page links no icon")
	}
	for _, p := range []string{href, "/favicon.ico"} {
		resp, body := get(t, ts.URL+p)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d, want 200", p, resp.StatusCode)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "image/svg+xml" {
			t.Errorf("GET %s: Content-Type %q, want image/svg+xml", p, ct)
		}
		if !strings.HasPrefix(body, "<svg") {
			t.Errorf("GET %s: not an SVG: %.40q", p, body)
		}
	}
}
