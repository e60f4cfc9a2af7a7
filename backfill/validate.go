package backfill

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"trueup/fault"
	"trueup/ledger"
	"trueup/reconcile"
	"trueup/rules"
	tsql "trueup/sql"
	"trueup/sqlfile"
	"trueup/views"
)

// Validation is the evidence a run ends with: the chosen rules run on the new versions, and each
// new version reconciled with the live one and judged against the backfill's expectations.
// The swap gate and the change notice read it.
type Validation struct {
	Passed  bool         `json:"passed"`
	Sampled bool         `json:"sampled,omitempty"`
	Rules   []RuleCheck  `json:"rules"`
	Tables  []TableCheck `json:"tables"`
	Errors  []string     `json:"errors,omitempty"`
}

// JSON is the validation as the ledger keeps it.
func (v *Validation) JSON() json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// RuleCheck is one rule's result on the new versions.
type RuleCheck struct {
	Rule              string   `json:"rule"`
	Table             string   `json:"table"`
	Severity          string   `json:"severity"`
	Status            string   `json:"status"`
	Violations        int64    `json:"violations"`
	FailingPartitions []string `json:"failing_partitions"`
	Message           string   `json:"message,omitempty"`
}

// TableCheck is one new version reconciled with the live version.
type TableCheck struct {
	Table           string             `json:"table"`
	Live            string             `json:"live"`
	New             string             `json:"new"`
	DiffID          int64              `json:"diff_id"`
	ExpectationsMet bool               `json:"expectations_met"`
	Expect          string             `json:"expect"`
	Rows            int64              `json:"rows"`
	Checksum        string             `json:"checksum"`
	Changed         []PartitionSummary `json:"changed"`
}

// PartitionSummary is one changed partition, as the plan, the notice and the pages show it.
type PartitionSummary struct {
	Partition string   `json:"partition"`
	OldCount  int64    `json:"old_count"`
	NewCount  int64    `json:"new_count"`
	PctChange *float64 `json:"pct_change"`
	Verdict   string   `json:"verdict"`
	// Measure is the table's main summed column (the first the expectations name) and its totals.
	Measure  string      `json:"measure,omitempty"`
	OldTotal tsql.Number `json:"old_total,omitempty"`
	NewTotal tsql.Number `json:"new_total,omitempty"`
}

// Validator runs the rules a backfill names on relations other than the live ones.
type Validator struct {
	Rules  *rules.Set
	Runner *rules.Runner
	Diffs  DiffStore
}

// DiffStore keeps reconcile results so pages and notices can show them later.
type DiffStore interface {
	Save(ctx context.Context, r *reconcile.Result, label, actor string) (int64, error)
}

// CheckValidate reports, as path:line problems (invalid), every validate: name that is
// neither a rule nor a tag of rs (nil: the project has no rules). A run resolves the names only
// once every partition is built; loading checks them first, so a typo costs no build.
func (s *Set) CheckValidate(rs *rules.Set) error {
	var problems sqlfile.Problems
	for _, b := range s.All() {
		for _, name := range b.Validate {
			if msg := unknownCheck(rs, name); msg != "" {
				problems = append(problems, sqlfile.Problem{Path: b.Path, Line: b.line("validate"), Msg: msg})
			}
		}
	}
	if err := problems.Err(); err != nil {
		return fault.Mark(fault.Invalid, err)
	}
	return nil
}

// unknownCheck says why a validate: name names no rule, or "" when it names a rule or a tag
// (as check resolves it at the end of a run).
func unknownCheck(rs *rules.Set, name string) string {
	if rs == nil {
		return fmt.Sprintf("validate: %s: the project has no rules (add rules/ or remove validate:)", name)
	}
	if _, err := rs.Get(name); err == nil {
		return ""
	}
	if tagged, err := rs.Select(nil, []string{name}); err == nil && len(tagged) > 0 {
		return ""
	}
	return fmt.Sprintf("validate: %s is neither a rule nor a tag", name)
}

