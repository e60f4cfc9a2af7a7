package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"trueup/backfill"
	"trueup/fault"
	"trueup/notices"
	"trueup/ops"
	"trueup/rules"
	"trueup/sqlfile"
)

const backfillUsage = "backfill plan|dry-run|run|status|resume|retry|cancel|verify NAME, or backfill history"

func runBackfill(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	format := formatFlag(fs)
	from := fs.String("from", "", "first partition (YYYY-MM-DD): overrides the file's scope")
	to := fs.String("to", "", "last partition, inclusive")
	sample := fs.Int("sample", 0, "run: build and validate only this many partitions, then stop for review")
	fullRewrite := fs.Bool("allow-full-rewrite", false, "run: rewrite a large table that has no partitions (the plan says when it must)")
	newVersion := fs.Bool("new-version", false, "run: build a new version even though the table has a validated version not published yet")
	catchUp := fs.Bool("catch-up", false, "run: recompute the partitions of the latest built run whose live rows changed inside its scope since the build (the swap refuses otherwise)")
	verb, pos, err := parseVerb(fs, args, backfillUsage)
	if err != nil {
		return err
	}
	name := ""
	switch {
	case verb == "history" && len(pos) == 0:
	case verb == "history" || len(pos) != 1:
		return usagef("usage: trueup %s", backfillUsage)
	default:
		name = pos[0]
	}
	scope, err := scopeFlags(*from, *to)
	if err != nil {
		return err
	}
	if verb == "verify" && scope == nil {
		return usagef("backfill verify: give --from and --to")
	}
	if *sample < 0 {
		return usagef("backfill: --sample %d: want a positive number", *sample)
	}
	out := &backfillOutput{w: e.stdout, json: *format == "json"}
	switch verb {
	case "plan", "dry-run", "run", "resume", "retry", "status", "cancel", "history":
	case "verify":
		if e.globals.server != "" {
			return usagef("backfill verify works only locally, not with --server")
		}
		return backfillVerify(ctx, e, name, scope, out)
	default:
		return usagef("backfill: unknown action %q (want %s)", verb, backfillUsage)
	}
	b, done, err := backfillOps(ctx, e)
	if err != nil {
		return err
	}
	defer done.close()
	req := ops.BackfillRequest{Name: name, Scope: scope, Actor: cliActor()}
	switch verb {
	case "plan":
		p, err := b.Plan(ctx, req)
		if err != nil {
			return backfillFailed("plan", err)
		}
		return reportPlan(out, name, p)
	case "dry-run":
		pv, err := b.DryRun(ctx, req)
		if err != nil {
			return backfillRefused("dry-run", err)
		}
		return reportDryRun(out, name, pv)
	case "run":
		run, err := b.Run(ctx, ops.BackfillRunRequest{Name: name, Sample: *sample, Scope: scope, Actor: cliActor(),
			AllowFullRewrite: *fullRewrite, NewVersion: *newVersion, CatchUp: *catchUp})
		if err != nil {
			return backfillRefused("run", err) // another run holding the table is a conflict: exit 1, as a 409
		}
		if *catchUp {
			fmt.Fprintf(e.stderr, "backfill %s: catching up run %d: carrying what live gained outside its scope, recomputing what it changed inside, validating again%s\n", name, run.ID, done.where())
		} else {
			fmt.Fprintf(e.stderr, "backfill %s: run %d building %s%s\n", name, run.ID, versionsOf(run), done.where())
		}
		return awaitBuilt(ctx, e, b, done, name, out)
	case "resume", "retry":
		run, err := b.Resume(ctx, req)
		if err != nil {
			return backfillRefused("resume", err)
		}
		fmt.Fprintf(e.stderr, "backfill %s: resuming run %d (%s)%s\n", name, run.ID, run.State, done.where())
		return awaitBuilt(ctx, e, b, done, name, out)
	case "status":
		st, err := b.Status(ctx, req)
		if err != nil {
			return backfillRefused("status", err)
		}
		return out.status(st)
	case "cancel":
		if _, err := b.Cancel(ctx, req); err != nil {
			return backfillRefused("cancel", err)
		}
		st, err := awaitStopped(ctx, b, name)
		if err != nil {
			return backfillRefused("cancel", err)
		}
		kept, err := announcedNotice(ctx, done.notices, name, st.RunID)
		if err != nil {
			return backfillFailed("cancel", err)
		}
		return out.cancelled(st, kept)
	}
	// history
	h, err := b.History(ctx)
	if err != nil {
		return backfillFailed("history", err)
	}
	return out.history(h)
}

