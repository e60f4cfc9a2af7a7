package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"

	"trueup/ops"
	"trueup/reconcile"
	tsql "trueup/sql"
)

func runDiff(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	oldRel := fs.String("old", "", "the old relation (e.g. orders__v1)")
	newRel := fs.String("new", "", "the new relation (e.g. orders__v2; default: --old, when the targets differ)")
	var key, measures, ignore, columns, maps, tolerances, precisions, partitions listFlag
	fs.Var(&key, "key", "columns identifying a row (comma-separated)")
	partition := fs.String("partition", "", "the partition column; without it the relations are compared whole")
	grain := fs.String("grain", "", "a date or timestamp partition column's partitions: day, hour or month (a timestamp's default is day)")
	fs.Var(&measures, "measure", "numeric columns to total per partition (repeatable, or comma-separated)")
	fs.Var(&ignore, "ignore", "columns to leave out of the comparison (repeatable, or comma-separated)")
	fs.Var(&columns, "columns", "compare only the key, the partition column and these columns (comma-separated)")
	fs.Var(&maps, "map", "OLD=NEW: the old relation's column OLD is NEW in the new one, for renamed columns (repeatable, or comma-separated)")
	where := fs.String("where", "", "SQL condition both sides are filtered by, each in its own engine, e.g. \"region = 'EU'\"")
	fs.Var(&tolerances, "tolerance", "COL=X: numbers within X (0.01, or 0.1%) are equal; X alone applies to every float/decimal column")
	fs.Var(&precisions, "precision", "COL=P: compare the column at P (s, ms, us, ns; or decimals, e.g. 2), not at the coarser of its two declared types")
	oldTarget := fs.String("old-target", "", "target of the old relation, by name or URL (default: --target or the config's default)")
	newTarget := fs.String("new-target", "", "target of the new relation, by name or URL (default: --target or the config's default)")
	expect := fs.String("expect", "", "file with the intended change, e.g. 'inside 2026-07-10..2026-07-18 rows +0..6%; outside identical'")
	fs.Var(&partitions, "only", "compare only these partitions (repeatable, or comma-separated)")
	format := fs.String("format", "text", "output: text, json, or rows (as --rows)")
	rows := fs.Bool("rows", false, "print every differing row as it is found, - for old and + for new (key and values), with no sample cap, instead of the summary")
	all := fs.Bool("all", false, "text output: list every partition, not only the ones that differ")
	state := fs.String("state", "", "without a trueup.yaml: keep the diff in this state file (default: printed, not kept)")
	rescan := fs.Bool("rescan", false, "read every partition of both sides, ignoring the fingerprints trueup recorded of the versions it built")
	samples := fs.Int("samples", 10, fmt.Sprintf("sample rows kept per kind per partition (at most %d); the text prints this many of each kind (without the flag, 5)", ops.MaxDiffSamples))
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	switch {
	case *format != "text" && *format != "json" && *format != "rows":
		return usagef("diff: --format %q: want text, json or rows", *format)
	case *rows && *format == "json":
		return usagef("diff: --rows prints row lines and --format json one JSON document: use one of them")
	case *format == "rows":
		*rows = true
	}
	if *oldTarget == "" {
		*oldTarget = e.globals.target
	}
	if *newTarget == "" {
		*newTarget = e.globals.target
	}
	if *newRel == "" && *oldTarget != *newTarget {
		*newRel = *oldRel // the same table in two targets, as reladiff compares them
	}
	if *oldRel == "" || *newRel == "" || len(key) == 0 {
		return usagef("diff: --old, --new and --key are required")
	}
	req := ops.DiffRequest{Old: *oldRel, New: *newRel, Key: key, Partition: *partition, Grain: *grain, Measures: measures, Ignore: ignore,
		Columns: columns, Map: maps, Where: *where,
		Tolerance: tolerances, Precision: precisions, OldTarget: *oldTarget, NewTarget: *newTarget, Only: partitions, Samples: *samples, Rescan: *rescan,
		Label: "cli", Actor: cliActor()}
	if *expect != "" {
		text, err := os.ReadFile(*expect)
		if err != nil {
			return usagef("diff: --expect: %v", err)
		}
		req.Expect = string(text)
	}
	if _, err := req.Spec(); err != nil {
		return usagef("diff: %v", err)
	}
	if err := e.localOnly("diff", map[string]bool{"state": *state != "", "rows": *rows}); err != nil {
		return err
	}
	d, done, err := diffOps(ctx, e, *state, *oldTarget, *newTarget)
	if err != nil {
		return err
	}
	defer done()
	var lines *bufio.Writer
	if *rows {
		// each row is written as it is found; the buffer only saves write calls
		lines = bufio.NewWriter(e.stdout)
		req.Rows = func(l reconcile.RowLine) error {
			_, err := lines.WriteString(l.Text() + "\n")
			return err
		}
	}
	res, err := d.Run(ctx, req)
	if lines != nil {
		if ferr := lines.Flush(); err == nil && ferr != nil {
			return fmt.Errorf("diff: %w", ferr)
		}
	}
	if err != nil { // one that cannot run as asked is invalid (exit 2) and says why
		return err
	}
	if e.globals.withoutProject() && *state == "" {
		res.ID = 0 // kept in memory only, gone when the command ends: no number to look up
	}
	if *rows {
		fmt.Fprintf(e.stderr, "trueup: rows: %d added, %d removed, %d changed, %d duplicate %s\n",
			res.Rows.Added, res.Rows.Removed, res.Rows.Changed, res.Rows.DuplicateKeys, pluralWord(int(res.Rows.DuplicateKeys), "key", "keys"))
		for _, n := range res.Notes { // what could not be streamed, and why
			fmt.Fprintf(e.stderr, "trueup: note: %s\n", n)
		}
		return diffOutcome(res)
	}
	shown := 0 // the text's own default
	if flagSet(fs, "samples") {
		shown = *samples
	}
	return reportDiff(e, *format, reconcile.TextOptions{All: *all, Samples: shown}, res)
}

