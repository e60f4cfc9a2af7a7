package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	flow "trueup/app"
	"trueup/monitor"
	"trueup/notices"
	"trueup/ops"
	"trueup/ops/client"
	"trueup/server/page"
	tsql "trueup/sql"
	"trueup/views"
)

func runVersions(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	format := formatFlag(fs)
	retire := fs.String("retire", "", "retire (drop) this version, e.g. v1; never the live version or the rollback target")
	reason := fs.String("reason", "", "with --retire: why")
	writeTarget := fs.Bool("write-target", false, "print only the table writers must insert into now (the live version), for scripts")
	table, err := oneTable(fs, args, "versions TABLE [--format text|json] [--retire vN --reason TEXT] [--write-target]")
	if err != nil {
		return err
	}
	if *reason != "" && *retire == "" {
		return usagef("versions: --reason goes with --retire")
	}
	if *writeTarget && *retire != "" {
		return usagef("versions: --write-target and --retire do not go together")
	}
	t, done, err := tableOps(ctx, e, false)
	if *writeTarget && errors.Is(err, tsql.ErrLocked) {
		// Another local trueup (a backfill, check or serve) holds the ledger: the answer is
		// the view's, read from the target alone, as a pipeline's step needs it.
		return writeTargetFromView(ctx, e, table, *format)
	}
	if err != nil {
		return err
	}
	defer done.close()
	if *writeTarget {
		w, err := t.WriteTarget(ctx, ops.VersionsRequest{Target: e.globals.target, Table: table})
		if err != nil {
			return err
		}
		return printWriteTarget(e, w, *format)
	}
	var l views.ListingJSON
	if *retire != "" {
		l, err = t.Retire(ctx, ops.RetireRequest{Subject: e.cliSubject(table), Version: *retire, Reason: *reason})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "versions: retired %s %s\n", table, *retire)
	} else if l, err = t.Versions(ctx, ops.VersionsRequest{Target: e.globals.target, Table: table}); err != nil {
		return err
	}
	return reportVersions(e, *format, l.Listing(), l.Busy)
}

// reportVersions prints a table's versions; busy says who holds the table, if anyone.
func reportVersions(e *env, format string, l views.Listing, busy string) error {
	if format == "json" {
		return writeJSON(e.stdout, append([]views.VersionInfo{}, l.Versions...))
	}
	return writeVersions(e.stdout, l, busy)
}

