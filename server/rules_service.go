package server

import (
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trueup/ops"
	"trueup/rules"
)

// RuleService is what the rule pages, the rule API and the rule metrics stand on
// (monitor.Monitor); the handlers reach it through ops.Rules.
type RuleService = ops.RuleMonitor

// localActor is who a write is attributed to while no API tokens are configured: the server
// then listens on loopback only and every visitor is the local operator.
const localActor = "local-operator"

func ruleHref(name string) string { return "/rules/" + url.PathEscape(name) }

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// ruleCollector exports each rule's last result to Prometheus when scraped.
type ruleCollector struct{ rules RuleService }

var (
	ruleStatusDesc = prometheus.NewDesc("trueup_rule_status",
		"1 for the status of the rule's last run (pass, fail or error), 0 for the others.",
		[]string{"rule", "kind", "severity", "status"}, nil)
	ruleDurationDesc = prometheus.NewDesc("trueup_rule_last_run_duration_seconds",
		"Time the rule's last run spent in its queries (fused queries count in full for each rule they serve).",
		[]string{"rule"}, nil)
	ruleViolationsDesc = prometheus.NewDesc("trueup_rule_violations",
		"Violations the rule's last run found.", []string{"rule"}, nil)
	ruleLastRunDesc = prometheus.NewDesc("trueup_rule_last_run_timestamp_seconds",
		"When the rule last ran, as a Unix time.", []string{"rule"}, nil)
)

func (c ruleCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- ruleStatusDesc
	ch <- ruleDurationDesc
	ch <- ruleViolationsDesc
	ch <- ruleLastRunDesc
}

func (c ruleCollector) Collect(ch chan<- prometheus.Metric) {
	if c.rules == nil {
		return
	}
	for _, st := range c.rules.Statuses() {
		if st.Last == nil {
			continue
		}
		r, last := st.Rule, st.Last
		for _, s := range []rules.Status{rules.StatusPass, rules.StatusFail, rules.StatusError} {
			v := 0.0
			if last.Status == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(ruleStatusDesc, prometheus.GaugeValue, v, r.Name, string(r.Kind), string(r.Severity), string(s))
		}
		ch <- prometheus.MustNewConstMetric(ruleDurationDesc, prometheus.GaugeValue, last.DurationMS/1000, r.Name)
		ch <- prometheus.MustNewConstMetric(ruleViolationsDesc, prometheus.GaugeValue, float64(last.Violations), r.Name)
		ch <- prometheus.MustNewConstMetric(ruleLastRunDesc, prometheus.GaugeValue, float64(last.At.Unix()), r.Name)
	}
}
