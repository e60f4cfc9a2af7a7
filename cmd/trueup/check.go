package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	flow "trueup/app"
	"trueup/monitor"
	"trueup/notices"
	"trueup/ops"
	"trueup/reconcile"
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

func runCheck(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	var names, tags listFlag
	fs.Var(&names, "rule", "run only this rule (repeatable, or comma-separated)")
	fs.Var(&tags, "tag", "run only rules with this tag (repeatable, or comma-separated)")
	format := fs.String("format", "text", "output: text, json or junit")
	explain := fs.Bool("explain", false, "print the SQL each rule compiles to, fused per relation, without running it")
	accept := fs.Bool("accept-schema", false, "record the current columns as the snapshot of the schema rules run")
	rulesDir := fs.String("rules", "", "the rules folder (default: rules/ beside the config); with --target URL it needs no trueup.yaml")
	state := fs.String("state", "", "without a trueup.yaml: keep the run in this state file (default: printed, not kept)")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	switch *format {
	case "text", "json", "junit":
	default:
		return usagef("check: --format %q: want text, json or junit", *format)
	}
	// --target makes the rules without a target: of their own run on another target; a server
	// runs its rules on the targets it was configured with.
	if err := e.localOnly("check", map[string]bool{"explain": *explain, "accept-schema": *accept, "target": e.globals.target != "",
		"rules": *rulesDir != "", "state": *state != ""}); err != nil {
		return err
	}
	r, done, err := ruleOps(ctx, e, localCheck{acceptSchema: *accept, rules: *rulesDir, state: *state})
	if err != nil {
		return err
	}
	defer done.close()
	req := ops.CheckRequest{Rules: names, Tags: tags, Actor: cliActor()}
	if *explain {
		plan, err := r.Explain(ctx, req)
		if err != nil {
			return err
		}
		return writeExplain(e.stdout, *format, plan)
	}
	run, err := r.Check(ctx, req)
	if err != nil {
		return err // an unknown rule, or none matches: not found
	}
	done.deliver(ctx)
	return reportRun(e, *format, run, done.clusters(ctx, e.globals.target))
}

// ruleOps is the rule operations a command runs: through the server with --server, else over
// a monitor of the project's rules, loaded and validated afresh (every problem on stderr), whose
// runs are recorded as the CLI's. With --target other than the default, the rules without a
// target of their own run there, and the run is kept in the history named without credentials
// while the rules' monitored state and alerts stay the configured targets'. acceptSchema
// records the columns the schema rules find as their snapshot. The monitor hands its alerts to
// the notices outbox as serve's does (app.Project.Monitor); done makes one delivery pass.
// Without a project (openLocal) the rules come from local.rules and run on --target, a URL.
func ruleOps(ctx context.Context, e *env, local localCheck) (ops.Rules, *ruleDone, error) {
	if rc, err := e.remote(); rc != nil || err != nil {
		if err != nil {
			return nil, nil, err
		}
		return rc.Rules(), &ruleDone{}, nil
	}
	if e.globals.withoutProject() && local.rules == "" {
		return nil, nil, usagef("check: there is no trueup.yaml here: name the rules and the target, --rules DIR --target URL (or run trueup init to make a project)")
	}
	a, err := openLocal(ctx, e, "check", local.state, "name the target by URL: --rules DIR --target URL", e.globals.target)
	if err != nil {
		return nil, nil, err
	}
	targets := projectTargets(e, a)
	if t := e.globals.target; t != "" && t != a.Config.DefaultTarget {
		targets.Chosen = tsql.Redact(t)
	}
	dir := local.rules
	if dir == "" {
		dir = a.Config.ProjectDir("rules")
	}
	set, err := loadRules(ctx, e, dir, targets)
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	ob := a.Outbox(log)
	store := rules.NewStore(a.Ledger)
	runner := rules.NewRunner(targets, rules.WithSchemaStore(store), rules.WithAcceptSchema(local.acceptSchema))
	// the monitor says only what went wrong: check reports its run on stdout
	quiet := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	mon := a.Monitor(set.Rules, runner, targets.Default, store, ob, quiet, monitor.WithTrigger(rules.TriggerCLI))
	return ops.NewRules(mon), &ruleDone{app: a, ob: ob, log: log}, nil
}

// localCheck is what a local check takes besides the global flags: --accept-schema, --rules
// and --state.
type localCheck struct {
	acceptSchema bool
	rules, state string
}

// ruleDone is what a local check closes, and delivers, when its run is over.
type ruleDone struct {
	app *app
	ob  *notices.Outbox
	log *slog.Logger
}

func (d *ruleDone) close() {
	if d.app != nil {
		d.app.Close()
	}
}

// checkDeliveryWait bounds check's delivery pass; what is not sent by then waits in the outbox.
const checkDeliveryWait = 15 * time.Second

// deliver makes one delivery pass of the notices outbox after a local check, so that
// subscribers hear of its alerts (handed to the outbox by the run, with any recorded earlier
// and not handed on yet) before check returns; a server's outbox does that on its own. What
// cannot be delivered now is not lost: an alert not enqueued waits in rule_alerts, a delivery
// not made waits in the outbox, for the next check or the server. Failing to deliver does not
// change check's exit status, which is about the rules.
func (d *ruleDone) deliver(ctx context.Context) {
	if d.ob == nil {
		return
	}
	// the pass sends whatever is due in the outbox, also what an earlier check could not; a
	// receiver that hangs does not hold check up for longer than checkDeliveryWait
	dctx, cancel := context.WithTimeout(ctx, checkDeliveryWait)
	defer cancel()
	if _, err := d.ob.Deliver(dctx); err != nil {
		d.log.Error("outbox delivery pass failed; the next check or the server retries it", "err", err)
	}
}