// diffOps is the diff operations a command runs: through the server with --server (which
// opens only its own targets), else over the project's ledger, a side's target named or given
// as a URL (saved and shown without credentials); without a project (openLocal) both sides are
// URLs and the ledger is state's, or one in memory. done closes what was opened.
func diffOps(ctx context.Context, e *env, state, oldTarget, newTarget string) (ops.Diffs, func(), error) {
	if rc, err := e.remote(); rc != nil || err != nil {
		if err != nil {
			return nil, nil, err
		}
		return rc.Diffs(), func() {}, nil
	}
	a, err := openLocal(ctx, e, "diff", state, "name both sides' targets by URL: --target URL, or --old-target URL --new-target URL",
		oldTarget, newTarget)
	if err != nil {
		return nil, nil, err
	}
	side := func(ctx context.Context, name string) (tsql.Engine, string, error) {
		en, err := a.OpenTarget(ctx, name)
		if err != nil {
			return nil, "", err
		}
		return en, tsql.Redact(a.Name(name)), nil
	}
	return ops.NewDiffs(reconcile.NewStore(a.Ledger), side, ops.WithFingerprints(a.Ledger)), a.Close, nil
}

// reportDiff prints a diff and fails on an unexpected difference: the end of `trueup diff`,
// locally and through a server.
func reportDiff(e *env, format string, text reconcile.TextOptions, res *reconcile.Result) error {
	if format == "json" {
		if err := writeJSON(e.stdout, res); err != nil {
			return err
		}
	} else if err := res.WriteText(e.stdout, text); err != nil {
		return err
	}
	return diffOutcome(res)
}

// diffOutcome is how a diff ends: nil, or the failure (exit 1) of an unexpected difference.
func diffOutcome(res *reconcile.Result) error {
	if !res.ExpectationsMet {
		n := res.Counts()[reconcile.VerdictUnexpected]
		if n == 0 {
			return failedf("diff: columns were added or removed%s", savedAs(res.ID))
		}
		if res.Expectations == "" {
			// Without --expect a difference is not a broken expectation: say what differs.
			return failedf("diff: %d %s%s", n, pluralWord(n, "partition differs", "partitions differ"), savedAs(res.ID))
		}
		return failedf("diff: %d unexpected %s%s", n, pluralWord(n, "partition", "partitions"), savedAs(res.ID))
	}
	return nil
}

// savedAs names the diff a failure was saved as, "" for one not kept.
func savedAs(id int64) string {
	if id <= 0 {
		return ""
	}
	return fmt.Sprintf(" (diff %d)", id)
}
