package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"trueup/ops"
	"trueup/views"
)

// Tables is ops.Tables through the server.
func (c *Client) Tables() ops.Tables { return tables{c} }

type tables struct{ c *Client }

func tablePath(table string) string { return "tables/" + PathSegment(table) }

func targetQuery(target string) url.Values {
	q := url.Values{}
	if target != "" {
		q.Set("target", target)
	}
	return q
}

func (t tables) Versions(ctx context.Context, req ops.VersionsRequest) (views.ListingJSON, error) {
	q := targetQuery(req.Target)
	if req.History > 0 {
		q.Set("limit", strconv.Itoa(req.History))
	}
	var l views.ListingJSON
	err := t.c.Call(ctx, http.MethodGet, tablePath(req.Table), q, nil, &l)
	return l, err
}

func (t tables) publish(ctx context.Context, kind string, req ops.PublishRequest, out any) error {
	return t.c.Call(ctx, http.MethodPost, tablePath(req.Table)+"/"+kind, targetQuery(req.Target), req, out)
}

func (t tables) PlanSwap(ctx context.Context, req ops.PublishRequest) (views.Plan, error) {
	req.DryRun = true
	var p views.Plan
	return p, t.publish(ctx, views.KindSwap, req, &p)
}

func (t tables) Swap(ctx context.Context, req ops.PublishRequest) (views.Publish, error) {
	req.DryRun = false
	var p views.Publish
	return p, t.publish(ctx, views.KindSwap, req, &p)
}

func (t tables) PlanRollback(ctx context.Context, req ops.PublishRequest) (views.Plan, error) {
	req.DryRun = true
	var p views.Plan
	return p, t.publish(ctx, views.KindRollback, req, &p)
}

func (t tables) Rollback(ctx context.Context, req ops.PublishRequest) (views.Publish, error) {
	req.DryRun = false
	var p views.Publish
	return p, t.publish(ctx, views.KindRollback, req, &p)
}

func (t tables) Retire(ctx context.Context, req ops.RetireRequest) (views.ListingJSON, error) {
	var l views.ListingJSON
	err := t.c.Call(ctx, http.MethodPost, tablePath(req.Table)+"/retire", targetQuery(req.Target), req, &l)
	return l, err
}

func (t tables) Publish(ctx context.Context, req ops.PublishLookup) (views.Publish, error) {
	var p views.Publish
	err := t.c.Call(ctx, http.MethodGet, tablePath(req.Table)+"/publishes/"+strconv.FormatInt(req.ID, 10), targetQuery(req.Target), nil, &p)
	return p, err
}

func (t tables) Adopt(ctx context.Context, req ops.AdoptRequest) (views.Publish, error) {
	var p views.Publish
	err := t.c.Call(ctx, http.MethodPost, tablePath(req.Table)+"/adopt", targetQuery(req.Target), req, &p)
	return p, err
}

func (t tables) WriteTarget(ctx context.Context, req ops.VersionsRequest) (ops.WriteTarget, error) {
	var w ops.WriteTarget
	err := t.c.Call(ctx, http.MethodGet, tablePath(req.Table)+"/write-target", targetQuery(req.Target), nil, &w)
	return w, err
}

func (t tables) Stale(ctx context.Context, req ops.VersionsRequest) ([]views.StaleVersion, error) {
	var out []views.StaleVersion
	err := t.c.Call(ctx, http.MethodGet, tablePath(req.Table)+"/stale", targetQuery(req.Target), nil, &out)
	return out, err
}

func (t tables) CatchUp(ctx context.Context, req ops.CatchUpRequest) (views.CatchUpResult, error) {
	var r views.CatchUpResult
	err := t.c.Call(ctx, http.MethodPost, tablePath(req.Table)+"/catch-up", targetQuery(req.Target), req, &r)
	return r, err
}