// oneTable parses a command's flags, which may come before or after its one TABLE (or other
// NAME) argument, and checks its --format (formatFlag); usage begins with the command's name.
func oneTable(fs *flag.FlagSet, args []string, usage string) (string, error) {
	pos, err := parseMixed(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 || pos[0] == "" {
		return "", usagef("usage: trueup %s", usage)
	}
	if err := checkFormat(fs, usage); err != nil {
		return "", err
	}
	return pos[0], nil
}

// openTable is oneTable, then the table operations (tableOps, without notices) to run on the
// table it names.
func openTable(ctx context.Context, e *env, fs *flag.FlagSet, args []string, usage string) (string, ops.Tables, *opsDone, error) {
	table, err := oneTable(fs, args, usage)
	if err != nil {
		return "", nil, nil, err
	}
	t, done, err := tableOps(ctx, e, false)
	return table, t, done, err
}

// writeTargetFromView prints table's write target read from its target alone, the ledger not
// opened (ops.ViewWriteTarget).
func writeTargetFromView(ctx context.Context, e *env, table, format string) error {
	cfg, err := loadConfig(e.globals)
	if err != nil {
		return err
	}
	p, err := flow.OpenTargets(ctx, cfg, e.globals.target)
	if err != nil {
		return err
	}
	defer p.Close()
	eng, err := p.Engine(e.globals.target)
	if err != nil {
		return err
	}
	w, err := ops.ViewWriteTarget(ctx, eng, p.Name(e.globals.target), table)
	if err != nil {
		return err
	}
	return printWriteTarget(e, w, format)
}

func printWriteTarget(e *env, w ops.WriteTarget, format string) error {
	if format == "json" {
		return writeJSON(e.stdout, w)
	}
	_, err := fmt.Fprintln(e.stdout, w.WriteTarget)
	return err
}

// tableOps is the table operations a command runs: through the server with --server, else over
// the project's views services, recovered first as start-up does (an intent a crash left
// without an outcome is settled, each repair said on stderr). Swaps and rollbacks, those the
// recovery settles too, are told to the notices; with notify, a notices problem is said on
// stderr, and done delivers what they queued.
func tableOps(ctx context.Context, e *env, notify bool) (ops.Tables, *opsDone, error) {
	return openOps(ctx, e, (*client.Client).Tables, func(a *app) (ops.Tables, *opsDone, error) {
		log := slog.New(slog.NewTextHandler(e.stderr, nil))
		// A broken exposure file must not stand in the way of a rollback: warn and go on, the
		// notices can be completed by hand. Any command's start-up recovery completes the notice
		// of a swap a kill cut short, as serve's does (it stayed a draft until serve started).
		var ntc *notices.Service
		var err error
		if notify {
			if ntc, err = openNotices(ctx, e, a, log); err != nil {
				fmt.Fprintf(e.stderr, "trueup: notices will not hear about this: %v\n", oneLine(err))
				ntc = nil
			}
		} else if ntc, err = a.Notices(ctx, projectTargets(e, a), log); err != nil {
			ntc = nil // the command that publishes says why
		}
		names := a.Names
		if t := e.globals.target; t != "" && !slices.Contains(names, t) {
			if _, err := a.Engine(t); err != nil {
				return nil, nil, err
			}
			names = append(slices.Clip(names), t)
		}
		services := recoveredViews(ctx, e, a, names, ntc, log)
		if !notify {
			return ops.NewTables(services, a.Config.DefaultTarget), &opsDone{app: a}, nil
		}
		return ops.NewTables(services, a.Config.DefaultTarget), &opsDone{app: a, ntc: ntc}, nil
	})
}

// openOps is a command's operations: through the server with --server (served picks them from
// its client), else over the project, opened here for local to build them on; the project is
// closed again when local fails, else by the done it returns.
func openOps[T any](ctx context.Context, e *env, served func(*client.Client) T, local func(*app) (T, *opsDone, error)) (T, *opsDone, error) {
	var none T
	rc, err := e.remote()
	if err != nil {
		return none, nil, err
	}
	if rc != nil {
		return served(rc.Client), &opsDone{}, nil
	}
	a, err := openApp(ctx, e.globals)
	if err != nil {
		return none, nil, err
	}
	o, done, err := local(a)
	if err != nil {
		a.Close()
		return none, nil, err
	}
	return o, done, nil
}

// opsDone is what a local command closes, and delivers, when its operation is over.
type opsDone struct {
	app *app
	ntc *notices.Service
}

func (d *opsDone) close() {
	if d.app != nil {
		d.app.Close()
	}
}

// deliver sends what a local swap or rollback queued for subscribers (a server's outbox does that
// on its own).
func (d *opsDone) deliver(ctx context.Context, e *env) error {
	if d.ntc == nil {
		return nil
	}
	return deliverNotices(ctx, e, d.ntc)
}

// recoveredViews is the views service of each named target, recovered (app.Project.RecoveredViews),
// with the crash points of the tests; each repair, and a recovery that could not finish, is said
// on stderr.
func recoveredViews(ctx context.Context, e *env, a *app, names []string, ntc *notices.Service, log *slog.Logger) ops.TableServices {
	services, repairs, err := a.RecoveredViews(ctx, names, flow.ViewsOptions{Logger: log, Notices: ntc, Hooks: crashHooks()})
	for _, r := range repairs {
		fmt.Fprintf(e.stderr, "recovery: %s %s: %s\n", r.Target, r.Table, r.What)
	}
	if err != nil {
		// Go on: tables whose intent could not be settled stay locked and refuse a swap.
		fmt.Fprintf(e.stderr, "recovery incomplete: %v\n", oneLine(err))
	}
	return ops.TableServices(services)
}

// openTables gives serve the table operations over every target, recovered as start-up must
// before anything is served: the ledger and the views agree, whatever a crash left behind. The
// rules of the tables a swap or rollback moves are rerun by mon afterwards.
func openTables(ctx context.Context, a *app, ntc *notices.Service, mon *monitor.Monitor, log *slog.Logger) (ops.Tables, ops.TableServices, error) {
	all, repairs, err := a.RecoveredViews(ctx, a.Names, flow.ViewsOptions{Logger: log, Notices: ntc, Rules: mon, Hooks: crashHooks()})
	services := ops.TableServices(all)
	for _, r := range repairs {
		log.Info("recovery", "target", r.Target, "table", r.Table, "what", r.What)
	}
	if err != nil {
		// Serve anyway: a table whose intent could not be settled keeps its lock rows, so
		// swapping it is refused until a later start-up settles it; the others are fine.
		log.Error("recovery incomplete", "err", err)
	}
	return ops.NewTables(services, a.Config.DefaultTarget), services, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeVersions(w io.Writer, l views.Listing, busy string) error {
	fmt.Fprintf(w, "%s (target %s)", l.Table, l.Target)
	if l.Live != 0 {
		fmt.Fprintf(w, ": live v%d", l.Live)
	}
	if l.RollbackTarget != 0 {
		fmt.Fprintf(w, ", rollback to v%d", l.RollbackTarget)
	}
	fmt.Fprintln(w)
	if busy != "" {
		fmt.Fprintln(w, "busy:", busy)
	}
	writeNodeVersions(w, l)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tSTATE\tLIVE\tBUILT BY\tCREATED\tBACKFILL\tROWS\tCHECKSUM\tVS LIVE")
	for _, v := range l.Versions {
		live := ""
		switch {
		case v.Live:
			live = "live"
		case v.RollbackTarget:
			live = "rollback"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Name(), v.State, live, orDash(v.BuiltBy),
			v.CreatedAt.Format(time.DateTime), orDash(backfillOf(v.Version)), page.Thousands(v.Rows), orDash(v.Checksum), vsLive(v))
	}
	tw.Flush()
	for _, v := range l.Versions {
		if v.OverrideBy != "" {
			fmt.Fprintf(w, "%s was published past a failed validation by %s: %s\n", v.Name(), v.OverrideBy, v.OverrideReason)
		}
	}
	if len(l.History) > 0 {
		fmt.Fprintln(w, "\nrecent swaps and rollbacks:")
		for _, p := range l.History {
			fmt.Fprintf(w, "  #%d %s %s by %s at %s: %s", p.ID, p.Kind, p.State, p.Actor, p.StartedAt.Format(time.DateTime), p.Summary())
			if p.Reason != "" {
				fmt.Fprintf(w, " (%s)", p.Reason)
			}
			if left := p.NotCarriedSummary(); left != "" {
				fmt.Fprintf(w, "; not carried, inside the backfill's scope: %s", left)
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}

func backfillOf(v views.Version) string {
	if v.Backfill == "" {
		return ""
	}
	return fmt.Sprintf("%s (run %d)", v.Backfill, v.RunID)
}

func vsLive(v views.VersionInfo) string {
	if !v.HasLiveCompare {
		return "-"
	}
	if v.SameAsLive {
		return "identical"
	}
	if !v.ChecksumCompared {
		return fmt.Sprintf("%s rows (checksums not comparable: of different kinds, or a version written since; trueup diff compares)", page.SignedThousands(v.RowsVsLive))
	}
	return fmt.Sprintf("%s rows, checksum differs", page.SignedThousands(v.RowsVsLive))
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
