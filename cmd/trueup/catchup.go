package main

import (
	"context"
	"flag"
	"fmt"

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
	format := formatFlag(fs)
	table, t, done, err := openTable(ctx, e, fs, args, "catch-up TABLE [--dry-run] [--format text|json]")
	if err != nil {
		return err
	}
	defer done.close()
	if *dryRun {
		stale, err := t.Stale(ctx, ops.VersionsRequest{Target: e.globals.target, Table: table})
		if err != nil {
			return err
		}
		if *format == "json" {
			err = writeJSON(e.stdout, stale)
		} else {
			err = writeStale(e, table, stale)
		}
		if err == nil && len(stale) > 0 {
			return failedf("catch-up: %d old %s of %s written after it stopped being live", len(stale), pluralWord(len(stale), "version", "versions"), table)
		}
		return err
	}
	r, err := t.CatchUp(ctx, ops.CatchUpRequest{Subject: e.cliSubject(table)})
	if err != nil {
		return err
	}
	if *format == "json" {
		err = writeJSON(e.stdout, r)
	} else {
		err = writeCaughtUp(e, table, r)
	}
	if err == nil && len(r.NotCarried) > 0 {
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

func writeStale(e *env, table string, stale []views.StaleVersion) error {
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
