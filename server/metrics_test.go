package server_test

import (
	"net/http"
	"strings"
	"testing"

	"trueup/server"
)

func TestMetrics(t *testing.T) {
	ts := serve(t, server.Options{Targets: []server.Target{{Name: "warehouse", Engine: warehouse(t)}}, Version: "1.2.3-test"})
	get(t, ts.URL+"/")
	get(t, ts.URL+"/")
	get(t, ts.URL+"/no/such/page/42")
	resp, body := get(t, ts.URL+"/metrics")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`trueup_http_requests_total{method="GET",route="/",status="200"} 2`,
		`trueup_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`trueup_http_request_duration_seconds_count{method="GET",route="/",status="200"} 2`,
		`trueup_build_info{version="1.2.3-test"} 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "/no/such/page") {
		t.Error("an unmatched path became a label value")
	}
}

// Each server has its own registry: a second server starts from zero.
func TestMetricsArePerServer(t *testing.T) {
	a := serve(t, server.Options{})
	get(t, a.URL+"/healthz")
	b := serve(t, server.Options{})
	_, body := get(t, b.URL+"/metrics")
	if strings.Contains(body, `route="/healthz"`) {
		t.Error("server b counts server a's requests")
	}
}
