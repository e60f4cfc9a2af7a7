package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"trueup/ops"
)

// runPipeline is `trueup run NAME [--window W]`: the backfill's transform run as the production
// job, for the windows given, into the live versions (and the version a backfill is building).
func runPipeline(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	window := fs.String("window", "latest", "the partitions to compute: latest (the one holding now), a partition (2026-09-01), or FROM..TO")
	format := formatFlag(fs)
	name, err := oneTable(fs, args, "run BACKFILL [--window latest|DATE|FROM..TO] [--format text|json]")
	if err != nil {
		return err
	}
	b, done, err := backfillOps(ctx, e)
	if err != nil {
		return err
	}
	defer done.close()
	wr, err := b.RunWindows(ctx, ops.WindowRequest{Name: name, Window: *window, Actor: cliActor()})
	if err != nil {
		return err
	}
	if *format == "json" {
		return writeJSON(e.stdout, wr)
	}
	for _, t := range wr.Tables {
		var rows int64
		for _, n := range t.Rows {
			rows += n
		}
		into := t.Live
		if t.Building != "" {
			into += " and " + t.Building + " (being built)"
		}
		fmt.Fprintf(e.stdout, "%s %s: %d rows into %s\n", name, strings.Join(wr.Windows, ", "), rows, into)
	}
	return nil
}
