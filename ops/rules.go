package ops

import (
	"context"
	"strings"
	"time"

	"trueup/fault"
	"trueup/monitor"
	"trueup/rules"
)

// Rules is what an operator does with the data-quality rules: run a check of some of them (the
// CLI's `trueup check --rule --tag`, POST /api/v1/check), run one now (the run-now button,
// POST /api/v1/rules/{rule}/run), list them with their status, read one with its history and
// alerts, and read the recent alerts. A run whose rules fail is not an error: the run says so.
type Rules interface {
	Check(ctx context.Context, req CheckRequest) (*rules.Run, error)
	// Explain is what Check would run, compiled and fused per relation, without running it
	// (`trueup check --explain`; local only).
	Explain(ctx context.Context, req CheckRequest) (*rules.Plan, error)
	RunNow(ctx context.Context, req RuleRunRequest) (*rules.Run, error)
	List(ctx context.Context) ([]RuleInfo, error)
	Rule(ctx context.Context, req RuleRequest) (RuleDetail, error)
	// Alerts are the newest alerts of one rule, or of every rule for Rule "".
	Alerts(ctx context.Context, req AlertsRequest) ([]rules.Alert, error)
}

// CheckRequest is the body of POST /api/v1/check: the rules named (every rule when none is)
// that carry any of the tags (any tag when none is given). Actor comes from who is asking.
type CheckRequest struct {
	Rules []string `json:"rules" form:"rules"`
	Tags  []string `json:"tags" form:"tags"`
	Actor string   `json:"-" form:"-"`
}

// RuleRunRequest names the rule to run now (from the path) and who asks.
type RuleRunRequest struct {
	Rule  string
	Actor string
}

// RuleRequest names a rule; History asks for that many of its newest results (0: none).
type RuleRequest struct {
	Rule    string
	History int
}

// AlertsRequest asks for the newest Limit alerts of Rule ("" for every rule).
type AlertsRequest struct {
	Rule  string
	Limit int
}

// RuleInfo is one rule and its last result (GET /api/v1/rules).
type RuleInfo struct {
	Rule              string     `json:"rule"`
	Kind              string     `json:"kind"`
	Severity          string     `json:"severity"`
	Table             string     `json:"table,omitempty"`
	Description       string     `json:"description,omitempty"`
	Owner             string     `json:"owner,omitempty"`
	Tags              []string   `json:"tags"`
	Schedule          string     `json:"schedule,omitempty"`
	NextRun           *time.Time `json:"next_run,omitempty"`
	Status            string     `json:"status"` // pass, fail, error, running, never run
	LastRunID         int64      `json:"last_run_id,omitempty"`
	LastAt            *time.Time `json:"last_at,omitempty"`
	Violations        int64      `json:"violations"`
	FailingPartitions []string   `json:"failing_partitions"`
	Message           string     `json:"message,omitempty"`
}

// RuleDetail is one rule with its history (GET /api/v1/rules/{rule}).
type RuleDetail struct {
	RuleInfo
	Path   string `json:"path"`
	Checks string `json:"checks"`
	// SQL is what the rule compiles to when it runs on its own, as `trueup check --explain`
	// prints it, whether or not it has run (a run's own SQL, fused with the rules it ran
	// beside, is its result's); SQLError says why it cannot run.
	SQL      string         `json:"sql"`
	SQLError string         `json:"sql_error,omitempty"`
	Latest   *rules.Result  `json:"latest"`
	History  []rules.Result `json:"history"`
	Alerts   []rules.Alert  `json:"alerts"`
}

// detailAlerts is how many alerts a rule's detail carries.
const detailAlerts = 20

// RuleMonitor is what the rule operations stand on (monitor.Monitor): the rules it knows, their
// runs, history and alerts.
type RuleMonitor interface {
	Statuses() []monitor.Status
	Rule(name string) (*rules.Rule, error)
	RunNow(ctx context.Context, name, actor string) (*rules.Run, error)
	RunSelected(ctx context.Context, names, tags []string, actor string) (*rules.Run, error)
	PlanSelected(names, tags []string) (*rules.Plan, error)
	History(ctx context.Context, rule string, limit int) ([]rules.Result, error)
	Alerts(ctx context.Context, rule string, limit int) ([]rules.Alert, error)
	// Latest is the last recorded result of every rule and of every built-in check (the
	// stale-writer check), as trueup check reported each: what the dashboard's failing rules are.
	Latest(ctx context.Context) ([]rules.Result, error)
	// Plan is what a rule compiles to when it runs on its own (`trueup check --explain`).
	Plan(name string) (*rules.Plan, error)
}

// NewRules is Rules over a monitor: a server's, which also runs the scheduled rules, or the
// one `trueup check` makes of the rules it loads. A nil monitor has no rules.
func NewRules(m RuleMonitor) Rules { return &localRules{m: m} }

