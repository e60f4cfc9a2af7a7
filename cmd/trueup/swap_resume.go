package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"

	flow "trueup/app"
	"trueup/notices"
	"trueup/views"
)

// runResume is `trueup swap TABLE --resume [--undo]`: it settles the half-done swap or rollback
// of TABLE (views.Service.Resume). It opens the project without start-up recovery, which would
// complete the publish before --undo could take it back.
func runResume(ctx context.Context, e *env, table string, resume, undo, other bool, format string) error {
	switch {
	case !resume:
		return usagef("swap: --undo goes with --resume: swap %s --resume --undo", table)
	case other:
		return usagef("swap: --resume takes no --to, --override or --dry-run: it settles the swap already recorded")
	}
	if err := e.localOnly("swap", map[string]bool{"resume": true}); err != nil {
		return err
	}
	a, err := openApp(ctx, e.globals)
	if err != nil {
		return err
	}
	defer a.Close()
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	var ntc *notices.Service
	if ntc, err = openNotices(ctx, e, a, log); err != nil {
		fmt.Fprintf(e.stderr, "trueup: notices will not hear about this: %v\n", oneLine(err))
		ntc = nil
	}
	target := a.Name(e.globals.target)
	if _, err := a.Engine(target); err != nil {
		return err
	}
	s := a.Views(target, flow.ViewsOptions{Logger: log, Notices: ntc, Hooks: crashHooks()})
	p, err := s.Resume(ctx, views.ResumeRequest{Table: table, Undo: undo, Actor: cliActor()})
	if err != nil {
		return err
	}
	nodes, err := s.PublishNodes(ctx, p.ID)
	if err != nil {
		return err
	}
	if format == "json" {
		if err := writeJSON(e.stdout, struct {
			views.Publish
			Nodes []views.NodeState `json:"nodes"`
		}{p, nodes}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "%s #%d (%s) %s: %s\n", p.Kind, p.ID, p.Summary(), p.State, p.Detail)
		for _, n := range nodes {
			fmt.Fprintf(e.stdout, "  node %s (shard %d, replica %d): %s\n", n.Node, n.Shard, n.Replica, n.State)
		}
	}
	return (&opsDone{ntc: ntc}).deliver(ctx, e)
}

// writeNodeVersions says, on a cluster, which version each node's view reads: during a
// half-done swap they differ.
func writeNodeVersions(w io.Writer, l views.Listing) {
	if len(l.Nodes) == 0 {
		return
	}
	head := "nodes:"
	down := slices.ContainsFunc(l.Nodes, func(n views.NodeVersion) bool { return !n.Reachable })
	switch {
	case views.Mixed(l.Nodes):
		head = "nodes (they read different versions: a half-done swap, which trueup swap " + l.Table + " --resume completes):"
	case down:
		head = "nodes (not all answer: what the others read is not known):"
	}
	fmt.Fprintln(w, head)
	for _, n := range l.Nodes {
		at := "reads " + orDash(views.VersionName(n.Version))
		if !n.Reachable {
			at = "does not answer: " + n.Error
		}
		fmt.Fprintf(w, "  %s (shard %d, replica %d): %s\n", n.Node, n.Shard, n.Replica, at)
	}
}
