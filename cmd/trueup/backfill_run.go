package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"trueup/backfill"
	"trueup/ops"
	"trueup/reconcile"
)

// reportDryRun prints a dry run and fails when the change does not meet its expectations.
func reportDryRun(out *backfillOutput, name string, pv *backfill.Preview) error {
	if out.json {
		if err := out.encode(pv); err != nil {
			return err
		}
	} else if pv.Plan != nil && pv.Plan.Blocked() {
		writePlan(out.w, pv.Plan) // nothing was computed: the findings say why
	} else {
		writePreview(out.w, pv, "dry run: nothing was written")
	}
	if err := blockedPlan("backfill dry-run", name, pv.Plan); err != nil {
		return err
	}
	if !pv.OK {
		return failedf("backfill dry-run %s: the change does not meet its expectations", name)
	}
	return nil
}

// backfillVerify recomputes the live table from its inputs and code over scope, in this process:
// it is local only.
func backfillVerify(ctx context.Context, e *env, name string, scope *backfill.Scope, out *backfillOutput) error {
	a, r, _, err := openBackfillRunner(ctx, e)
	if err != nil {
		return err
	}
	defer a.Close()
	pv, err := r.Verify(ctx, name, scope.From, scope.To)
	if err != nil {
		return backfillRefused("verify", err)
	}
	if out.json {
		if err := out.encode(pv); err != nil {
			return err
		}
	} else {
		writePreview(out.w, pv, "recomputed from inputs and code: nothing was written")
	}
	if !pv.OK {
		return failedf("backfill verify %s: the live table is no longer what its inputs and code give", name)
	}
	return nil
}

// writePreview prints each table's partition summary like the seeds' dry-run table.
func writePreview(w io.Writer, pv *backfill.Preview, title string) {
	fmt.Fprintf(w, "%s (%s)\n", pv.Backfill, title)
	for _, t := range pv.Tables {
		fmt.Fprintf(w, "\n%s: live %s vs %s\n", t.Table, t.Live, t.Result.New.Relation)
		writePartitionTable(w, t.Result)
	}
	for _, n := range pv.Notes {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
	verdict := "meets its expectations"
	if !pv.OK {
		verdict = "DOES NOT meet its expectations"
	}
	fmt.Fprintf(w, "\nresult: %s\n", verdict)
}

// writePartitionTable prints partition old_count new_count delta pct_change, the change of each
// measured total (the first three: what "sum(amount) +0..6%" judges) and the verdict, changed
// partitions only, then the row-level counts.
func writePartitionTable(w io.Writer, res *reconcile.Result) {
	measures := res.Measures[:min(len(res.Measures), 3)]
	pw := 12 // an hour's partition (2026-05-02T10:00) is wider than a day's
	for _, p := range res.Partitions {
		pw = max(pw, len(p.Partition))
	}
	head := fmt.Sprintf("  %-*s %10s %10s %8s %10s", pw, "partition", "old_count", "new_count", "delta", "pct_change")
	for _, m := range measures {
		head += fmt.Sprintf(" %*s", max(len(m)+5, 10), "sum("+m+")")
	}
	fmt.Fprintf(w, "%s  %s\n", head, "verdict")
	unchanged := 0
	for _, p := range res.Partitions {
		if p.Unchanged() {
			unchanged++
			continue
		}
		line := fmt.Sprintf("  %-*s %10d %10d %+8d %10s", pw, p.Partition, p.OldCount, p.NewCount, p.Delta, pctText(p.PctChange))
		for _, m := range measures {
			var pct *float64
			if x, ok := p.Measures[m]; ok && x.PctChange != nil {
				f := float64(*x.PctChange)
				pct = &f
			}
			line += fmt.Sprintf(" %*s", max(len(m)+5, 10), pctText(pct))
		}
		fmt.Fprintf(w, "%s  %s\n", line, p.Verdict)
	}
	if unchanged > 0 {
		fmt.Fprintf(w, "  (%d %s unchanged)\n", unchanged, pluralWord(unchanged, "partition", "partitions"))
	}
	fmt.Fprintf(w, "  rows: %d added, %d removed, %d changed\n", res.Rows.Added, res.Rows.Removed, res.Rows.Changed)
}

// pctText is a percentage change as the tables print it, "-" for none.
func pctText(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", *p)
}

// backfillPoll is how often a run or resume asks how its build is going.
const backfillPoll = 250 * time.Millisecond

// awaitBuilt waits until the backfill's latest run stops building, then reports it. Locally and
// through a server alike the build goes on in the background of the process holding the
// operations, and the command follows its status; only an interrupt differs. Through a server
// the run goes on there and the command stops waiting. Locally the build is this process's, so
// it stops after the partitions in flight, and the run, cancelled, is reported as any other end.
func awaitBuilt(ctx context.Context, e *env, b ops.Backfills, done *backfillDone, name string, out *backfillOutput) error {
	st, err := awaitStopped(ctx, b, name)
	if ctx.Err() != nil {
		if done.svc == nil {
			fmt.Fprintf(e.stderr, "backfill: stopped waiting; the run goes on in the server (trueup backfill status|cancel NAME --server %s)\n", done.server)
			return ctx.Err()
		}
		done.settle() // stops the build after the partitions in flight, and waits for it
		st, err = b.Status(context.WithoutCancel(ctx), ops.BackfillRequest{Name: name})
	}
	if err != nil {
		return err
	}
	done.settle()
	return reportBuilt(out, st)
}

// awaitStopped polls the status of the backfill's latest run until it is neither building nor
// validating.
func awaitStopped(ctx context.Context, b ops.Backfills, name string) (*backfill.Status, error) {
	for {
		st, err := b.Status(ctx, ops.BackfillRequest{Name: name})
		if err != nil {
			return nil, err
		}
		if st.State != backfill.RunRunning && st.State != backfill.RunValidating {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backfillPoll):
		}
	}
}

