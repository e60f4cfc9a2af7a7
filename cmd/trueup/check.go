package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"trueup/monitor"
	"trueup/notices"
	"trueup/rules"
	tsql "trueup/sql"
)

// listFlag collects a repeatable flag; each value may also be a comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func runCheck(ctx context.Context, e *env, args []string) error {
	fs := e.flags("check")
	var names, tags listFlag
	fs.Var(&names, "rule", "run only this rule (repeatable, or comma-separated)")
	fs.Var(&tags, "tag", "run only rules with this tag (repeatable, or comma-separated)")
	format := fs.String("format", "text", "output: text, json or junit")
	explain := fs.Bool("explain", false, "print the SQL each rule compiles to, fused per relation, without running it")
	accept := fs.Bool("accept-schema", false, "record the current columns as the snapshot of the schema rules run")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	switch *format {
	case "text", "json", "junit":
	default:
		return usagef("check: --format %q: want text, json or junit", *format)
	}
	// --target makes the rules without a target: of their own run on another target; a server
	// runs its rules on the targets it was configured with.
	if err := e.localOnly("check", map[string]bool{"explain": *explain, "accept-schema": *accept, "target": e.globals.target != ""}); err != nil {
		return err
	}
	if rc, err := e.remote(); rc != nil || err != nil {
		if err != nil {
			return err
		}
		var run rules.Run
		body := map[string][]string{"rules": names, "tags": tags}
		if err := rc.call(ctx, "check", "POST", "check", nil, body, &run); err != nil {
			return err
		}
		return reportRun(e, *format, &run)
	}
	a, err := openApp(ctx, e.globals)
	if err != nil {
		return err
	}
	defer a.close()
	targets := projectTargets(e, a)
	if t := e.globals.target; t != "" && t != a.cfg.DefaultTarget {
		// a check of another target is kept in the history, named without credentials, and
		// leaves the rules' monitored state and alerts to the configured targets
		targets.Chosen = tsql.Redact(t)
	}
	set, err := loadRules(ctx, e, a.cfg.ProjectDir("rules"), targets)
	if err != nil {
		return err
	}
	selected, err := set.Select(names, tags)
	if err != nil {
		return err // an unknown rule: not found
	}
	if len(selected) == 0 {
		return usagef("check: no rule matches --rule %s --tag %s", names.String(), tags.String())
	}
	store := rules.NewStore(a.ledger)
	runner := rules.NewRunner(targets, rules.WithSchemaStore(store), rules.WithAcceptSchema(*accept))
	if *explain {
		return writeExplain(e.stdout, *format, runner.Plan(selected))
	}
	run := runner.Run(ctx, selected)
	run.Trigger = rules.TriggerCLI
	if _, err := store.SaveRun(ctx, run, cliActor()); err != nil {
		return err
	}
	sendCheckAlerts(ctx, e, a, store, set)
	return reportRun(e, *format, run)
}

// checkDeliveryWait bounds check's delivery pass; what is not sent by then waits in the outbox.
const checkDeliveryWait = 15 * time.Second

// sendCheckAlerts hands the alerts waiting in the ledger (this run's state changes, and any
// recorded earlier and not handed on yet) to the notices outbox, as serve does after its runs,
// then makes one delivery pass so that subscribers hear of them before check returns. What
// cannot be delivered now is not lost: an alert not enqueued waits in rule_alerts, a delivery
// not made waits in the outbox, for the next check or the server. Failing to deliver does not
// change check's exit status, which is about the rules.
func sendCheckAlerts(ctx context.Context, e *env, a *app, store *rules.Store, set *rules.Set) {
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	ob := notices.NewOutbox(a.ledger, noticeChannels(a.cfg.Notify), notices.OutboxOptions{Logger: log})
	tables := map[string]string{}
	for _, r := range set.Rules {
		tables[r.Name] = r.Table
	}
	tableOf := func(rule string) string { return tables[rule] }
	if _, err := store.SendAlerts(ctx, notices.AlertSender(ob, a.cfg.Notify.PublicURL, tableOf)); err != nil {
		log.Error("alerts not handed on; the next check or the server sends them", "err", err)
	}
	// the pass sends whatever is due in the outbox, also what an earlier check could not; a
	// receiver that hangs does not hold check up for longer than checkDeliveryWait
	dctx, cancel := context.WithTimeout(ctx, checkDeliveryWait)
	defer cancel()
	if _, err := ob.Deliver(dctx); err != nil {
		log.Error("outbox delivery pass failed; the next check or the server retries it", "err", err)
	}
}

