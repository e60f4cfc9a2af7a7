package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"trueup/ops"
	"trueup/views"
)

func runSwap(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	to := fs.String("to", "", "version to make live, e.g. v2 (its backfill's downstream versions go live with it)")
	reason := fs.String("reason", "", "why, for the audit log and the notice")
	override := fs.String("override", "", "an approver's written reason to publish a version whose validation failed")
	dryRun := fs.Bool("dry-run", false, "print what would change and the validation gate, change nothing")
	resume := fs.Bool("resume", false, "settle the half-done swap or rollback of TABLE (a cluster node lost part-way): repoint the nodes that did not switch")
	undo := fs.Bool("undo", false, "with --resume: put the nodes that switched back instead")
	format := formatFlag(fs)
	table, err := oneTable(fs, args, "swap TABLE --to vN [--reason TEXT] [--override REASON] [--dry-run], or swap TABLE --resume [--undo]")
	if err != nil {
		return err
	}
	if *resume || *undo {
		return runResume(ctx, e, table, *resume, *undo, *to != "" || *override != "" || *dryRun, *format)
	}
	if *to == "" {
		return usagef("swap: --to is required, e.g. --to v2 (trueup versions %s lists them)", table)
	}
	return publish(ctx, e, views.KindSwap, *dryRun, *format, ops.PublishRequest{Subject: e.cliSubject(table), To: *to, Reason: *reason, Override: *override})
}

func runRollback(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	reason := fs.String("reason", "", "why, for the audit log and the notice")
	dryRun := fs.Bool("dry-run", false, "print what would change, change nothing")
	undoes := fs.Int64("undoes", 0, "the swap it must take back (as --dry-run says): when another one is in effect it is refused, so a retry never takes back a second swap")
	format := formatFlag(fs)
	table, err := oneTable(fs, args, "rollback TABLE [--reason TEXT] [--undoes N] [--dry-run]")
	if err != nil {
		return err
	}
	if *undoes < 0 {
		return usagef("rollback: --undoes %d: want the number of a swap, e.g. --undoes 4", *undoes)
	}
	return publish(ctx, e, views.KindRollback, *dryRun, *format, ops.PublishRequest{Subject: e.cliSubject(table), Reason: *reason, Undoes: *undoes})
}

// publish carries out the swap or rollback (kind) req asks for, or with dryRun prints what it
// would do. Only a real one is told to the notices; a dry run asks them what it would move.
func publish(ctx context.Context, e *env, kind string, dryRun bool, format string, req ops.PublishRequest) error {
	t, done, err := tableOps(ctx, e, true)
	if err != nil {
		return err
	}
	defer done.close()
	if dryRun {
		plan, err := ops.PlanPublish(ctx, t, kind, req)
		if err != nil {
			return err
		}
		if err := writeViewPlan(e.stdout, format, plan, req.Override); err != nil {
			return err
		}
		// Exit as the real one would: refused by a rule of the server (four eyes), when it was
		// confirmed to take back another swap, or by the gate without an override.
		if err := plan.Refusal(); err != nil {
			return err
		}
		if err := plan.StaleUndoes(req.Undoes); err != nil {
			return err
		}
		return plan.GateRefusal(req.Override)
	}
	p, err := ops.PublishNow(ctx, t, kind, req)
	if err != nil {
		return err
	}
	return finishPublish(ctx, e, format, p, done)
}

// finishPublish prints a done swap or rollback and delivers what it queued for subscribers.
func finishPublish(ctx context.Context, e *env, format string, p views.Publish, done *opsDone) error {
	for _, w := range p.Warnings {
		fmt.Fprintln(e.stderr, "warning:", w)
	}
	if format == "json" {
		if err := writeJSON(e.stdout, p); err != nil {
			return err
		}
	} else {
		verb := "swapped"
		if p.Kind == views.KindRollback {
			verb = "rolled back"
		}
		fmt.Fprintf(e.stdout, "%s %s (#%d, %d ms)\n", verb, p.Summary(), p.ID, p.Duration().Milliseconds())
		for _, c := range p.Changes {
			if line := c.CarryLine(p.Kind, false); line != "" {
				fmt.Fprintf(e.stdout, "  %s: %s\n", c.Table, line)
			}
			if line := c.NotCarriedLine(p.Kind, false); line != "" {
				fmt.Fprintf(e.stdout, "  %s: %s\n", c.Table, line)
			}
		}
		if p.OverrideBy != "" {
			fmt.Fprintf(e.stdout, "published past a failed validation by %s: %s\n", p.OverrideBy, p.OverrideReason)
		}
		for _, n := range p.Notices {
			fmt.Fprintln(e.stdout, n.Done())
		}
	}
	return done.deliver(ctx, e)
}

// writeViewPlan prints plan p of a swap or rollback, asked with an override (a swap; "": none).
func writeViewPlan(w io.Writer, format string, p views.Plan, override string) error {
	if format == "json" {
		return writeJSON(w, p)
	}
	verb := "swap"
	if p.Kind == views.KindRollback {
		verb = fmt.Sprintf("rollback (takes back swap #%d)", p.Undoes)
	}
	fmt.Fprintf(w, "%s of %s in target %s would move, in one atomic step:\n", verb, p.Table, p.Target)
	for _, c := range p.Changes {
		fmt.Fprintf(w, "  %s\n", c)
		if line := c.CarryLine(p.Kind, true); line != "" {
			fmt.Fprintf(w, "    %s\n", line)
		}
		if line := c.NotCarriedLine(p.Kind, true); line != "" {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	for _, g := range p.Gate {
		mark := "pass"
		if !g.Passed {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "gate %s v%d: %s (%s)\n", g.Table, g.Version, mark, g.Why)
	}
	switch {
	case p.NeedsOverride && strings.TrimSpace(override) == "":
		fmt.Fprintln(w, "the swap needs an approver's --override REASON")
	case p.NeedsOverride:
		fmt.Fprintf(w, "the swap goes past the gate by the override: %s\n", strings.TrimSpace(override))
	}
	if p.Refused != "" {
		fmt.Fprintf(w, "the swap would be refused: %s\n", p.Refused)
	}
	if p.Backfill != "" {
		fmt.Fprintf(w, "backfill %s, run %d\n", p.Backfill, p.RunID)
	}
	for _, n := range p.Notices {
		fmt.Fprintf(w, "%s, and is sent to its subscribers\n", n)
	}
	if len(p.Notices) == 0 {
		fmt.Fprintln(w, "no change notice moves")
	}
	return nil
}
