package main

import (
	"context"
	"flag"
	"fmt"

	"trueup/ops"
	"trueup/views"
)

// runAdopt turns a plain table into a logical table (its rows become TABLE__v1 under a view
// named TABLE), or with --undo reverses that while v1 is the only version.
func runAdopt(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	partition := fs.String("partition", "", "the date or timestamp column backfills of the table rebuild by (checked, and recorded)")
	grain := fs.String("grain", "", "the backfills' grain: day, hour or month")
	undo := fs.Bool("undo", false, "reverse an adopt: TABLE__v1 goes back under TABLE's name (only while v1 is the only version)")
	reason := fs.String("reason", "", "why, for the audit log")
	format := formatFlag(fs)
	table, t, done, err := openTable(ctx, e, fs, args, "adopt TABLE [--partition COL] [--grain day|hour|month] [--undo] [--reason TEXT]")
	if err != nil {
		return err
	}
	defer done.close()
	p, err := t.Adopt(ctx, ops.AdoptRequest{Subject: e.cliSubject(table), Partition: *partition, Grain: *grain,
		Reason: *reason, Undo: *undo})
	if err != nil {
		return err
	}
	if *format == "json" {
		return writeJSON(e.stdout, p)
	}
	if *undo {
		fmt.Fprintf(e.stdout, "%s is a plain table again in %s (#%d): %s__v1 went back under its name.\n", table, p.Target, p.ID, table)
		return nil
	}
	fmt.Fprintf(e.stdout, "adopted %s in %s (#%d, %d ms): readers of %s now read v1 (%s) through a view.\n",
		table, p.Target, p.ID, p.Duration().Milliseconds(), table, views.Physical(table, 1))
	if l, err := t.Versions(ctx, ops.VersionsRequest{Target: p.Target, Table: table}); err == nil {
		for _, v := range l.Listing().Versions {
			fmt.Fprintf(e.stdout, "  %s %s: %d rows, checksum %s\n", v.Name(), v.State, v.Rows, v.Checksum)
		}
	}
	fmt.Fprintf(e.stdout, "Writers must insert into %s now (a view takes no inserts). Undo while v1 is the only version: trueup adopt --undo %s\n",
		views.Physical(table, 1), table)
	return nil
}
