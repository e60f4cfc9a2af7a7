package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"trueup/backfill"
	"trueup/ops"
)

// Backfills is ops.Backfills through the server: runs are built in the server's background, and
// go on there whatever happens to the caller.
func (c *Client) Backfills() ops.Backfills { return backfills{c} }

type backfills struct{ c *Client }

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

// backfillPage is how many backfills one request of List asks for: the API's most.
const backfillPage = 1000

func (b backfills) List(ctx context.Context) ([]backfill.Summary, error) {
	var all []backfill.Summary
	for {
		q := url.Values{"limit": {strconv.Itoa(backfillPage)}, "offset": {strconv.Itoa(len(all))}}
		var page []backfill.Summary
		if err := b.c.Call(ctx, http.MethodGet, "backfills", q, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < backfillPage {
			return all, nil
		}
	}
}

func (b backfills) Plan(ctx context.Context, req ops.BackfillRequest) (*backfill.Plan, error) {
	var p backfill.Plan
	if err := b.c.Call(ctx, http.MethodGet, backfillPath(req.Name), scopeQuery(req.Scope), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

func (b backfills) DryRun(ctx context.Context, req ops.BackfillRequest) (*backfill.Preview, error) {
	var pv backfill.Preview
	if err := b.c.Call(ctx, http.MethodPost, backfillPath(req.Name)+"/dry-run", scopeQuery(req.Scope), nil, &pv); err != nil {
		return nil, err
	}
	return &pv, nil
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
	var run backfill.Run
	if err := b.c.Call(ctx, http.MethodPost, backfillPath(name)+"/"+action, q, nil, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

func (b backfills) Status(ctx context.Context, req ops.BackfillRequest) (*backfill.Status, error) {
	var st backfill.Status
	if err := b.c.Call(ctx, http.MethodGet, backfillPath(req.Name)+"/status", nil, nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

func (b backfills) History(ctx context.Context) ([]backfill.ReasonCount, error) {
	var h []backfill.ReasonCount
	err := b.c.Call(ctx, http.MethodGet, "backfills/history", nil, nil, &h)
	return h, err
}

func (b backfills) RunWindows(ctx context.Context, req ops.WindowRequest) (*backfill.WindowRun, error) {
	var out backfill.WindowRun
	q := url.Values{}
	if req.Window != "" {
		q.Set("window", req.Window)
	}
	if err := b.c.Call(ctx, http.MethodPost, backfillPath(req.Name)+"/window", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
