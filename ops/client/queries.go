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
	var r ops.QueryResult
	err := q.c.Call(ctx, http.MethodPost, "query", nil, req, &r)
	return r, err
}
