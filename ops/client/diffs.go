package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"trueup/ops"
	"trueup/reconcile"
)

func (d diffs) Run(ctx context.Context, req ops.DiffRequest) (*reconcile.Result, error) {
	return callNew[reconcile.Result](ctx, d.c, http.MethodPost, "diffs", nil, req)
}

func (d diffs) Get(ctx context.Context, id int64) (*reconcile.Result, error) {
	return callNew[reconcile.Result](ctx, d.c, http.MethodGet, "diffs/"+strconv.FormatInt(id, 10), nil, nil)
}

func (d diffs) List(ctx context.Context, limit int) ([]reconcile.Saved, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(min(limit, pageLimit)))
	}
	out := []reconcile.Saved{}
	err := d.c.Call(ctx, http.MethodGet, "diffs", q, nil, &out)
	return out, err
}
