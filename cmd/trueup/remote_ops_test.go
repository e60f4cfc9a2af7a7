package main

import (
	"testing"

	"trueup/fault"
	"trueup/ops"
	"trueup/ops/client"
)

// TestClientRulesAndDiffs: the reads of ops/client's Rules and Diffs answer from a served demo
// what its pages show, and an unknown rule or diff is not found, as locally.
func TestClientRulesAndDiffs(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a demo project")
	}
	srv := serveDemo(t, demoDir(t))
	if code, _, errs := cli(t, "--server", srv.url, "check", "--rule", "matches_raw"); code != exitFailed {
		t.Fatalf("check: exit %d: %s", code, errs)
	}
	if code, _, errs := cli(t, "--server", srv.url, "diff", "--old", "orders__v1", "--new", "orders__v1", "--key", "order_id"); code != exitOK {
		t.Fatalf("diff: exit %d: %s", code, errs)
	}
	c, err := client.New(srv.url, "", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	r := c.Rules()
	list, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, info := range list {
		status[info.Rule] = info.Status
	}
	if len(list) < 2 || status["matches_raw"] != "fail" {
		t.Errorf("rules: %v", status)
	}
	d, err := r.Rule(ctx, ops.RuleRequest{Rule: "matches_raw", History: 5})
	if err != nil {
		t.Fatal(err)
	}
	if d.Latest == nil || len(d.History) < 2 || d.Latest.RunID != d.LastRunID || d.SQL == "" || len(d.Alerts) == 0 {
		t.Errorf("matches_raw: latest %v, %d results, sql %q, %d alerts", d.Latest != nil, len(d.History), d.SQL, len(d.Alerts))
	}
	alerts, err := r.Alerts(ctx, ops.AlertsRequest{Rule: "matches_raw", Limit: 10})
	if err != nil || len(alerts) == 0 || alerts[0].Rule != "matches_raw" {
		t.Errorf("alerts: %v %v", alerts, err)
	}
	if _, err := r.Rule(ctx, ops.RuleRequest{Rule: "nope"}); fault.Of(err) != fault.NotFound {
		t.Errorf("unknown rule: %v", err)
	}
	if _, err := r.Explain(ctx, ops.CheckRequest{}); fault.Of(err) != fault.Invalid {
		t.Errorf("explain through a server: %v", err)
	}
	saved, err := c.Diffs().List(ctx, 10)
	if err != nil || len(saved) != 1 {
		t.Fatalf("diffs: %v %v", saved, err)
	}
	res, err := c.Diffs().Get(ctx, saved[0].ID)
	if err != nil || res.ID != saved[0].ID || !res.ExpectationsMet {
		t.Errorf("diff %d: %+v %v", saved[0].ID, res, err)
	}
	if _, err := c.Diffs().Get(ctx, 99); fault.Of(err) != fault.NotFound {
		t.Errorf("unknown diff: %v", err)
	}
}
