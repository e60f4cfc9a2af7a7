package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are one Server's Prometheus metrics, in a registry of its own so that several servers
// (tests) never share counters.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(version string) *metrics {
	labels := []string{"method", "route", "status"}
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trueup_http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status.",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trueup_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by method, route pattern and status.",
			Buckets: prometheus.DefBuckets,
		}, labels),
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "trueup_build_info",
		Help:        "Always 1; the version label says which trueup is running.",
		ConstLabels: prometheus.Labels{"version": version},
	})
	build.Set(1)
	m.reg.MustRegister(m.requests, m.duration, build,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// countRequests records each request under its route pattern, not its path, so that
// /tables/orders and /tables/customers share a series. Requests that matched no route are
// counted as route "unmatched" with method "OTHER" for unknown methods, so that clients cannot
// create series at will.
func (s *Server) countRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		method := c.Request().Method
		route := c.Path()
		if !s.routes[method+" "+route] {
			route = "unmatched"
			switch method {
			case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
				http.MethodDelete, http.MethodOptions:
			default:
				method = "OTHER"
			}
		}
		status := strconv.Itoa(c.Response().Status)
		s.metrics.requests.WithLabelValues(method, route, status).Inc()
		s.metrics.duration.WithLabelValues(method, route, status).Observe(time.Since(start).Seconds())
		return err
	}
}
