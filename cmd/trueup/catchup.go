package main

import (
	"context"
	"flag"
	"fmt"
	"slices"

	"trueup/ops"
	"trueup/views"
)

// runCatchUp carries into a table's live version what writers wrote to its other versions after
// they stopped being live (a pipeline that kept writing v1 after the swap). With --dry-run it
// lists them and exits 1 when there are any, for a check in CI. Partitions inside a backfill's
// scope are not carried (the backfill rebuilt them): it says why and what to do, and exits 1, as
// the table is not caught up.
func runCatchUp(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	dryRun := fs.Bool("dry-run", false, "list what would be carried, change nothing (exit 1 when there is any)")
	ack := fs.Bool("acknowledge", false, "carry nothing: the partitions inside a backfill's scope that catch-up does not carry were dealt with, stop reporting them")
	reason := fs.String("reason", "", "with --acknowledge: why, for the audit log")
	format := formatFlag(fs)
	table, t, done, err := openTable(ctx, e, fs, args, "catch-up TABLE [--dry-run | --acknowledge [--reason TEXT]] [--format text|json]")
	if err != nil {
		return err
	}
	defer done.close()
	r, err := t.CatchUp(ctx, ops.CatchUpRequest{Subject: e.cliSubject(table), DryRun: *dryRun, Acknowledge: *ack, Reason: *reason})
	if err != nil {
		return err
	}
	switch {
	case *format == "json":
		err = writeJSON(e.stdout, r)
	case *ack:
		err = writeAcknowledged(e, table, r)
	case *dryRun:
		err = writeWouldCatchUp(e, table, r)
	default:
		err = writeCaughtUp(e, table, r)
	}
	if n := len(staleOf(r)); err == nil && *dryRun && n > 0 {
		return failedf("catch-up: %d old %s of %s written after it stopped being live", n, pluralWord(n, "version", "versions"), table)
	}
	if err == nil && !*dryRun && len(r.NotCarried) > 0 {
		n := 0
		for _, sv := range r.NotCarried {
			n += len(sv.InScope)
		}
		return failedf("catch-up: %s is not caught up: %d %s inside a backfill's scope not carried", table, n, pluralWord(n, "partition", "partitions"))
	}
	return err
}

func writeCaughtUp(e *env, table string, r views.CatchUpResult) error {
	if len(r.Carried) == 0 && len(r.NotCarried) == 0 {
		_, err := fmt.Fprintf(e.stdout, "%s: nothing to catch up: no old version was written after it stopped being live\n", table)
		return err
	}
	for _, sv := range r.Carried {
		fmt.Fprintf(e.stdout, "caught up %s: carried %s from %s into %s\n", table, views.CarriedSummary(sv.Partitions),
			views.Physical(table, sv.Version), views.Physical(table, sv.Live))
		for _, c := range sv.Partitions {
			fmt.Fprintf(e.stdout, "  %s\n", c)
		}
	}
	for _, sv := range r.NotCarried {
		fmt.Fprintf(e.stdout, "%s is not caught up: %s\n", table, sv)
		writeNotCarried(e, sv)
	}
	return nil
}

// staleOf is the stale versions a catch-up's answer is about: each carried one (with its
// partitions inside a scope too), then each with only such partitions.
func staleOf(r views.CatchUpResult) []views.StaleVersion {
	out := slices.Clone(r.Carried)
	for _, sv := range r.NotCarried {
		if !slices.ContainsFunc(out, func(c views.StaleVersion) bool { return c.Version == sv.Version }) {
			out = append(out, sv)
		}
	}
	return out
}

func writeAcknowledged(e *env, table string, r views.CatchUpResult) error {
	if len(r.Acknowledged) == 0 {
		_, err := fmt.Fprintf(e.stdout, "%s: nothing to acknowledge: no partition inside a backfill's scope was written after its version stopped being live\n", table)
		return err
	}
	for _, sv := range r.Acknowledged {
		fmt.Fprintf(e.stdout, "%s: acknowledged %s of %s, not carried: no longer reported\n", table, views.CarriedList(sv.InScope), views.Physical(table, sv.Version))
	}
	return nil
}

// writeWouldCatchUp prints a catch-up's dry run: each old version written after it stopped
// being live, and what of it a catch-up would not carry.
func writeWouldCatchUp(e *env, table string, r views.CatchUpResult) error {
	stale := staleOf(r)
	if len(stale) == 0 {
		_, err := fmt.Fprintf(e.stdout, "%s: no old version was written after it stopped being live\n", table)
		return err
	}
	for _, sv := range stale {
		fmt.Fprintln(e.stdout, sv.String())
		writeNotCarried(e, sv)
	}
	return nil
}

func writeNotCarried(e *env, sv views.StaleVersion) {
	for _, line := range sv.NotCarried() {
		fmt.Fprintf(e.stdout, "  %s\n", line)
	}
}
