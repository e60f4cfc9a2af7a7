package rules

import (
	"context"
	"sort"
	"strings"
	"time"
)

// Runner evaluates rules against their targets.
type Runner struct {
	targets      Targets
	now          func() time.Time
	sample       int
	parallel     int
	schemas      SchemaStore
	acceptSchema bool
}

// Option configures a Runner.
type Option func(*Runner)

// WithClock replaces the wall clock (freshness and relative ranges read it), for tests.
func WithClock(now func() time.Time) Option { return func(r *Runner) { r.now = now } }

// WithSampleSize bounds the sample rows of a failing result (default 10).
func WithSampleSize(n int) Option { return func(r *Runner) { r.sample = n } }

// WithParallel sets how many queries run at once (default 4).
func WithParallel(n int) Option { return func(r *Runner) { r.parallel = n } }

// WithSchemaStore gives schema rules their snapshots.
func WithSchemaStore(s SchemaStore) Option { return func(r *Runner) { r.schemas = s } }

// WithAcceptSchema makes schema rules record the current columns as their new snapshot.
func WithAcceptSchema(accept bool) Option { return func(r *Runner) { r.acceptSchema = accept } }

// NewRunner returns a runner over targets.
func NewRunner(targets Targets, opts ...Option) *Runner {
	r := &Runner{targets: targets, now: time.Now, sample: 10, parallel: 4}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Plan is what a run would issue: the fused queries and which rules read each.
type Plan struct {
	Queries []PlannedQuery
	Rules   []PlannedRule
}

// PlannedQuery is one statement of a plan.
type PlannedQuery struct {
	Target string // the engine's target URL
	SQL    string
	Rules  []string
}

// PlannedRule says which queries a rule reads and how it judges their rows.
type PlannedRule struct {
	Rule    string
	Kind    Kind
	Queries []int // indexes into Plan.Queries
	Judge   string
	Error   string // the rule cannot run
}

// compileAll compiles rules and plans their needs into queries.
func (rn *Runner) compileAll(rules []*Rule) ([]*check, *planner) {
	checks := make([]*check, len(rules))
	var needs []*need
	owner := map[*need]string{}
	for i, r := range rules {
		checks[i] = compile(r, rn.targets)
		if checks[i].err != nil {
			continue
		}
		for _, n := range checks[i].needs {
			needs = append(needs, n)
			owner[n] = r.Name
		}
	}
	p := &planner{}
	p.plan(needs, owner)
	return checks, p
}

// Plan compiles rules and fuses their checks without running anything.
func (rn *Runner) Plan(rules []*Rule) *Plan {
	checks, p := rn.compileAll(rules)
	out := &Plan{}
	index := map[*query]int{}
	for i, q := range p.queries {
		index[q] = i
		out.Queries = append(out.Queries, PlannedQuery{Target: q.engine.Info().Target, SQL: q.render(), Rules: q.ruleNames()})
	}
	for _, c := range checks {
		pr := PlannedRule{Rule: c.rule.Name, Kind: c.rule.Kind, Judge: c.rule.Explain()}
		if c.err != nil {
			pr.Error = c.err.Error()
		}
		seen := map[int]bool{}
		for _, n := range c.needs {
			if i, ok := index[n.served]; ok && !seen[i] {
				seen[i] = true
				pr.Queries = append(pr.Queries, i)
			}
		}
		out.Rules = append(out.Rules, pr)
	}
	return out
}

// followRounds bounds the rounds of follow-up queries after the fused ones.
const followRounds = 3

// Run evaluates rules: fused first-phase queries, then per-rule follow-ups (samples, exact
// counts) for the rules that need them. A fused query that fails is retried rule by rule, so
// one broken rule does not take its neighbours down. Run records no state; see Store.
func (rn *Runner) Run(ctx context.Context, rules []*Rule) *Run {
	run := &Run{Started: rn.now().UTC(), Target: rn.targets.Name("")}
	checks, p := rn.compileAll(rules)
	execute(ctx, p.queries, rn.parallel)
	run.log(p.queries)
	rn.retryAlone(ctx, checks, run)
	env := &judgeEnv{now: rn.now().UTC(), sample: rn.sample, schemas: rn.schemas, acceptSchema: rn.acceptSchema}
	verdicts := make([]verdict, len(checks))
	for i, c := range checks {
		verdicts[i] = rn.judge(ctx, c, env)
	}
	// Follow-ups run together, a round at a time: a finish that finds it needs more (a fetch
	// that came back truncated) asks for it in the next round, so nothing is asked in case.
	for round := 0; round < followRounds; round++ {
		var later []*query
		var waiting []int
		for i, c := range checks {
			fresh := c.later[c.issued:]
			if len(fresh) == 0 || verdicts[i].err != nil {
				continue
			}
			c.issued = len(c.later)
			waiting = append(waiting, i)
		fresh:
			for _, n := range fresh {
				// the same follow-up of two rules (two rules on one key) runs once
				for _, q := range later {
					if q.sql == n.sql && q.limit == n.limit && engineKey(q.engine) == engineKey(n.engine) {
						q.rules[c.rule.Name] = true
						q.needs = append(q.needs, n)
						n.served = q
						continue fresh
					}
				}
				q := &query{engine: n.engine, mode: rawNeed, sql: n.sql, limit: n.limit, rules: map[string]bool{c.rule.Name: true}}
				q.needs = []*need{n}
				n.served = q
				later = append(later, q)
			}
		}
		if len(later) == 0 {
			break
		}
		execute(ctx, later, rn.parallel)
		run.log(later)
		for _, i := range waiting {
			c, v := checks[i], &verdicts[i]
			if err := needErr(c.later); err != nil {
				v.err = err
			} else if finish := c.finish; finish != nil {
				c.finish = nil
				finish(v)
			}
		}
	}
	for i, c := range checks {
		run.Results = append(run.Results, c.result(verdicts[i], rn.now().UTC()))
	}
	run.Finished = rn.now().UTC()
	return run
}

// retryAlone re-runs, each on its own, the rules whose fused queries failed.
func (rn *Runner) retryAlone(ctx context.Context, checks []*check, run *Run) {
	for i, c := range checks {
		shared := false
		for _, n := range c.needs {
			if n.err != nil && len(n.served.rules) > 1 {
				shared = true
			}
		}
		if !shared {
			continue
		}
		alone, p := rn.compileAll([]*Rule{c.rule})
		execute(ctx, p.queries, rn.parallel)
		run.log(p.queries)
		checks[i] = alone[0]
	}
}

// log counts the queries a run issued and keeps what each cost.
func (run *Run) log(qs []*query) {
	run.Queries += len(qs)
	for _, q := range qs {
		st := Statement{Target: q.engine.Info().Target, SQL: q.text, Seconds: q.secs, Rows: len(q.rows)}
		for r := range q.rules {
			st.Rules = append(st.Rules, r)
		}
		sort.Strings(st.Rules)
		if q.err != nil {
			st.Err = engineMessage(q.err)
		}
		run.Statements = append(run.Statements, st)
	}
}

func (rn *Runner) judge(ctx context.Context, c *check, env *judgeEnv) verdict {
	if c.err != nil {
		return verdict{err: c.err}
	}
	if err := needErr(c.needs); err != nil {
		return verdict{err: err}
	}
	return c.judge(ctx, env)
}

func (c *check) result(v verdict, at time.Time) Result {
	r := c.rule
	if v.err == nil {
		c.thresholds(&v)
	}
	res := Result{
		Rule: r.Name, Kind: r.Kind, Severity: r.Severity, Target: c.target, Table: r.Table,
		Violations: v.violations, FailingPartitions: v.failing, Sample: v.sample, Message: v.message, At: at,
	}
	if v.severity != "" {
		res.Severity = v.severity
	}
	switch {
	case v.err != nil:
		res.Status, res.Message = StatusError, engineMessage(v.err)
	case v.failed:
		res.Status = StatusFail
	default:
		res.Status = StatusPass
	}
	if res.FailingPartitions == nil {
		res.FailingPartitions = []string{}
	}
	if res.Sample == nil {
		res.Sample = []Row{}
	}
	var texts []string
	seen := map[*query]bool{}
	for _, n := range append(append([]*need{}, c.needs...), c.later...) {
		if q := n.served; q != nil && !seen[q] {
			seen[q] = true
			res.DurationMS += q.secs * 1000
			if q.text == "" {
				q.text = q.render()
			}
			texts = append(texts, q.text)
		}
	}
	res.SQL = strings.Join(texts, ";\n\n")
	return res
}