// validate checks the built versions and records the outcome on the run and the versions.
func (r *Runner) validate(ctx context.Context, run *Run, opt ExecOptions) (*Run, error) {
	sampled := opt.Limit > 0
	if err := r.setRun(ctx, run.ID, RunValidating, "", nil); err != nil {
		return nil, err
	}
	v := r.check(ctx, run, sampled)
	if by, cancel := opt.cancelledNow(); cancel {
		// Cancelled while it validated: it ends cancelled, with the evidence it gathered.
		return r.stop(ctx, run, v, by, "cancelled while it validated")
	}
	state, vstate := RunValidated, views.StateValidated
	if !v.Passed {
		state, vstate = RunValidationFailed, views.StateValidationFailed
	}
	if sampled {
		state = RunSampled
	}
	// The versions first, the run's end last: whoever sees the run validated (the backfill's
	// page, polling) sees its versions validated too, and offers Run again and the swap.
	if !sampled {
		if err := r.setVersions(ctx, run, vstate, v); err != nil {
			return nil, err
		}
	}
	if err := r.setRun(ctx, run.ID, state, "", v); err != nil {
		return nil, err
	}
	outcome := ledger.OutcomeOK
	if !v.Passed {
		outcome = ledger.OutcomeFailed
	}
	r.audit(ctx, run, "backfill.validate", outcome, state)
	done, err := r.Store.GetRun(ctx, run.ID)
	if err == nil && r.listener != nil {
		r.listener.RunChanged(ctx, done)
	}
	return done, err
}

func (r *Runner) check(ctx context.Context, run *Run, sampled bool) *Validation {
	v := &Validation{Passed: true, Sampled: sampled, Rules: []RuleCheck{}, Tables: []TableCheck{}}
	fail := func(format string, args ...any) {
		v.Passed = false
		v.Errors = append(v.Errors, fmt.Sprintf(format, args...))
	}
	e := r.Planner.Engine
	built := map[string]string{}
	for _, t := range run.Tables {
		built[t.Table] = views.Physical(t.Table, t.Version)
	}
	parts, err := r.Store.Partitions(ctx, run.ID)
	if err != nil {
		fail("%v", err)
		return v
	}
	for _, t := range run.Tables {
		b, err := r.Planner.Set.Get(t.Backfill)
		if err != nil {
			fail("%v", err)
			continue
		}
		tc, err := r.reconcileTable(ctx, run, t, b, built[t.Table], parts, sampled)
		if err != nil {
			fail("reconcile %s: %v", t.Table, err)
			continue
		}
		if !tc.ExpectationsMet {
			v.Passed = false
		}
		v.Tables = append(v.Tables, *tc)
	}
	if r.Validator.Rules == nil {
		return v
	}
	up, err := r.Planner.Set.Get(run.Backfill)
	if err != nil {
		fail("%v", err)
		return v
	}
	current, err := tsql.CurrentQualifiers(ctx, e)
	if err != nil {
		fail("%v", err)
		return v
	}
	var chosen []*rules.Rule
	choose := func(rule *rules.Rule) { chosen = append(chosen, rule.On(e.Dialect(), built, current)) }
	for _, name := range up.Validate {
		if rule, err := r.Validator.Rules.Get(name); err == nil {
			choose(rule)
			continue
		}
		tagged, err := r.Validator.Rules.Select(nil, []string{name})
		if err != nil || len(tagged) == 0 {
			fail("validate: %s is neither a rule nor a tag", name)
			continue
		}
		for _, rule := range tagged {
			choose(rule)
		}
	}
	if len(chosen) == 0 {
		return v
	}
	res := r.Validator.Runner.Run(ctx, chosen)
	for _, rr := range res.Results {
		v.Rules = append(v.Rules, RuleCheck{Rule: rr.Rule, Table: rr.Table, Severity: string(rr.Severity), Status: string(rr.Status),
			Violations: rr.Violations, FailingPartitions: rr.FailingPartitions, Message: rr.Message})
		if rr.Failed() && rr.Severity == rules.SeverityError {
			v.Passed = false
		}
	}
	return v
}

