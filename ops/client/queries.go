package client

import (
	"context"
	"net/http"

	"trueup/ops"
)

// Queries is ops.Queries through the server.
func (c *Client) Queries() ops.Queries { return queries{c} }

type queries struct{ c *Client }

func (q queries) Query(ctx context.Context, req ops.QueryRequest) (ops.QueryResult, error) {
	return call[ops.QueryResult](ctx, q.c, http.MethodPost, "query", nil, req)
}
