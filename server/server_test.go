package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"trueup/server"
	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

// warehouse is a DuckDB target with one logical table: orders over orders__v1 with 1,234 rows.
func warehouse(t *testing.T) tsql.Engine {
	t.Helper()
	e := sqltest.DuckDB(t)
	ctx := t.Context()
	for _, q := range []string{
		"CREATE TABLE orders__v1 (id BIGINT, amount DECIMAL(18,2))",
		"INSERT INTO orders__v1 SELECT range, range * 1.5 FROM range(1234)",
		"CREATE TABLE scratch (x INTEGER)", // not a logical table
	} {
		if err := e.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := e.RepointViews(ctx, []tsql.ViewPoint{{View: "orders", Table: "orders__v1"}}); err != nil {
		t.Fatalf("repoint: %v", err)
	}
	return e
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// serve starts the server's handler on an httptest server.
func serve(t *testing.T, opt server.Options) *httptest.Server {
	t.Helper()
	if opt.Logger == nil {
		opt.Logger = testLogger(t)
	}
	ts := httptest.NewServer(server.New(opt).Handler())
	t.Cleanup(ts.Close)
	return ts
}

// get fetches url and returns the response with its body read.
func get(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp, string(body)
}

// getPage fetches an HTML page and parses it.
func getPage(t *testing.T, url string, wantStatus int) *goquery.Document {
	t.Helper()
	resp, body := get(t, url)
	if resp.StatusCode != wantStatus {
		t.Fatalf("GET %s: status %d, want %d; body:\n%s", url, resp.StatusCode, wantStatus, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("GET %s: Content-Type %q, want text/html", url, ct)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		t.Fatalf("GET %s: parse: %v", url, err)
	}
	return doc
}

func text(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

func TestRun(t *testing.T) {
	t.Run("serves_then_shuts_down_when_cancelled", func(t *testing.T) {
		s := server.New(server.Options{
			Addr:    "127.0.0.1:0",
			Logger:  testLogger(t),
			Targets: []server.Target{{Name: "warehouse", Engine: warehouse(t)}},
		})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		select {
		case <-s.Listening():
		case err := <-done:
			t.Fatalf("Run returned before listening: %v", err)
		}
		addr := s.Addr()
		if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
			t.Fatalf("Addr() = %q, want 127.0.0.1 with the bound port", addr)
		}
		resp, body := get(t, "http://"+addr+"/healthz")
		if resp.StatusCode != http.StatusOK || body != "ok" {
			t.Fatalf("GET /healthz = %d %q, want 200 ok", resp.StatusCode, body)
		}

		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run after cancel: %v, want nil", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("Run did not return after its context was cancelled")
		}
		client := http.Client{Timeout: 2 * time.Second}
		if resp, err := client.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			t.Fatalf("GET after shutdown answered %d, want connection refused", resp.StatusCode)
		}
	})

	t.Run("reports_an_address_in_use", func(t *testing.T) {
		ts := httptest.NewServer(http.NotFoundHandler())
		defer ts.Close()
		s := server.New(server.Options{Addr: ts.Listener.Addr().String(), Logger: testLogger(t)})
		err := s.Run(t.Context())
		if err == nil || !strings.Contains(err.Error(), "listen on "+ts.Listener.Addr().String()) {
			t.Fatalf("Run on a busy address: %v, want a listen error naming it", err)
		}
	})
}