// backfillOps is the backfill operations a command runs: through the server with --server, else
// over the project's backfills as serve wires them (a backfill.Service, which builds a run in
// the background of this process), with the progress bar on a terminal, the crash point and
// the notice drafter.
func backfillOps(ctx context.Context, e *env) (ops.Backfills, *backfillDone, error) {
	if rc, err := e.remote(); rc != nil || err != nil {
		if err != nil {
			return nil, nil, err
		}
		return rc.Backfills(), &backfillDone{server: rc.Base(), notices: rc.Notices()}, nil
	}
	a, r, ntc, err := openBackfillRunner(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	// No logger: a run that fails says why in its status, which the command reports.
	svc := &backfill.Service{Runner: r}
	return ops.NewBackfills(svc), &backfillDone{app: a, svc: svc, notices: ops.NewNotices(ntc)}, nil
}

// openBackfillRunner opens the project and wires its backfill runner, and the notice service it
// drafts with, as a local command runs it.
func openBackfillRunner(ctx context.Context, e *env) (*app, *backfill.Runner, *notices.Service, error) {
	a, err := openApp(ctx, e.globals)
	if err != nil {
		return nil, nil, nil, err
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ntc, err := openNotices(ctx, e, a, log)
	if err != nil {
		// The backfill files' problems are said too (each on stderr): one pass fixes both.
		newBackfillRunner(ctx, e, a, nil, log)
		a.Close()
		return nil, nil, nil, err
	}
	var opts []backfill.Option
	if isTerminal(e.stderr) {
		opts = append(opts, backfill.WithProgress(progressBar(e.stderr)))
	}
	r, err := newBackfillRunner(ctx, e, a, ntc, log, opts...)
	if err != nil {
		a.Close()
		return nil, nil, nil, err
	}
	return a, r, ntc, nil
}

// backfillDone is what a backfill command holds besides its operations: the server it goes
// through, or the local service building its run and the app under it.
type backfillDone struct {
	server string
	app    *app
	svc    *backfill.Service
	// notices are the notices of the project's runs, where the run is built.
	notices ops.Notices
}

// where says on which server a run is being built ("" locally).
func (d *backfillDone) where() string {
	if d.server == "" {
		return ""
	}
	return " on " + d.server
}

// settle waits until a local build has wholly ended (its notice drafted): the status said it
// stopped. Through a server there is nothing to wait for.
func (d *backfillDone) settle() {
	if d.svc != nil {
		d.svc.Close()
	}
}

func (d *backfillDone) close() {
	d.settle() // a local build left going (an error while waiting) stops after its partitions in flight
	if d.app != nil {
		d.app.Close()
	}
}

func scopeFlags(from, to string) (*backfill.Scope, error) {
	scope, err := backfill.ParseScope(from, to)
	if err != nil {
		return nil, usagef("backfill: %w", err)
	}
	return scope, nil
}

// newBackfillRunner is the runner of the project's backfills on --target (app.Project.BackfillRunner),
// with opts and, last, the crash point of the tests; each problem of the backfill or rule files
// is said on stderr.
func newBackfillRunner(ctx context.Context, e *env, a *app, ntc *notices.Service, log *slog.Logger, opts ...backfill.Option) (*backfill.Runner, error) {
	// After opts: a progress bar is drawn before the process is killed, as it always was.
	for point, state := range map[string]string{"backfill.partition-done": backfill.PartDone, "pipeline.window-done": backfill.WindowDone} {
		if crash := crashPoint(point); crash != nil {
			opts = append(opts, backfill.WithProgress(func(p backfill.Progress) {
				if p.State == state {
					crash()
				}
			}))
		}
	}
	r, err := a.BackfillRunner(ctx, e.globals.target, ntc, log, opts...)
	var le *rules.LoadError
	switch {
	case err == nil:
		return r, nil
	case errors.As(err, &le):
		return nil, ruleProblems(e, "check", err)
	case fault.Of(err) != fault.None && !errors.As(err, new(sqlfile.Problems)):
		return nil, err
	}
	return nil, backfillProblems(e, err)
}

// backfillProblems prints each problem of the backfill files as path:line: message and
// returns the usage error that ends the command.
func backfillProblems(e *env, err error) error {
	var ps sqlfile.Problems
	if !errors.As(err, &ps) {
		return usagef("backfill: %v", err)
	}
	for _, p := range ps {
		fmt.Fprintln(e.stderr, p)
	}
	return usagef("backfill: %d %s in the backfill files, nothing was run", len(ps), pluralWord(len(ps), "problem", "problems"))
}

// backfillRefused is err as a backfill command answers it. An error of a kind (fault) is the
// backfill package's sentence, which a server answers too, with its exit code; any other
// failure (the warehouse, the ledger) is named after the command and exits 2, as it always has.
func backfillRefused(verb string, err error) error {
	if fault.Of(err) != fault.None {
		return err
	}
	return usagef("%s: %w", strings.TrimSpace("backfill "+verb), err)
}

// backfillFailed is err as plan and history answer it: an error of a kind as it is, any other
// failure named after the command, exit 1.
func backfillFailed(verb string, err error) error {
	if fault.Of(err) != fault.None {
		return err
	}
	return fmt.Errorf("backfill %s: %w", verb, err)
}

type backfillOutput struct {
	w    io.Writer
	json bool
}

// history prints the count of past runs by reason.
func (o *backfillOutput) history(h []backfill.ReasonCount) error {
	if o.json {
		return o.encode(h)
	}
	fmt.Fprintf(o.w, "%-14s %6s %7s\n", "reason", "runs", "tables")
	for _, c := range h {
		fmt.Fprintf(o.w, "%-14s %6d %7d\n", c.Reason, c.Runs, c.Tables)
	}
	return nil
}

// status prints a run's status, as JSON or as text.
func (o *backfillOutput) status(st *backfill.Status) error {
	if o.json {
		return o.encode(st)
	}
	writeStatus(o.w, st)
	return nil
}

// keptNotice is the announced notice of a cancelled run: a cancel leaves it announced (it may be
// a pause), so the command says what to do if the change is called off.
type keptNotice struct {
	ID    int64         `json:"id"`
	State notices.State `json:"state"`
	Note  string        `json:"note"`
}

// announcedNotice is the notice of run runID of backfill name when it was announced, else nil.
func announcedNotice(ctx context.Context, n ops.Notices, name string, runID int64) (*keptNotice, error) {
	all, err := n.List(ctx, ops.NoticeListRequest{State: notices.StateAnnounced})
	if err != nil {
		return nil, err
	}
	for _, j := range all {
		if j.Backfill == name && j.RunID == runID {
			return &keptNotice{ID: j.ID, State: j.State, Note: fmt.Sprintf(
				"notice %d was announced to subscribers; it stays announced: withdraw it with trueup notice withdraw %d --reason … if the change is called off", j.ID, j.ID)}, nil
		}
	}
	return nil, nil
}

// cancelled prints a cancelled run's status and, when its notice was announced, what became of
// it (JSON: the status with "notice").
func (o *backfillOutput) cancelled(st *backfill.Status, kept *keptNotice) error {
	if o.json {
		return o.encode(struct {
			*backfill.Status
			Notice *keptNotice `json:"notice,omitempty"`
		}{st, kept})
	}
	writeStatus(o.w, st)
	if kept != nil {
		fmt.Fprintln(o.w, kept.Note)
	}
	return nil
}

func (o *backfillOutput) encode(v any) error {
	enc := json.NewEncoder(o.w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// reportPlan prints a plan and fails when findings block it.
func reportPlan(out *backfillOutput, name string, p *backfill.Plan) error {
	if out.json {
		if err := out.encode(p); err != nil {
			return err
		}
	} else {
		writePlan(out.w, p)
	}
	return blockedPlan("backfill plan", name, p)
}

// blockedPlan is the error of a command whose plan has blocking findings: bad input, exit 2,
// whether the command was plan, dry-run or run (backfill/README.md).
func blockedPlan(cmd, name string, p *backfill.Plan) error {
	if p == nil || !p.Blocked() {
		return nil
	}
	n := countBlocking(p)
	return usagef("%s %s: blocked by %d %s, nothing was run", cmd, name, n, pluralWord(n, "finding", "findings"))
}

func countBlocking(p *backfill.Plan) int {
	n := 0
	for _, f := range p.Findings {
		if f.Severity == "blocking" {
			n++
		}
	}
	return n
}

func writePlan(w io.Writer, p *backfill.Plan) {
	fmt.Fprintf(w, "Backfill plan: %s\n\n", p.Backfill)
	if p.DownstreamOnly {
		writeDownstreamPlan(w, p)
		return
	}
	if p.Description != "" {
		fmt.Fprintf(w, "  Description  %s\n", p.Description)
	}
	fmt.Fprintf(w, "  Objective    %s\n", p.Objective)
	fmt.Fprintf(w, "  Reason       %s\n", p.Reason)
	fmt.Fprintf(w, "  Table        %s (live %s, target %s)\n", p.Table, p.Live, p.Target)
	fmt.Fprintf(w, "  Scope        %s: %d %s %s\n", p.Scope, len(p.Partitions), p.Grain, pluralWord(len(p.Partitions), "partition", "partitions"))
	if len(p.Partitions) > 0 {
		fmt.Fprintf(w, "               %s\n", abbreviate(p.Partitions, 12))
	}
	inputs := "ok"
	if !p.InputsOK {
		inputs = "MISSING"
	}
	fmt.Fprintf(w, "  Inputs       %s", inputs)
	for _, in := range p.Inputs {
		state := in.Presence(func(missing []string) string {
			return fmt.Sprintf("missing %d %s", len(missing), pluralWord(len(missing), "partition", "partitions"))
		})
		fmt.Fprintf(w, "\n               %s: %s", in.Relation, state)
	}
	fmt.Fprintln(w)
	for i, l := range p.Layouts {
		label := "  Partitions   "
		if i > 0 {
			label = "               "
		}
		text := l.Text
		if l.Table != p.Table {
			text = l.Table + ": " + text
		}
		fmt.Fprintf(w, "%s%s\n", label, text)
	}
	fmt.Fprintf(w, "  Write        %s\n", p.Write)
	fmt.Fprintf(w, "  Pace         concurrency %d, throttle %s", p.Concurrency, p.Throttle)
	if p.Window != "" {
		fmt.Fprintf(w, ", only %s UTC", p.Window)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  Downstream   %d refreshes", len(p.Downstream))
	for _, t := range p.RefreshesByTable() {
		fmt.Fprintf(w, "\n               %s: %d %s", t.Table, t.Partitions, pluralWord(t.Partitions, "partition", "partitions"))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  Validation   rules: %s; reconcile against the live version: %s\n", orNone(strings.Join(p.Validation, ", ")), orNone(p.Expect))
	fmt.Fprintf(w, "  Rollback     %s\n", p.Rollback)
	fmt.Fprintf(w, "  Notice       %s\n", p.Notice)
	fmt.Fprintf(w, "  Score        %d/4 backfillable\n", p.Score)
	for _, m := range p.ScoreMissing {
		fmt.Fprintf(w, "               - %s\n", m)
	}
	writeFindings(w, p)
}

// writeDownstreamPlan prints the plan of a backfill that only refreshes a downstream table: what
// it computes and which backfills run it, not a scope it does not have.
func writeDownstreamPlan(w io.Writer, p *backfill.Plan) {
	if p.Description != "" {
		fmt.Fprintf(w, "  Description  %s\n", p.Description)
	}
	fmt.Fprintf(w, "  Table        %s (live %s, target %s)\n", p.Table, p.Live, p.Target)
	fmt.Fprintf(w, "  Refreshed by %s\n", strings.Join(p.RefreshedBy, ", "))
	fmt.Fprintf(w, "  Expect       %s\n", orNone(p.Expect))
	writeFindings(w, p)
}

func writeFindings(w io.Writer, p *backfill.Plan) {
	if len(p.Findings) > 0 {
		fmt.Fprintln(w, "\nFindings")
		for _, f := range p.Findings {
			fmt.Fprintf(w, "  %-9s %s\n", strings.ToUpper(f.Severity), f.Message)
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
