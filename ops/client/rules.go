package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"trueup/fault"
	"trueup/ops"
	"trueup/rules"
)

func rulePath(rule string) string { return "rules/" + PathSegment(rule) }

func (r rulesOps) Check(ctx context.Context, req ops.CheckRequest) (*rules.Run, error) {
	if req.Rules == nil {
		req.Rules = []string{}
	}
	if req.Tags == nil {
		req.Tags = []string{}
	}
	return callNew[rules.Run](ctx, r.c, http.MethodPost, "check", nil, req)
}

func (r rulesOps) Explain(context.Context, ops.CheckRequest) (*rules.Plan, error) {
	return nil, fault.New(fault.Invalid, "check: --explain works only locally, not with --server")
}

func (r rulesOps) RunNow(ctx context.Context, req ops.RuleRunRequest) (*rules.Run, error) {
	return callNew[rules.Run](ctx, r.c, http.MethodPost, rulePath(req.Rule)+"/run", nil, nil)
}

func (r rulesOps) List(ctx context.Context) ([]ops.RuleInfo, error) {
	return all[ops.RuleInfo](ctx, r.c, "rules", nil, 0)
}

func (r rulesOps) Rule(ctx context.Context, req ops.RuleRequest) (ops.RuleDetail, error) {
	q := url.Values{}
	if req.History > 0 {
		q.Set("limit", strconv.Itoa(req.History))
	}
	var d ops.RuleDetail
	err := r.c.Call(ctx, http.MethodGet, rulePath(req.Rule), q, nil, &d)
	if err == nil && req.History <= 0 {
		d.History, d.Latest = []rules.Result{}, nil
	}
	return d, err
}

func (r rulesOps) Alerts(ctx context.Context, req ops.AlertsRequest) ([]rules.Alert, error) {
	q := url.Values{}
	if req.Rule != "" {
		q.Set("rule", req.Rule)
	}
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	out := []rules.Alert{}
	err := r.c.Call(ctx, http.MethodGet, "alerts", q, nil, &out)
	return out, err
}
