package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"trueup/ops"
	"trueup/views"
)

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
	return call[views.ListingJSON](ctx, t.c, http.MethodGet, tablePath(req.Table), q, nil)
}

// tableCall is one request about a table (GET or POST tables/TABLE/rest?target=), answered as a T.
func tableCall[T any](ctx context.Context, t tables, method, table, rest, target string, body any) (T, error) {
	return call[T](ctx, t.c, method, tablePath(table)+rest, targetQuery(target), body)
}

// publish is POST tables/TABLE/swap or …/rollback (kind): its plan (a views.Plan) with dryRun,
// else the publish it made (a views.Publish).
func publish[T any](ctx context.Context, t tables, kind string, dryRun bool, req ops.PublishRequest) (T, error) {
	req.DryRun = dryRun
	return tableCall[T](ctx, t, http.MethodPost, req.Table, "/"+kind, req.Target, req)
}

func (t tables) PlanSwap(ctx context.Context, req ops.PublishRequest) (views.Plan, error) {
	return publish[views.Plan](ctx, t, views.KindSwap, true, req)
}

func (t tables) Swap(ctx context.Context, req ops.PublishRequest) (views.Publish, error) {
	return publish[views.Publish](ctx, t, views.KindSwap, false, req)
}

func (t tables) PlanRollback(ctx context.Context, req ops.PublishRequest) (views.Plan, error) {
	return publish[views.Plan](ctx, t, views.KindRollback, true, req)
}

func (t tables) Rollback(ctx context.Context, req ops.PublishRequest) (views.Publish, error) {
	return publish[views.Publish](ctx, t, views.KindRollback, false, req)
}

func (t tables) Retire(ctx context.Context, req ops.RetireRequest) (views.ListingJSON, error) {
	return tableCall[views.ListingJSON](ctx, t, http.MethodPost, req.Table, "/retire", req.Target, req)
}

func (t tables) Publish(ctx context.Context, req ops.PublishLookup) (views.Publish, error) {
	return tableCall[views.Publish](ctx, t, http.MethodGet, req.Table, "/publishes/"+strconv.FormatInt(req.ID, 10), req.Target, nil)
}

func (t tables) Adopt(ctx context.Context, req ops.AdoptRequest) (views.Publish, error) {
	return tableCall[views.Publish](ctx, t, http.MethodPost, req.Table, "/adopt", req.Target, req)
}

func (t tables) WriteTarget(ctx context.Context, req ops.VersionsRequest) (ops.WriteTarget, error) {
	return tableCall[ops.WriteTarget](ctx, t, http.MethodGet, req.Table, "/write-target", req.Target, nil)
}

func (t tables) Days(ctx context.Context, req ops.VersionsRequest) ([]string, error) {
	return tableCall[[]string](ctx, t, http.MethodGet, req.Table, "/days", req.Target, nil)
}

func (t tables) Stale(ctx context.Context, req ops.VersionsRequest) ([]views.StaleVersion, error) {
	return tableCall[[]views.StaleVersion](ctx, t, http.MethodGet, req.Table, "/stale", req.Target, nil)
}

func (t tables) CatchUp(ctx context.Context, req ops.CatchUpRequest) (views.CatchUpResult, error) {
	return tableCall[views.CatchUpResult](ctx, t, http.MethodPost, req.Table, "/catch-up", req.Target, req)
}