// reportRun prints a run and fails when an error-severity rule failed: the end of `trueup
// check`, locally and through a server.
// A cluster target's topology (clusters) follows the results, in text and JSON.
func reportRun(e *env, format string, run *rules.Run, clusters []clusterTopology) error {
	var err error
	switch {
	case format == "json" && len(clusters) > 0:
		err = writeJSON(e.stdout, struct {
			*rules.Run
			Clusters []clusterTopology `json:"clusters"`
		}{run, clusters})
	default:
		err = writeRun(e.stdout, format, run)
		if format == "text" {
			writeClusters(e.stdout, clusters)
		}
	}
	if err != nil {
		return err
	}
	if run.Failed() {
		n := 0
		for _, r := range run.Results {
			if r.FailsCheck() {
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
	if !dirExists(dir) {
		return nil, usagef("%s: no rules folder at %s (rules live in rules/<table>/<rule>.sql beside the config)", cmd, dir)
	}
	set, err := flow.LoadRules(ctx, dir, targets)
	if err != nil {
		return nil, ruleProblems(e, cmd, err)
	}
	return set, nil
}

// ruleProblems is a rule set's load error as a command answers it: each problem on stderr, one
// a line, then their count.
func ruleProblems(e *env, cmd string, err error) error {
	var le *rules.LoadError
	if errors.As(err, &le) {
		for _, p := range le.Problems {
			fmt.Fprintln(e.stderr, p)
		}
		return usagef("%s: %d %s in the rule set, nothing was run", cmd, len(le.Problems), pluralWord(len(le.Problems), "problem", "problems"))
	}
	return usagef("%s: %v", cmd, err)
}

// projectTargets are the engines rules run on; --target picks the default one.
func projectTargets(e *env, a *app) rules.TargetMap {
	return a.RuleTargets(e.globals.target)
}

// openMonitor loads the project's rules for serve, refusing a broken rule set as check does,
// and returns the monitor that runs the scheduled ones, handing its alerts to ob. A project
// without a rules folder serves with no rules.
func openMonitor(ctx context.Context, e *env, a *app, ob *notices.Outbox, log *slog.Logger) (*monitor.Monitor, error) {
	mon, err := a.ServedMonitor(ctx, projectTargets(e, a), ob, log)
	if err != nil {
		return nil, ruleProblems(e, "serve", err)
	}
	return mon, nil
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
	return runBeside(ctx, mon.Run, serve)
}

func cliActor() string {
	if u := os.Getenv("USER"); u != "" {
		return "cli:" + u
	}
	return "cli"
}

// cliSubject is the subject of a write to table from the CLI: on --target, as the CLI's user.
func (e *env) cliSubject(table string) ops.Subject {
	return ops.Subject{Target: e.globals.target, Table: table, Actor: cliActor()}
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
		if r.Warns() {
			label = "WARN"
		}
		fmt.Fprintf(w, "%-5s %-32s %-15s", label, r.Rule, r.Kind)
		// a pass with violations is one within its warn_if/error_if: it says so
		if r.Status != rules.StatusPass || r.Violations > 0 {
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
	// A warn-severity rule that fails is a warning, as its WARN line and JUnit say, not a failure.
	pass, fail, errs := run.Counts()
	warned := run.Warned()
	fmt.Fprintf(w, "\nrun %d: %d %s, %d passed, %d failed, %d warned, %d could not run; %d %s in %.2fs\n",
		run.ID, len(run.Results), pluralWord(len(run.Results), "rule", "rules"), pass, fail-warned, warned, errs,
		run.Queries, pluralWord(run.Queries, "query", "queries"), run.Finished.Sub(run.Started).Seconds())
	return nil
}

func abbreviate(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(", … (%d more)", len(items)-n)
}

// sampleLine is a failing rule's sample row as column=value pairs; text that would read as
// something else (NULL, "", spaces at an end, characters that do not show) is quoted, as the
// diff's samples are.
func sampleLine(row rules.Row) string {
	parts := make([]string, len(row))
	for i, f := range row {
		v := reconcile.ValueText(f.Value)
		if _, text := f.Value.(string); f.Value != nil && !text {
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
	fmt.Fprintf(w, "-- %d %s in %d %s (follow-up queries for samples and exact counts run only for failing rules)\n\n",
		len(plan.Rules), pluralWord(len(plan.Rules), "rule", "rules"), len(plan.Queries), pluralWord(len(plan.Queries), "query", "queries"))
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
	Time     junitSeconds `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string       `xml:"name,attr"`
	Tests     int          `xml:"tests,attr"`
	Failures  int          `xml:"failures,attr"`
	Errors    int          `xml:"errors,attr"`
	Time      junitSeconds `xml:"time,attr"`
	Timestamp string       `xml:"timestamp,attr"`
	Cases     []junitCase  `xml:"testcase"`
}

type junitCase struct {
	Class     string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      junitSeconds  `xml:"time,attr"`
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
	suite := junitSuite{Name: "trueup rules", Time: junitSeconds(run.Finished.Sub(run.Started).Seconds()), Timestamp: run.Started.Format("2006-01-02T15:04:05Z")}
	for _, r := range run.Results {
		c := junitCase{Class: "rules." + string(r.Kind), Name: r.Rule, Time: junitSeconds(r.DurationMS / 1000)}
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

// junitSeconds is a JUnit time attribute: seconds to the millisecond, as test reports print
// them (not 0.018396456000000002).
type junitSeconds float64

func (s junitSeconds) MarshalXMLAttr(name xml.Name) (xml.Attr, error) {
	return xml.Attr{Name: name, Value: strconv.FormatFloat(float64(s), 'f', 3, 64)}, nil
}
