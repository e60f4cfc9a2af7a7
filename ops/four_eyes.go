package ops

import (
	"context"
	"fmt"

	"trueup/fault"
	"trueup/views"
)

// FourEyes is t with auth.four_eyes: an approver may not swap in a version built by a backfill
// run they started; someone else has to look at it first (Refused). Rollbacks are not held back:
// taking a change back must never wait for a second person.
//
// The check wraps the operation, not the views service, because only the adapter knows who is
// proven to be asking (the server's authentication sets Actor); the views package records
// BuiltBy and stays unaware of who may approve what.
func FourEyes(t Tables) Tables { return fourEyes{t} }

type fourEyes struct{ Tables }

func (f fourEyes) Swap(ctx context.Context, req PublishRequest) (views.Publish, error) {
	plan, err := f.PlanSwap(ctx, req)
	if err != nil {
		return f.Tables.Swap(ctx, req) // let the service report its own refusal
	}
	for _, ch := range plan.Changes {
		l, err := f.Versions(ctx, VersionsRequest{Target: plan.Target, Table: ch.Table})
		if err != nil {
			return views.Publish{}, fmt.Errorf("four eyes: %s: %w", ch.Table, err)
		}
		for _, v := range l.Versions {
			if v.N == ch.To && v.BuiltBy != "" && v.BuiltBy == req.Actor {
				return views.Publish{}, fault.New(fault.Refused,
					"Four eyes: %s started the run that built %s v%d, so another approver must swap it in.", req.Actor, ch.Table, ch.To)
			}
		}
	}
	return f.Tables.Swap(ctx, req)
}
