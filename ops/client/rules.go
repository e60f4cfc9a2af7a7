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

// Rules is ops.Rules through the server.
func (c *Client) Rules() ops.Rules { return rulesOps{c} }

type rulesOps struct{ c *Client }

func rulePath(rule string) string { return "rules/" + PathSegment(rule) }

// pageLimit is the most a list route answers at once.
const pageLimit = 1000

func (r rulesOps) Check(ctx context.Context, req ops.CheckRequest) (*rules.Run, error) {
	if req.Rules == nil {
		req.Rules = []string{}
	}
	if req.Tags == nil {
		req.Tags = []string{}
	}
	var run rules.Run
	if err := r.c.Call(ctx, http.MethodPost, "check", nil, req, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

func (r rulesOps) Explain(context.Context, ops.CheckRequest) (*rules.Plan, error) {
	return nil, fault.New(fault.Invalid, "check: --explain works only locally, not with --server")
}

func (r rulesOps) RunNow(ctx context.Context, req ops.RuleRunRequest) (*rules.Run, error) {
	var run rules.Run
	if err := r.c.Call(ctx, http.MethodPost, rulePath(req.Rule)+"/run", nil, nil, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

func (r rulesOps) List(ctx context.Context) ([]ops.RuleInfo, error) {
	out := []ops.RuleInfo{}
	for {
		q := url.Values{"limit": {strconv.Itoa(pageLimit)}, "offset": {strconv.Itoa(len(out))}}
		var page []ops.RuleInfo
		if err := r.c.Call(ctx, http.MethodGet, "rules", q, nil, &page); err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < pageLimit {
			return out, nil
		}
	}
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