// reportRun prints a run and fails when an error-severity rule failed: the end of `trueup
// check`, locally and through a server.
func reportRun(e *env, format string, run *rules.Run) error {
	if err := writeRun(e.stdout, format, run); err != nil {
		return err
	}
	if run.Failed() {
		n := 0
		for _, r := range run.Results {
			if r.Severity == rules.SeverityError && r.Failed() {
				n++
			}
		}
		return failedf("check: %d error-severity %s failed (run %d)", n, pluralWord(n, "rule", "rules"), run.ID)
	}
	return nil
}

// loadRules loads and validates the project's rules; every problem goes to stderr, one a line.
func loadRules(ctx context.Context, e *env, dir string, targets rules.Targets) (*rules.Set, error) {
	return loadRulesFor(ctx, e, "check", dir, targets)
}

// loadRulesFor is loadRules with the command named in its messages.
func loadRulesFor(ctx context.Context, e *env, cmd, dir string, targets rules.Targets) (*rules.Set, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, usagef("%s: no rules folder at %s (rules live in rules/<table>/<rule>.sql beside the config)", cmd, dir)
	}
	shown := dir
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, dir); err == nil && !strings.HasPrefix(rel, "..") {
			shown = rel
		}
	}
	set, err := rules.Load(ctx, os.DirFS(dir), filepath.ToSlash(shown), targets)
	var le *rules.LoadError
	if errors.As(err, &le) {
		for _, p := range le.Problems {
			fmt.Fprintln(e.stderr, p)
		}
		return nil, usagef("%s: %d %s in the rule set, nothing was run", cmd, len(le.Problems), pluralWord(len(le.Problems), "problem", "problems"))
	}
	if err != nil {
		return nil, usagef("%s: %v", cmd, err)
	}
	return set, nil
}

// projectTargets are the engines rules run on; --target picks the default one.
func projectTargets(e *env, a *app) rules.TargetMap {
	targets := rules.TargetMap{Default: a.cfg.DefaultTarget, Engines: a.targets}
	if e.globals.target != "" {
		targets.Default = e.globals.target
	}
	return targets
}

// openMonitor loads the project's rules for serve, refusing a broken rule set as check does,
// and returns the monitor that runs the scheduled ones. A project without a rules folder
// serves with no rules.
func openMonitor(ctx context.Context, e *env, a *app, log *slog.Logger, opts ...monitor.Option) (*monitor.Monitor, error) {
	targets := projectTargets(e, a)
	var set []*rules.Rule
	if dir := a.cfg.ProjectDir("rules"); dirExists(dir) {
		loaded, err := loadRulesFor(ctx, e, "serve", dir, targets)
		if err != nil {
			return nil, err
		}
		set = loaded.Rules
	}
	store := rules.NewStore(a.ledger)
	runner := rules.NewRunner(targets, rules.WithSchemaStore(store))
	opts = append([]monitor.Option{monitor.WithLogger(log)}, opts...)
	return monitor.New(set, runner, store, monitor.NewLedgerSlots(a.ledger), opts...), nil
}

func dirExists(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.IsDir()
}

// runWithMonitor runs the monitor beside serve until either ends; the other is then stopped.
func runWithMonitor(ctx context.Context, mon *monitor.Monitor, serve func(context.Context) error) error {
	if err := mon.Load(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- mon.Run(ctx) }()
	err := serve(ctx)
	cancel()
	if merr := <-done; err == nil {
		err = merr
	}
	return err
}

