package ops

import (
	"context"
	"errors"
	"time"

	"trueup/fault"
	"trueup/notices"
)

// Notices is what an operator does with change notices: list and read them as the API shapes
// them (notices.JSON), edit a draft's text or planned time, announce it, withdraw it, mark it
// completed by hand, and make a delivery pass over the outbox now. Each write answers with the
// notice as it now stands, history and evidence included.
//
// The public notice pages, the feed and a recipient's acknowledgement are not here: they are
// reads of the stored notice (and a token holder's acknowledgement) for people outside, served
// by the server over the notices service itself.
type Notices interface {
	List(ctx context.Context, req NoticeListRequest) ([]notices.JSON, error)
	Show(ctx context.Context, req NoticeRequest) (notices.JSON, error)
	Edit(ctx context.Context, req NoticeEditRequest) (notices.JSON, error)
	Announce(ctx context.Context, req NoticeRequest) (notices.JSON, error)
	Withdraw(ctx context.Context, req NoticeReasonRequest) (notices.JSON, error)
	Complete(ctx context.Context, req NoticeReasonRequest) (notices.JSON, error)
	// Deliver is one delivery pass over the outbox, bounded by DeliverTimeout: what is not
	// delivered by then stays queued for the next pass.
	Deliver(ctx context.Context) (notices.Report, error)
}

// DeliverTimeout bounds one delivery pass.
const DeliverTimeout = 30 * time.Second

// NoticeListRequest is the query of GET /api/v1/notices: the notices about Table, in State (each
// optional), newest first; Limit of them (0: all) from Offset.
type NoticeListRequest struct {
	Table  string
	State  notices.State
	Limit  int
	Offset int
}

// NoticeRequest names a notice and who is asking: ID comes from the path and Actor from who is
// asking, never from a body. It is the whole of GET /api/v1/notices/{id} and POST …/announce
// (which take no body) and part of every other write to a notice.
type NoticeRequest struct {
	ID    int64  `json:"-" form:"-"`
	Actor string `json:"-" form:"-"`
}

// NoticeEditRequest is the body of POST /api/v1/notices/{id}/edit: a draft's new title and body,
// its planned_swap (2026-08-04T09:00:00Z, or 2026-08-04 09:00 in UTC), or both. The text is
// saved first, then the planned time, so a text that says the time is not set is not saved over
// the one the plan wrote.
type NoticeEditRequest struct {
	NoticeRequest
	Title       string `json:"title" form:"title"`
	Body        string `json:"body" form:"body"`
	PlannedSwap string `json:"planned_swap" form:"planned_swap"`
}

// NoticeReasonRequest is the body of POST /api/v1/notices/{id}/withdraw (why the change will not
// happen as announced) and …/complete (an optional note).
type NoticeReasonRequest struct {
	NoticeRequest
	Reason string `json:"reason" form:"reason"`
}

// NewNotices is Notices over a project's notice service.
func NewNotices(svc *notices.Service) Notices { return &noticeOps{svc: svc} }

type noticeOps struct{ svc *notices.Service }

func (o *noticeOps) full(n notices.Notice, err error) (notices.JSON, error) {
	if err != nil {
		return notices.JSON{}, err
	}
	return notices.ToJSON(n, o.svc.URL(n.ID), true), nil
}

func (o *noticeOps) List(ctx context.Context, req NoticeListRequest) ([]notices.JSON, error) {
	if req.State != "" && !req.State.Valid() {
		return nil, fault.New(fault.Invalid, "Unknown state %q: want one of draft, announced, completed, rolled-back, withdrawn.", req.State)
	}
	if req.Limit < 0 || req.Offset < 0 {
		return nil, fault.New(fault.Invalid, "limit %d, offset %d: want whole numbers.", req.Limit, req.Offset)
	}
	ns, err := o.svc.List(ctx, notices.Filter{Table: req.Table, State: req.State})
	if err != nil {
		return nil, err
	}
	ns = ns[min(req.Offset, len(ns)):]
	if req.Limit > 0 {
		ns = ns[:min(req.Limit, len(ns))]
	}
	out := make([]notices.JSON, 0, len(ns))
	for _, n := range ns {
		out = append(out, notices.ToJSON(n, o.svc.URL(n.ID), false))
	}
	return out, nil
}

func (o *noticeOps) Show(ctx context.Context, req NoticeRequest) (notices.JSON, error) {
	return o.full(o.svc.Get(ctx, req.ID))
}

func (o *noticeOps) Edit(ctx context.Context, req NoticeEditRequest) (notices.JSON, error) {
	var at time.Time
	if req.PlannedSwap != "" {
		t, err := notices.ParsePlannedSwap(req.PlannedSwap)
		if err != nil {
			return notices.JSON{}, err
		}
		at = t
	}
	var n notices.Notice
	var err error
	if req.Title != "" || req.Body != "" || at.IsZero() {
		if n, err = o.svc.Edit(ctx, req.ID, req.Actor, req.Title, req.Body); err != nil {
			return notices.JSON{}, err
		}
	}
	if !at.IsZero() {
		n, err = o.svc.PlanSwap(ctx, req.ID, req.Actor, at)
	}
	return o.full(n, err)
}

func (o *noticeOps) Announce(ctx context.Context, req NoticeRequest) (notices.JSON, error) {
	return o.full(o.svc.Announce(ctx, req.ID, req.Actor))
}

func (o *noticeOps) Withdraw(ctx context.Context, req NoticeReasonRequest) (notices.JSON, error) {
	return o.full(o.svc.Withdraw(ctx, req.ID, req.Actor, req.Reason))
}

func (o *noticeOps) Complete(ctx context.Context, req NoticeReasonRequest) (notices.JSON, error) {
	return o.full(o.svc.MarkCompleted(ctx, req.ID, req.Actor, req.Reason))
}

func (o *noticeOps) Deliver(ctx context.Context) (notices.Report, error) {
	ctx, cancel := context.WithTimeout(ctx, DeliverTimeout)
	defer cancel()
	rep, err := o.svc.Outbox().Deliver(ctx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return rep, err
	}
	return rep, nil
}
