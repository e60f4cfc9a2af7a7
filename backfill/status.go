package backfill

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"trueup/fault"
	"trueup/ledger"
	"trueup/views"
)

// Status is a run's progress, as `backfill status` and the progress page show it.
type Status struct {
	RunID            int64            `json:"run_id"`
	Backfill         string           `json:"backfill"`
	Table            string           `json:"table"`
	State            string           `json:"state"`
	Version          string           `json:"version"`
	PartitionsTotal  int              `json:"partitions_total"`
	PartitionsDone   int              `json:"partitions_done"`
	PartitionsFailed int              `json:"partitions_failed"`
	RowsWritten      int64            `json:"rows_written"`
	ETASeconds       *float64         `json:"eta_seconds,omitempty"`
	Error            string           `json:"error,omitempty"`
	Tables           []TableStatus    `json:"tables"`
	Partitions       []PartitionState `json:"partitions"`
	// ValidationFailures say why the run's validation did not pass, one reason each
	// (Validation.Failures): what the ledger's validation record holds, in the operator's words.
	ValidationFailures []string `json:"validation_failures,omitempty"`
	// Actions are what the operator may do with the run now; an interrupted run offers resume
	// and cancel.
	Actions []string `json:"actions,omitempty"`
	// CancelAskedBy is who asked a run still in progress to cancel: it stops after the
	// partitions in flight (or once it has validated its sample).
	CancelAskedBy string `json:"cancel_asked_by,omitempty"`
	// Waiting says a run in progress is waiting for the hours its backfill may write in
	// (window:), and when they open, e.g. "the window 22:00-06:00 (UTC) opens in 3h20m".
	Waiting string `json:"waiting,omitempty"`
	Run     *Run   `json:"-"`
}

// TableStatus is the progress of one table of a run.
type TableStatus struct {
	Table   string `json:"table"`
	Version string `json:"version"`
	Total   int    `json:"total"`
	Done    int    `json:"done"`
	Failed  int    `json:"failed"`
}

// Percent is how much of the run is built, 0–100.
func (s *Status) Percent() int {
	if s.PartitionsTotal == 0 {
		return 0
	}
	return s.PartitionsDone * 100 / s.PartitionsTotal
}

// StatusOf reads a run's progress from the ledger.
func (s Store) StatusOf(ctx context.Context, runID int64, now time.Time) (*Status, error) {
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	parts, err := s.Partitions(ctx, runID)
	if err != nil {
		return nil, err
	}
	st := &Status{RunID: run.ID, Backfill: run.Backfill, Table: run.Table, State: run.State, Error: run.Error,
		Partitions: parts, Run: run, Tables: []TableStatus{}}
	idx := map[string]int{}
	for _, t := range run.Tables {
		if t.Table == run.Table {
			st.Version = fmt.Sprintf("v%d", t.Version)
		}
		idx[t.Table] = len(st.Tables)
		st.Tables = append(st.Tables, TableStatus{Table: t.Table, Version: fmt.Sprintf("v%d", t.Version)})
	}
	var first, last time.Time
	for _, p := range parts {
		ts := &st.Tables[idx[p.Table]]
		ts.Total++
		st.PartitionsTotal++
		switch p.State {
		case PartDone:
			ts.Done++
			st.PartitionsDone++
			st.RowsWritten += p.Rows
			if p.StartedAt != nil && (first.IsZero() || p.StartedAt.Before(first)) {
				first = *p.StartedAt
			}
			if p.FinishedAt != nil && p.FinishedAt.After(last) {
				last = *p.FinishedAt
			}
		case PartFailed:
			ts.Failed++
			st.PartitionsFailed++
		}
	}
	if len(run.Validation) > 0 {
		var v Validation
		if err := json.Unmarshal(run.Validation, &v); err != nil {
			return nil, fmt.Errorf("backfill: run %d: its validation record: %w", run.ID, err)
		}
		st.ValidationFailures = v.Failures()
	}
	if run.State == RunInterrupted {
		st.Actions = []string{"resume", "cancel"}
		st.Error = fmt.Sprintf("the process building it (pid %d) is gone: resume it, or cancel it to start a new run", run.OwnerPID())
	}
	if run.State == RunRunning && st.PartitionsDone > 0 && !first.IsZero() {
		per := last.Sub(first).Seconds() / float64(st.PartitionsDone)
		eta := per * float64(st.PartitionsTotal-st.PartitionsDone)
		st.ETASeconds = &eta
	}
	return st, nil
}

// Cancel marks a run cancelled when no process is building it any more (a run in this process
// is stopped through ExecOptions.Stop). The version it built so far stays, marked cancelled.
func (r *Runner) Cancel(ctx context.Context, runID int64, actor string) (*Run, error) {
	run, err := r.Store.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	// A run that has ended is not in the state a cancel needs: a conflict, not bad input.
	switch run.State {
	case RunCancelled, RunValidated, RunValidationFailed:
		return nil, fault.New(fault.Conflict, "Run %d is %s: nothing to cancel.", runID, run.State)
	}
	if err := r.setRun(ctx, runID, RunCancelled, "", nil); err != nil {
		return nil, err
	}
	r.Store.L.Audit(ctx, ledger.Entry{Actor: actor, Action: "backfill.cancel", Target: run.Table,
		Params: map[string]any{"backfill": run.Backfill, "run_id": run.ID}, Outcome: ledger.OutcomeOK})
	if err := r.setVersions(ctx, run, views.StateCancelled, nil); err != nil {
		return run, err
	}
	if _, err := r.cancelled(ctx, runID, actor); err != nil {
		return run, err
	}
	return run, nil
}