func cliActor() string {
	if u := os.Getenv("USER"); u != "" {
		return "cli:" + u
	}
	return "cli"
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func writeRun(w io.Writer, format string, run *rules.Run) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(run)
	case "junit":
		return writeJUnit(w, run)
	}
	for _, r := range run.Results {
		label := strings.ToUpper(string(r.Status))
		if r.Status == rules.StatusFail && r.Severity == rules.SeverityWarn {
			label = "WARN"
		}
		fmt.Fprintf(w, "%-5s %-32s %-13s", label, r.Rule, r.Kind)
		if r.Status != rules.StatusPass {
			fmt.Fprintf(w, " %s", r.Message)
		}
		fmt.Fprintln(w)
		if len(r.FailingPartitions) > 0 {
			fmt.Fprintf(w, "      failing partitions (%d): %s\n", len(r.FailingPartitions), abbreviate(r.FailingPartitions, 12))
		}
		if r.Status == rules.StatusFail {
			for _, row := range r.Sample {
				fmt.Fprintf(w, "      %s\n", sampleLine(row))
			}
		}
	}
	pass, fail, errs := run.Counts()
	fmt.Fprintf(w, "\nrun %d: %d rules, %d passed, %d failed, %d could not run; %d queries in %.2fs\n",
		run.ID, len(run.Results), pass, fail, errs, run.Queries, run.Finished.Sub(run.Started).Seconds())
	return nil
}

func abbreviate(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(", … (%d more)", len(items)-n)
}

func sampleLine(row rules.Row) string {
	parts := make([]string, len(row))
	for i, f := range row {
		v := "NULL"
		if f.Value != nil {
			v = tsql.AsText(f.Value)
		}
		parts[i] = f.Name + "=" + v
	}
	return strings.Join(parts, "  ")
}

func writeExplain(w io.Writer, format string, plan *rules.Plan) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(plan)
	}
	fmt.Fprintf(w, "-- %d rules in %d queries (follow-up queries for samples and exact counts run only for failing rules)\n\n",
		len(plan.Rules), len(plan.Queries))
	for i, q := range plan.Queries {
		fmt.Fprintf(w, "-- query %d on %s\n%s;\n\n", i+1, q.Target, q.SQL)
	}
	for _, r := range plan.Rules {
		qs := make([]string, len(r.Queries))
		for i, q := range r.Queries {
			qs[i] = fmt.Sprint(q + 1)
		}
		fmt.Fprintf(w, "-- %s (%s) reads query %s: %s\n", r.Rule, r.Kind, strings.Join(qs, ", "), r.Judge)
		if r.Error != "" {
			fmt.Fprintf(w, "--   cannot run: %s\n", r.Error)
		}
	}
	return nil
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Time      float64     `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Class     string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

// writeJUnit reports one test case per rule. A failing warn-severity rule is not a JUnit
// failure (it does not fail the check either): its finding goes to system-out.
func writeJUnit(w io.Writer, run *rules.Run) error {
	suite := junitSuite{Name: "trueup rules", Time: run.Finished.Sub(run.Started).Seconds(), Timestamp: run.Started.Format("2006-01-02T15:04:05Z")}
	for _, r := range run.Results {
		c := junitCase{Class: "rules." + string(r.Kind), Name: r.Rule, Time: r.DurationMS / 1000}
		detail := detailText(r)
		switch {
		case r.Status == rules.StatusError:
			c.Error = &junitProblem{Message: r.Message, Type: "error", Body: detail}
			suite.Errors++
		case r.Status == rules.StatusFail && r.Severity == rules.SeverityWarn:
			c.SystemOut = "warn: " + r.Message + "\n" + detail
		case r.Status == rules.StatusFail:
			c.Failure = &junitProblem{Message: r.Message, Type: string(r.Kind), Body: detail}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.Tests = len(suite.Cases)
	doc := junitSuites{Name: "trueup check", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func detailText(r rules.Result) string {
	var b strings.Builder
	if len(r.FailingPartitions) > 0 {
		fmt.Fprintf(&b, "failing partitions (%d): %s\n", len(r.FailingPartitions), abbreviate(r.FailingPartitions, 50))
	}
	for _, row := range r.Sample {
		b.WriteString(sampleLine(row) + "\n")
	}
	return b.String()
}
