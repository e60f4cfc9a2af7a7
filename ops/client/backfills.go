package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"trueup/backfill"
	"trueup/ops"
)

func backfillPath(name string) string { return "backfills/" + PathSegment(name) }

// scopeQuery is a scope as the server reads it: ?from=&to=.
func scopeQuery(scope *backfill.Scope) url.Values {
	q := url.Values{}
	if scope != nil {
		q.Set("from", scope.From.Format("2006-01-02"))
		q.Set("to", scope.To.Format("2006-01-02"))
	}
	return q
}

func (b backfills) List(ctx context.Context) ([]backfill.Summary, error) {
	return all[backfill.Summary](ctx, b.c, "backfills", nil, 0)
}

func (b backfills) Plan(ctx context.Context, req ops.BackfillRequest) (*backfill.Plan, error) {
	return callNew[backfill.Plan](ctx, b.c, http.MethodGet, backfillPath(req.Name), scopeQuery(req.Scope), nil)
}

func (b backfills) DryRun(ctx context.Context, req ops.BackfillRequest) (*backfill.Preview, error) {
	return callNew[backfill.Preview](ctx, b.c, http.MethodPost, backfillPath(req.Name)+"/dry-run", scopeQuery(req.Scope), nil)
}

func (b backfills) Run(ctx context.Context, req ops.BackfillRunRequest) (*backfill.Run, error) {
	q := scopeQuery(req.Scope)
	if req.Sample != 0 {
		q.Set("sample", strconv.Itoa(req.Sample))
	}
	if req.AllowFullRewrite {
		q.Set("allow_full_rewrite", "true")
	}
	if req.NewVersion {
		q.Set("new_version", "true")
	}
	if req.CatchUp {
		q.Set("catch_up", "true")
	}
	return b.action(ctx, req.Name, "run", q)
}

func (b backfills) Resume(ctx context.Context, req ops.BackfillRequest) (*backfill.Run, error) {
	return b.action(ctx, req.Name, "resume", nil)
}

func (b backfills) Cancel(ctx context.Context, req ops.BackfillRequest) (*backfill.Run, error) {
	return b.action(ctx, req.Name, "cancel", nil)
}

func (b backfills) action(ctx context.Context, name, action string, q url.Values) (*backfill.Run, error) {
	return callNew[backfill.Run](ctx, b.c, http.MethodPost, backfillPath(name)+"/"+action, q, nil)
}

func (b backfills) Status(ctx context.Context, req ops.BackfillRequest) (*backfill.Status, error) {
	return callNew[backfill.Status](ctx, b.c, http.MethodGet, backfillPath(req.Name)+"/status", nil, nil)
}

func (b backfills) History(ctx context.Context) ([]backfill.ReasonCount, error) {
	return call[[]backfill.ReasonCount](ctx, b.c, http.MethodGet, "backfills/history", nil, nil)
}

func (b backfills) RunWindows(ctx context.Context, req ops.WindowRequest) (*backfill.WindowRun, error) {
	q := url.Values{}
	if req.Window != "" {
		q.Set("window", req.Window)
	}
	return callNew[backfill.WindowRun](ctx, b.c, http.MethodPost, backfillPath(req.Name)+"/window", q, nil)
}
