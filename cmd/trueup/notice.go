package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"

	"trueup/notices"
	"trueup/ops"
	"trueup/ops/client"
	"trueup/sqlfile"
)

const noticeUsage = "notice list [--table T] [--state S] | show ID | edit ID --planned-swap TIME | announce ID [--planned-swap TIME] | withdraw ID [--reason TEXT] | complete ID | deliver"

func runNotice(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	format := formatFlag(fs)
	table := fs.String("table", "", "list: only notices about this table")
	state := fs.String("state", "", "list: only notices in this state (draft, announced, completed, rolled-back, withdrawn)")
	reason := fs.String("reason", "", "withdraw: why the change will not happen as announced; complete: a note")
	planned := fs.String("planned-swap", "", "edit, announce: when the new data is planned to go live, e.g. 2026-08-04T09:00:00Z or '2026-08-04 09:00' (UTC)")
	// Flags may come before or after the notice id: `notice show 3 --format json`.
	verb, positional, err := parseVerb(fs, args, noticeUsage)
	if err != nil {
		return err
	}
	var id int64
	switch verb {
	case "list", "deliver":
		if len(positional) > 0 {
			return usagef("notice %s: unexpected argument %q", verb, strings.Join(positional, " "))
		}
	case "show", "edit", "announce", "withdraw", "complete":
		if len(positional) != 1 {
			return usagef("usage: trueup notice %s ID", verb)
		}
		n, err := strconv.ParseInt(positional[0], 10, 64)
		if err != nil || n <= 0 {
			return usagef("notice %s: %q is not a notice id (see trueup notice list)", verb, positional[0])
		}
		id = n
	default:
		return usagef("notice: unknown verb %q; usage: trueup %s", verb, noticeUsage)
	}
	switch {
	case *planned != "" && verb != "edit" && verb != "announce":
		return usagef("notice %s: --planned-swap is for edit and announce", verb)
	case *planned != "":
		if _, err := notices.ParsePlannedSwap(*planned); err != nil {
			return usagef("notice %s: --planned-swap: %w", verb, err)
		}
	case verb == "edit":
		return usagef("notice edit: say what to change: --planned-swap TIME (the text is edited on the notice's page)")
	}
	list := ops.NoticeListRequest{Table: *table, State: notices.State(*state)}
	if list.State != "" && !list.State.Valid() {
		return usagef("notice list: --state %q: want one of draft, announced, completed, rolled-back, withdrawn", *state)
	}
	out := noticeOutput{w: e.stdout, json: *format == "json"}
	n, done, err := noticeOps(ctx, e)
	if err != nil {
		return err
	}
	defer done.close()
	switch verb {
	case "list":
		ns, err := n.List(ctx, list)
		if err != nil {
			return err
		}
		return out.list(ns)
	case "show":
		j, err := n.Show(ctx, ops.NoticeRequest{ID: id})
		if err != nil {
			return err
		}
		return out.show(j)
	case "deliver":
		rep, err := n.Deliver(ctx)
		if err != nil {
			return err
		}
		reportDeliveries(e, rep)
		return nil
	}
	var j notices.JSON
	cliNotice := ops.NoticeRequest{ID: id, Actor: cliActor()}
	if *planned != "" { // edit, or announce after setting the plan
		if j, err = n.Edit(ctx, ops.NoticeEditRequest{NoticeRequest: cliNotice, PlannedSwap: *planned}); err != nil {
			return err
		}
	}
	switch verb {
	case "announce":
		j, err = n.Announce(ctx, cliNotice)
	case "withdraw":
		j, err = n.Withdraw(ctx, ops.NoticeReasonRequest{NoticeRequest: cliNotice, Reason: *reason})
	case "complete":
		j, err = n.Complete(ctx, ops.NoticeReasonRequest{NoticeRequest: cliNotice, Reason: *reason})
	}
	if err != nil {
		return err
	}
	if err := out.show(j); err != nil {
		return err
	}
	return done.deliver(ctx, e)
}