type localRules struct{ m RuleMonitor }

var errNoRules = fault.New(fault.NotFound, "No rules are loaded here.")

func (l *localRules) Check(ctx context.Context, req CheckRequest) (*rules.Run, error) {
	if l.m == nil {
		return nil, errNoRules
	}
	return l.m.RunSelected(ctx, req.Rules, req.Tags, req.Actor)
}

func (l *localRules) Explain(_ context.Context, req CheckRequest) (*rules.Plan, error) {
	if l.m == nil {
		return nil, errNoRules
	}
	return l.m.PlanSelected(req.Rules, req.Tags)
}

func (l *localRules) RunNow(ctx context.Context, req RuleRunRequest) (*rules.Run, error) {
	if _, err := l.status(req.Rule); err != nil {
		return nil, err
	}
	return l.m.RunNow(ctx, req.Rule, req.Actor)
}

func (l *localRules) List(context.Context) ([]RuleInfo, error) {
	out := []RuleInfo{}
	if l.m == nil {
		return out, nil
	}
	for _, st := range l.m.Statuses() {
		out = append(out, ruleInfo(st))
	}
	return out, nil
}

// status is one rule's status; not found when the monitor does not know it.
func (l *localRules) status(name string) (monitor.Status, error) {
	if l.m != nil {
		if _, err := l.m.Rule(name); err == nil {
			for _, st := range l.m.Statuses() {
				if st.Rule.Name == name {
					return st, nil
				}
			}
		}
	}
	return monitor.Status{}, rules.NotFound(name)
}

func (l *localRules) Rule(ctx context.Context, req RuleRequest) (RuleDetail, error) {
	st, err := l.status(req.Rule)
	if err != nil {
		return RuleDetail{}, err
	}
	d := RuleDetail{RuleInfo: ruleInfo(st), Path: st.Rule.Path, Checks: st.Rule.Explain(), History: []rules.Result{}}
	if req.History > 0 {
		if d.History, err = l.m.History(ctx, st.Rule.Name, req.History); err != nil {
			return RuleDetail{}, err
		}
	}
	if d.Alerts, err = l.m.Alerts(ctx, st.Rule.Name, detailAlerts); err != nil {
		return RuleDetail{}, err
	}
	if d.SQL, d.SQLError, err = l.compiledSQL(st.Rule.Name); err != nil {
		return RuleDetail{}, err
	}
	if d.History == nil {
		d.History = []rules.Result{}
	}
	if d.Alerts == nil {
		d.Alerts = []rules.Alert{}
	}
	if len(d.History) > 0 {
		d.Latest = &d.History[0]
	}
	return d, nil
}

// compiledSQL is the SQL a rule runs when it runs on its own, its statements in the order
// `trueup check --explain` prints them, and why it cannot run ("" when it can).
func (l *localRules) compiledSQL(name string) (sql, problem string, err error) {
	plan, err := l.m.Plan(name)
	if err != nil {
		return "", "", err
	}
	texts := make([]string, len(plan.Queries))
	for i, q := range plan.Queries {
		texts[i] = q.SQL
	}
	for _, r := range plan.Rules {
		if r.Rule == name {
			problem = r.Error
		}
	}
	return strings.Join(texts, ";\n\n"), problem, nil
}

func (l *localRules) Alerts(ctx context.Context, req AlertsRequest) ([]rules.Alert, error) {
	if l.m == nil {
		return []rules.Alert{}, nil
	}
	if req.Rule != "" {
		if _, err := l.status(req.Rule); err != nil {
			return nil, err
		}
	}
	a, err := l.m.Alerts(ctx, req.Rule, req.Limit)
	if a == nil && err == nil {
		a = []rules.Alert{}
	}
	return a, err
}

// RuleStatus is a rule's status as shown: its last result's, "running" while it runs, or
// "never run".
func RuleStatus(st monitor.Status) string {
	switch {
	case st.Running:
		return "running"
	case st.Last == nil:
		return "never run"
	}
	return string(st.Last.Status)
}

func ruleInfo(st monitor.Status) RuleInfo {
	r := st.Rule
	out := RuleInfo{
		Rule: r.Name, Kind: string(r.Kind), Severity: string(r.Severity), Table: r.Table,
		Description: r.Description, Owner: r.Owner, Tags: append([]string{}, r.Tags...),
		Status: RuleStatus(st), FailingPartitions: []string{},
	}
	if r.Schedule != nil {
		out.Schedule = r.Schedule.String()
		if !st.Next.IsZero() {
			next := st.Next
			out.NextRun = &next
		}
	}
	if last := st.Last; last != nil {
		at := last.At
		out.LastRunID, out.LastAt, out.Violations, out.Message = last.RunID, &at, last.Violations, last.Message
		out.FailingPartitions = append(out.FailingPartitions, last.FailingPartitions...)
	}
	return out
}
