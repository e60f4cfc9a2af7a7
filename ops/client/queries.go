package client

import (
	"context"
	"net/http"

	"trueup/ops"
)

func (q queries) Query(ctx context.Context, req ops.QueryRequest) (ops.QueryResult, error) {
	return call[ops.QueryResult](ctx, q.c, http.MethodPost, "query", nil, req)
}
