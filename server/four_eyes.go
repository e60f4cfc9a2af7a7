package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"trueup/views"
)

// fourEyes wraps a target's TableService when auth.four_eyes is set: an approver may not swap
// in a version built by a backfill run they started; someone else has to look at it first.
// Rollbacks are not held back: taking a change back must never wait for a second person.
//
// The check lives here, around the service, because the actor a swap names is the proven one
// only in the server (authenticate rewrites it); the views package records BuiltBy and stays
// unaware of who may approve what.
type fourEyes struct {
	TableService
}

func (f fourEyes) Swap(ctx context.Context, req views.SwapRequest) (views.Publish, error) {
	plan, err := f.PlanSwap(ctx, req.Table, req.To)
	if err != nil {
		return f.TableService.Swap(ctx, req) // let the service report its own refusal
	}
	for _, ch := range plan.Changes {
		l, err := f.Versions(ctx, ch.Table)
		if err != nil {
			return views.Publish{}, fmt.Errorf("four eyes: %s: %w", ch.Table, err)
		}
		for _, v := range l.Versions {
			if v.N == ch.To && v.BuiltBy != "" && v.BuiltBy == req.Actor {
				return views.Publish{}, echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf(
					"Four eyes: %s started the run that built %s v%d, so another approver must swap it in.",
					req.Actor, ch.Table, ch.To))
			}
		}
	}
	return f.TableService.Swap(ctx, req)
}