// reconcileTable diffs a new version with the live one, judged against its expectations.
func (r *Runner) reconcileTable(ctx context.Context, run *Run, t RunTable, b *Backfill, physical string, parts []PartitionState, sampled bool) (*TableCheck, error) {
	e := r.Planner.Engine
	live, err := e.ViewSource(ctx, t.Table)
	if err != nil {
		return nil, err
	}
	typ, err := r.partitionType(ctx, physical, b.Partition)
	if err != nil {
		return nil, err
	}
	scope, mine, err := tableWindows(parts, t.Table, b, typ)
	if err != nil {
		return nil, err
	}
	var only []tsql.Window
	for i, p := range mine {
		if sampled && p.State == PartDone {
			only = append(only, scope[i])
		}
	}
	spec, err := r.diffSpec(ctx, b, live, physical, physical, scope, only, b.Expect)
	if err != nil {
		return nil, err
	}
	// The version's recorded fingerprints, while nothing wrote to it since the build: its
	// carried partitions are confirmed by the one scan of live, not read again. And live's, as
	// the run measured it before the carry, while nothing wrote to live since: then not even that
	// scan; only the partitions that differ are read.
	fp, trusted, err := r.Versions.Fingerprints(ctx, e, r.Planner.Target, t.Table, t.Version)
	if err != nil {
		return nil, err
	}
	if trusted {
		if spec.New.Fingerprints, err = diffFingerprints(fp); err != nil {
			return nil, err
		}
	}
	basis, liveTrusted, err := r.Versions.LiveFingerprints(ctx, e, r.Planner.Target, t.Table, t.Version, live)
	if err != nil {
		return nil, err
	}
	if liveTrusted {
		if spec.Old.Fingerprints, err = diffFingerprints(basis); err != nil {
			return nil, err
		}
	}
	res, err := reconcile.Diff(ctx, spec)
	if err != nil {
		return nil, err
	}
	tc := &TableCheck{Table: t.Table, Live: live, New: physical, ExpectationsMet: res.ExpectationsMet, Expect: b.Expect}
	if r.Validator.Diffs != nil {
		label := fmt.Sprintf("backfill %s run %d: %s", run.Backfill, run.ID, t.Table)
		if tc.DiffID, err = r.Validator.Diffs.Save(ctx, res, label, run.Actor); err != nil {
			return nil, err
		}
	}
	var checksum uint64
	main := ""
	if len(res.Measures) > 0 {
		main = res.Measures[len(res.Measures)-1]
		if spec.Expect != nil {
			for _, m := range res.Measures {
				if strings.Contains(b.Expect, "sum("+m+")") {
					main = m
				}
			}
		}
	}
	for _, p := range res.Partitions {
		tc.Rows += p.NewCount
		if !p.Unchanged() {
			ps := PartitionSummary{Partition: p.Partition, OldCount: p.OldCount, NewCount: p.NewCount, PctChange: p.PctChange, Verdict: p.Verdict}
			if m, ok := p.Measures[main]; ok {
				ps.Measure, ps.OldTotal, ps.NewTotal = "sum("+main+")", m.Old, m.New
			}
			tc.Changed = append(tc.Changed, ps)
		}
	}
	if trusted && !sampled {
		// The engine's own hash, not the portable one: marked, so that it is compared only with
		// checksums of its kind (views.SameChecksum).
		tc.Checksum = views.FingerprintChecksum(fp.Checksum())
		return tc, nil
	}
	if sum, err := r.tableChecksum(ctx, physical); err == nil {
		checksum = sum
	}
	tc.Checksum = strconv.FormatUint(checksum, 10)
	return tc, nil
}

// diffFingerprints is m as a diff takes a side's fingerprints.
func diffFingerprints(m views.Marks) (*reconcile.Fingerprints, error) {
	parts, err := m.Starts()
	if err != nil {
		return nil, err
	}
	return &reconcile.Fingerprints{Column: m.Column, Grain: m.Grain, Parts: parts}, nil
}

// measures are the money-like columns of a relation (decimals and floats), totalled per
// partition in every diff; reconcile adds the ones the expectations name.
func (r *Runner) measures(ctx context.Context, rel string) ([]string, error) {
	cols, err := r.Planner.Engine.Columns(ctx, rel)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range cols {
		if c.Kind == tsql.TypeDecimal || c.Kind == tsql.TypeFloat {
			out = append(out, c.Name)
		}
	}
	return out, nil
}

// tableChecksum is the order-independent sum of the portable row hash of a whole table.
func (r *Runner) tableChecksum(ctx context.Context, table string) (uint64, error) {
	e := r.Planner.Engine
	cols, err := e.Columns(ctx, table)
	if err != nil {
		return 0, err
	}
	d := e.Dialect()
	res, err := e.Query(ctx, "SELECT "+d.HashSum(d.RowHash(cols, tsql.HashOptions{Portable: true}))+" FROM "+d.QuoteRelation(table))
	if err != nil {
		return 0, err
	}
	return tsql.AsUint64(res.Rows[0][0]), nil
}

// FailingPartitions runs one rule on the live tables now and returns the partitions it fails
// on: the scope of a backfill written `scope: from-rule: NAME`.
func (v Validator) FailingPartitions(ctx context.Context, name string) ([]string, error) {
	if v.Rules == nil {
		return nil, fmt.Errorf("no rules are loaded")
	}
	rule, err := v.Rules.Get(name)
	if err != nil {
		return nil, err
	}
	res := v.Runner.Run(ctx, []*rules.Rule{rule})
	if len(res.Results) != 1 {
		return nil, fmt.Errorf("rule %s gave no result", name)
	}
	if rr := res.Results[0]; rr.Status == rules.StatusError {
		return nil, fmt.Errorf("rule %s could not run: %s", name, rr.Message)
	}
	return res.Results[0].FailingPartitions, nil
}
