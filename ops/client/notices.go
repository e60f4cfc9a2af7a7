package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"trueup/notices"
	"trueup/ops"
)

func noticePath(id int64) string { return "notices/" + strconv.FormatInt(id, 10) }

func (o noticeOps) List(ctx context.Context, req ops.NoticeListRequest) ([]notices.JSON, error) {
	q := url.Values{}
	if req.Table != "" {
		q.Set("table", req.Table)
	}
	if req.State != "" {
		q.Set("state", string(req.State))
	}
	if req.Limit > 0 { // one window, as asked
		q.Set("limit", strconv.Itoa(req.Limit))
		q.Set("offset", strconv.Itoa(req.Offset))
		page, err := call[[]notices.JSON](ctx, o.c, http.MethodGet, "notices", q, nil)
		if err != nil {
			return nil, err
		}
		if page == nil {
			page = []notices.JSON{}
		}
		return page, nil
	}
	return all[notices.JSON](ctx, o.c, "notices", q, req.Offset)
}

func (o noticeOps) one(ctx context.Context, method, path string, body any) (notices.JSON, error) {
	return call[notices.JSON](ctx, o.c, method, path, nil, body)
}

func (o noticeOps) Show(ctx context.Context, req ops.NoticeRequest) (notices.JSON, error) {
	return o.one(ctx, http.MethodGet, noticePath(req.ID), nil)
}

func (o noticeOps) Edit(ctx context.Context, req ops.NoticeEditRequest) (notices.JSON, error) {
	return o.one(ctx, http.MethodPost, noticePath(req.ID)+"/edit", req)
}

func (o noticeOps) Announce(ctx context.Context, req ops.NoticeRequest) (notices.JSON, error) {
	return o.one(ctx, http.MethodPost, noticePath(req.ID)+"/announce", nil)
}

func (o noticeOps) Withdraw(ctx context.Context, req ops.NoticeReasonRequest) (notices.JSON, error) {
	return o.one(ctx, http.MethodPost, noticePath(req.ID)+"/withdraw", req)
}

func (o noticeOps) Complete(ctx context.Context, req ops.NoticeReasonRequest) (notices.JSON, error) {
	return o.one(ctx, http.MethodPost, noticePath(req.ID)+"/complete", req)
}

func (o noticeOps) Deliver(ctx context.Context) (notices.Report, error) {
	return call[notices.Report](ctx, o.c, http.MethodPost, "notices/deliver", nil, nil)
}