// progressBar draws a run's progress on w, a terminal, as the partitions start and end.
func progressBar(w io.Writer) func(backfill.Progress) {
	return func(p backfill.Progress) {
		width := 30
		filled := 0
		if p.Total > 0 {
			filled = p.Done * width / p.Total
		}
		fmt.Fprintf(w, "\r[%s%s] %d/%d %s %s %s   ", strings.Repeat("#", filled), strings.Repeat(" ", width-filled),
			p.Done, p.Total, p.Table, p.Partition, p.State)
		if p.Done == p.Total {
			fmt.Fprintln(w)
		}
	}
}

// reportBuilt prints the status of a run that has stopped building and fails when it did not
// end validated (or sampled, for review).
func reportBuilt(out *backfillOutput, st *backfill.Status) error {
	if out.json {
		if err := out.encode(st); err != nil {
			return err
		}
	} else {
		writeStatus(out.w, st)
	}
	switch st.State {
	case backfill.RunValidationFailed:
		var vs []string
		for _, t := range st.Tables {
			vs = append(vs, t.Table+"__"+t.Version)
		}
		why := ""
		if len(st.ValidationFailures) > 0 {
			why = ": " + strings.Join(st.ValidationFailures, "; ")
		}
		return failedf("backfill %s: run %d built %s but validation failed%s", st.Backfill, st.RunID, strings.Join(vs, ", "), why)
	case backfill.RunCancelled:
		return failedf("backfill %s: run %d cancelled after %d of %d partitions; resume with: trueup backfill resume %s",
			st.Backfill, st.RunID, st.PartitionsDone, st.PartitionsTotal, st.Backfill)
	case backfill.RunFailed:
		return failedf("backfill %s: run %d failed: %s", st.Backfill, st.RunID, st.Error)
	}
	return nil
}

func versionsOf(run *backfill.Run) string {
	var parts []string
	for _, t := range run.Tables {
		parts = append(parts, fmt.Sprintf("%s__v%d", t.Table, t.Version))
	}
	return strings.Join(parts, ", ")
}

func writeStatus(w io.Writer, st *backfill.Status) {
	fmt.Fprintf(w, "run %d of %s: %s, %s, %d/%d partitions done, %d failed, %d rows written\n",
		st.RunID, st.Backfill, st.State, st.Version, st.PartitionsDone, st.PartitionsTotal, st.PartitionsFailed, st.RowsWritten)
	if st.Waiting != "" {
		fmt.Fprintf(w, "  waiting: %s\n", st.Waiting)
	}
	if st.CancelAskedBy != "" {
		fmt.Fprintf(w, "  cancel asked by %s: it stops after the partitions in flight\n", st.CancelAskedBy)
	}
	for _, t := range st.Tables {
		fmt.Fprintf(w, "  %-16s %-4s %d/%d done, %d failed\n", t.Table, t.Version, t.Done, t.Total, t.Failed)
	}
	for _, p := range st.Partitions {
		if p.State == backfill.PartFailed {
			fmt.Fprintf(w, "  failed: %s %s: %s\n", p.Table, p.Partition, p.Error)
		}
	}
	if len(st.ValidationFailures) > 0 {
		fmt.Fprintln(w, "  validation failed:")
		for _, f := range st.ValidationFailures {
			fmt.Fprintf(w, "    - %s\n", f)
		}
	}
	if st.State == backfill.RunInterrupted {
		fmt.Fprintf(w, "  interrupted: %s\n  resume it: trueup backfill resume %s\n  or cancel it: trueup backfill cancel %s\n",
			st.Error, st.Backfill, st.Backfill)
		return
	}
	if st.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", st.Error)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