// noticeOps is the notice operations a command runs: through the server with --server (whose
// own worker delivers what a write queues), else over the project's notice service, whose
// queued messages done delivers.
func noticeOps(ctx context.Context, e *env) (ops.Notices, *opsDone, error) {
	return openOps(ctx, e, (*client.Client).Notices, func(a *app) (ops.Notices, *opsDone, error) {
		svc, err := openNotices(ctx, e, a, slog.New(slog.NewTextHandler(e.stderr, nil)))
		if err != nil {
			return nil, nil, err
		}
		return ops.NewNotices(svc), &opsDone{app: a, ntc: svc}, nil
	})
}

// openNotices returns the notice service of the project: its notify channels, its exposures
// (checked against their targets, every problem printed) and the outbox. A project without an
// exposures folder has no exposures.
func openNotices(ctx context.Context, e *env, a *app, log *slog.Logger) (*notices.Service, error) {
	svc, err := a.Notices(ctx, projectTargets(e, a), log)
	var ps sqlfile.Problems
	if errors.As(err, &ps) {
		for _, p := range ps {
			fmt.Fprintln(e.stderr, p)
		}
		return nil, usagef("%d %s in the exposures", len(ps), pluralWord(len(ps), "problem", "problems"))
	}
	if err != nil {
		return nil, usagef("exposures: %v", err)
	}
	return svc, nil
}

// noticeOutput prints notices as the API shapes them (notices.ToJSON), so a local command and
// one through a server print the same.
type noticeOutput struct {
	w    io.Writer
	json bool
}

func (o noticeOutput) encode(v any) error {
	enc := json.NewEncoder(o.w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (o noticeOutput) list(ns []notices.JSON) error {
	if o.json {
		return o.encode(ns)
	}
	if len(ns) == 0 {
		fmt.Fprintln(o.w, "No notices. A notice is drafted when a backfill run is created.")
		return nil
	}
	tw := tabwriter.NewWriter(o.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tUPDATED\tTABLES\tTITLE")
	for _, n := range ns {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", n.ID, n.State, n.UpdatedAt.Format("2006-01-02 15:04"), strings.Join(n.Tables, ","), n.Title)
	}
	return tw.Flush()
}

// show prints one notice; n carries its history (ToJSON with full).
func (o noticeOutput) show(n notices.JSON) error {
	if o.json {
		return o.encode(n)
	}
	fmt.Fprint(o.w, n.Text)
	fmt.Fprintf(o.w, "\n# History\n\n")
	for _, t := range n.Transitions {
		line := fmt.Sprintf("%s  %-11s by %s", t.At.Format("2006-01-02 15:04 UTC"), t.To, t.Actor)
		if t.Reason != "" {
			line += ": " + t.Reason
		}
		fmt.Fprintln(o.w, line)
	}
	if len(n.Revisions) > 1 {
		fmt.Fprintf(o.w, "%d revisions of the text; the latest by %s\n", len(n.Revisions), n.Revisions[len(n.Revisions)-1].Actor)
	}
	for _, r := range n.Recipients {
		ack := "not acknowledged"
		if !r.AckedAt.IsZero() {
			ack = "acknowledged " + r.AckedAt.Format("2006-01-02 15:04 UTC")
		}
		fmt.Fprintf(o.w, "sent to %s: %s\n", r.Recipient, ack)
	}
	fmt.Fprintf(o.w, "\nPage: %s\n", n.URL)
	return nil
}

// deliverNotices makes one bounded delivery pass (ops.DeliverTimeout) and reports it on stderr
// (stdout stays one document); what is not delivered by then stays in the outbox for the
// server's worker or `trueup notice deliver`.
func deliverNotices(ctx context.Context, e *env, svc *notices.Service) error {
	rep, err := ops.NewNotices(svc).Deliver(ctx)
	if err != nil {
		return err
	}
	reportDeliveries(e, rep)
	return nil
}

func reportDeliveries(e *env, rep notices.Report) {
	waiting := ""
	if rep.Waiting > 0 {
		waiting = fmt.Sprintf(" (%d waiting for a retry not due yet)", rep.Waiting)
	}
	fmt.Fprintf(e.stderr, "deliveries: %d delivered, %d to retry, %d failed for good%s\n", rep.Delivered, rep.Retrying, rep.Failed, waiting)
}

// runWithOutbox runs serve with the notice delivery worker beside it, stopping the worker when
// serve returns.
func runWithOutbox(ctx context.Context, svc *notices.Service, serve func(context.Context) error) error {
	return runBeside(ctx, svc.Outbox().Run, serve)
}
