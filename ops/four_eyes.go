package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"trueup/fault"
	"trueup/notices"
	"trueup/views"
)

// FourEyes is t with auth.four_eyes: an approver may not swap in a version built by a backfill
// run they started; someone else has to look at it first (Refused). Rollbacks are not held back:
// taking a change back must never wait for a second person. approvers are the names of every
// approver, so that a refusal says who may swap it in instead.
//
// The check wraps the operation, not the views service, because only the adapter knows who is
// proven to be asking (the server's authentication sets Actor); the views package records
// BuiltBy and stays unaware of who may approve what. PlanSwap asks the same check as Swap, so a
// dry run and a confirmation page say what the swap will answer.
func FourEyes(t Tables, approvers []string) Tables { return fourEyes{t, approvers} }

type fourEyes struct {
	Tables
	approvers []string
}

// PlanSwap is the plan, with Refused saying why the swap would be refused when the check does.
func (f fourEyes) PlanSwap(ctx context.Context, req PublishRequest) (views.Plan, error) {
	plan, err := f.Tables.PlanSwap(ctx, req)
	if err != nil {
		return plan, err
	}
	if err := f.check(ctx, plan, req.Actor); errors.Is(err, fault.ErrRefused) {
		plan.Refused = fault.Message(err)
	} else if err != nil {
		return views.Plan{}, err
	}
	return plan, nil
}

func (f fourEyes) Swap(ctx context.Context, req PublishRequest) (views.Publish, error) {
	plan, err := f.Tables.PlanSwap(ctx, req)
	if err != nil {
		return f.Tables.Swap(ctx, req) // let the service report its own refusal
	}
	if err := f.check(ctx, plan, req.Actor); err != nil {
		return views.Publish{}, err
	}
	return f.Tables.Swap(ctx, req)
}

// check is the one four-eyes rule: Refused when actor started the run that built a version the
// swap planned as plan makes live.
func (f fourEyes) check(ctx context.Context, plan views.Plan, actor string) error {
	for _, ch := range plan.Changes {
		l, err := f.Versions(ctx, VersionsRequest{Target: plan.Target, Table: ch.Table})
		if err != nil {
			return fmt.Errorf("four eyes: %s: %w", ch.Table, err)
		}
		for _, v := range l.Versions {
			if v.N == ch.To && v.BuiltBy != "" && v.BuiltBy == actor {
				return fault.New(fault.Refused, "Four eyes: %s started the run that built %s v%d, so another approver must swap it in: %s.",
					actor, ch.Table, ch.To, f.others(actor))
			}
		}
	}
	return nil
}

// others names the approvers besides actor, as a refusal says who may swap instead.
func (f fourEyes) others(actor string) string {
	var names []string
	for _, n := range f.approvers {
		if n != actor && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "none is configured yet (an approver's token in auth.tokens of trueup.yaml)"
	}
	return notices.JoinNames(names, "or")
}
