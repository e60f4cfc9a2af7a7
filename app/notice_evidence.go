// Package app owns the flow between trueup's capabilities that no one capability owns: what a
// backfill run tells its change notice (its plan, then its validation). The adapters wire it
// once; the capabilities stay unaware of each other.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"trueup/backfill"
	"trueup/notices"
	"trueup/reconcile"
	tsql "trueup/sql"
)

// StoredDiffs reads back the diffs a validation saved (reconcile.Store).
type StoredDiffs interface {
	Get(ctx context.Context, id int64) (*reconcile.Result, error)
}

// DraftNotices makes a backfill runner validating with v draft the change notice of each run
// when it is created and refresh it when validation ends.
func DraftNotices(v backfill.Validator, svc *notices.Service, log *slog.Logger) backfill.Option {
	// The validation lists changed partitions only; the diffs it saved know how many were
	// compared. The runner's diff store is where they were saved, so it is where they are read.
	diffs, _ := v.Diffs.(StoredDiffs)
	return backfill.WithListener(noticeDrafter{svc: svc, diffs: diffs, log: log})
}

// noticeDrafter drafts and refreshes the change notice of the runs it hears about.
type noticeDrafter struct {
	svc   *notices.Service
	diffs StoredDiffs
	log   *slog.Logger
}

func (d noticeDrafter) RunChanged(ctx context.Context, run *backfill.Run) {
	ev, err := Evidence(ctx, run, d.diffs)
	if err != nil && d.log != nil {
		// the notice is drafted from the plan all the same: people hear of the change, and the
		// log says why its checks are missing
		d.log.Error("notice evidence", "backfill", run.Backfill, "run_id", run.ID, "err", err)
	}
	if _, err := d.svc.Draft(ctx, ev); err != nil && d.log != nil {
		d.log.Error("draft notice", "backfill", run.Backfill, "run_id", run.ID, "err", err)
	}
}

// RunCancelled withdraws the draft notice of a cancelled run (backfill.Interruptions).
func (d noticeDrafter) RunCancelled(ctx context.Context, run *backfill.Run, by string) {
	if _, err := d.svc.RunCancelled(ctx, run.Backfill, run.ID, by); err != nil && d.log != nil {
		d.log.Error("withdraw the notice of a cancelled run", "backfill", run.Backfill, "run_id", run.ID, "err", err)
	}
}

// RunResumed drafts again the notice the cancel withdrew (backfill.Interruptions).
func (d noticeDrafter) RunResumed(ctx context.Context, run *backfill.Run, by string) {
	if _, err := d.svc.RunResumed(ctx, run.Backfill, run.ID, by); err != nil && d.log != nil {
		d.log.Error("reopen the notice of a resumed run", "backfill", run.Backfill, "run_id", run.ID, "err", err)
	}
}

// Evidence is what a run tells the notice: its plan, and its validation once there is one.
// diffs (nil when there are none) count the partitions each table's comparison covered. The
// scope is from the first partition's start to the end of the last, at the plan's grain (day,
// hour or month). A validation that cannot be read is an error, with the evidence of the plan.
func Evidence(ctx context.Context, run *backfill.Run, diffs StoredDiffs) (notices.Evidence, error) {
	p := run.Plan
	ev := notices.Evidence{
		Backfill: run.Backfill, RunID: run.ID, Target: run.Target, Reason: run.Reason, Objective: p.Objective,
		PartitionColumn: p.Column, Partitions: p.Partitions, Owner: p.Contact, Actor: run.Actor,
		Versions: map[string]int{},
	}
	if ev.Owner == "" {
		ev.Owner = p.Owner
	}
	for _, t := range run.Tables {
		ev.Tables = append(ev.Tables, t.Table)
		ev.Versions[t.Table] = t.Version
	}
	if len(p.Partitions) > 0 {
		first, err1 := backfill.ParsePartition(p.Partitions[0], p.Grain)
		last, err2 := backfill.ParsePartition(p.Partitions[len(p.Partitions)-1], p.Grain)
		if err := errors.Join(err1, err2); err != nil {
			return ev, fmt.Errorf("run %d's scope: %w", run.ID, err)
		}
		ev.From, ev.To = first, tsql.NextGrain(last, p.Grain)
	}
	if len(run.Validation) == 0 {
		return ev, nil
	}
	var v backfill.Validation
	if err := json.Unmarshal(run.Validation, &v); err != nil {
		return ev, fmt.Errorf("run %d's validation cannot be read: %w", run.ID, err)
	}
	for _, r := range v.Rules {
		ev.Rules = append(ev.Rules, notices.RuleCheck{Rule: r.Rule, Table: r.Table, Passed: r.Status == "pass", Message: r.Message})
	}
	for _, t := range v.Tables {
		ev.Expectations = append(ev.Expectations, notices.Expectation{Text: t.Table + ": " + t.Expect, Met: t.ExpectationsMet})
		changed := 0
		for _, c := range t.Changed {
			d := notices.PartitionDiff{Table: t.Table, Partition: c.Partition, OldCount: c.OldCount, NewCount: c.NewCount,
				Verdict: c.Verdict, Measure: c.Measure, OldTotal: c.OldTotal, NewTotal: c.NewTotal}
			if c.PctChange != nil { // nil for a new partition, which the notice calls "new"
				d.PctChange = *c.PctChange
			}
			ev.Diff = append(ev.Diff, d)
			if c.Verdict != notices.VerdictIdentical {
				changed++
			}
		}
		if n, ok := comparedPartitions(ctx, diffs, t.DiffID); ok {
			ev.Compared = append(ev.Compared, notices.TableComparison{Table: t.Table, Partitions: n, Identical: n - changed})
		}
	}
	return ev, nil
}

// comparedPartitions is how many partitions the saved diff id compared; false when it cannot
// be read (the notice then says nothing of the identical ones rather than "0").
func comparedPartitions(ctx context.Context, diffs StoredDiffs, id int64) (int, bool) {
	if diffs == nil || id == 0 {
		return 0, false
	}
	res, err := diffs.Get(ctx, id)
	if err != nil {
		return 0, false
	}
	return len(res.Partitions), true
}
